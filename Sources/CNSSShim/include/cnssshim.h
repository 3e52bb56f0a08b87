// The C side of Postern's NSS use that Swift cannot reach directly (docs/TLS-LIBRARY-CHOICE.md):
// NSS initialised once per process without a database, a bottom NSPR I/O layer whose recv and
// send read and write two memory buffers (so TLS runs over Postern's own async sockets, as the
// OpenSSL memory-BIO streams do), and plain functions for NSS's "experimental" calls, which are
// macros that look the function up at run time.
#ifndef POSTERN_CNSSSHIM_H
#define POSTERN_CNSSSHIM_H
#include <stddef.h>
#include <stdint.h>
#include <prio.h>
#include <seccomon.h>

/// Initialises NSS once per process (no certificate or module database: Postern verifies
/// certificates itself) with the domestic policy. NULL on success, else a message; later calls
/// return the first result. Safe from any thread.
const char *postern_nss_initialize(void);

/// Bytes the memory layer holds for NSS to read; postern_nss_feed refuses more. NSS asks for
/// bytes only when this buffer is empty, so callers feed one socket read at a time.
#define POSTERN_NSS_INBOUND_CAPACITY 65536
/// Bytes NSS may queue for the peer before the caller takes them; beyond it the layer says
/// "would block" and NSS keeps the rest itself.
#define POSTERN_NSS_OUTBOUND_CAPACITY (1024 * 1024)

/// A TLS client socket on a fresh memory layer: NSS's SSL layer on top, configured as a client,
/// nothing else set. NULL when NSS is not initialised or memory is short. Closing it with
/// PR_Close frees both layers. One owner; NSS calls on it must not run concurrently.
PRFileDesc *postern_nss_memory_client_socket(void);

/// Appends bytes from the peer; 0 (and nothing appended) when they would exceed the inbound
/// capacity or `socket` has no memory layer.
int postern_nss_feed(PRFileDesc *socket, const uint8_t *bytes, size_t count);
/// The peer closed its side: once the buffered bytes are read, NSS reads end of stream.
void postern_nss_feed_end(PRFileDesc *socket);
/// Bytes fed and not yet read by NSS.
size_t postern_nss_inbound_count(PRFileDesc *socket);
/// Bytes NSS wrote for the peer and not yet taken.
size_t postern_nss_outbound_count(PRFileDesc *socket);
/// Moves up to `capacity` of them into `out`; returns how many.
size_t postern_nss_take_outbound(PRFileDesc *socket, uint8_t *out, size_t capacity);

/// SSL_CipherSuiteOrderSet (experimental API).
SECStatus postern_nss_set_cipher_order(PRFileDesc *socket, const PRUint16 *suites, unsigned int count);
/// SSL_EnableTls13GreaseEch (experimental API).
SECStatus postern_nss_enable_ech_grease(PRFileDesc *socket, PRBool enabled);
/// SSL_SetResumptionTokenCallback (experimental API): `callback` receives each session ticket the
/// server issues on `socket` as an opaque token (copied before it returns), and NSS then keeps no
/// client session of its own for the socket.
SECStatus postern_nss_set_resumption_token_callback(PRFileDesc *socket,
                                                    SECStatus (*callback)(PRFileDesc *, const PRUint8 *, unsigned int, void *),
                                                    void *context);
/// SSL_SetResumptionToken (experimental API), before the handshake: the hello offers the token's
/// session. SECFailure when NSS cannot use it (expired, another version, undecodable).
SECStatus postern_nss_set_resumption_token(PRFileDesc *socket, const uint8_t *token, unsigned int count);
/// When a token stops being usable, in microseconds since 1970 (NSS's PRTime), from
/// SSL_GetResumptionTokenInfo; 0 when NSS cannot read the token.
int64_t postern_nss_resumption_token_expiry(const uint8_t *token, unsigned int count);
/// The peer's certificates as NSS received them, leaf first, each as a 4-byte big-endian length
/// and its DER, into `out`. Returns the bytes written, -1 when there is no chain, -2 when it does
/// not fit in `capacity`.
long postern_nss_copy_peer_chain(PRFileDesc *socket, uint8_t *out, size_t capacity);

#endif
