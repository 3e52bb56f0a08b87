// The datagram side of Postern's NSS use (TransportTLS's DTLS server for WebRTC): a bottom NSPR
// I/O layer that keeps datagram boundaries (one datagram per recv and per send, as a UDP socket
// does), so DTLS runs over ICE datagrams that Postern moves itself; a WebRTC identity (the
// self-signed certificate a browser makes per peer connection); the use_srtp extension written
// and read by hooks; the peer's certificate checked against the SDP's digest in NSS's
// authentication hook.
#ifndef POSTERN_CNSSSHIM_DATAGRAM_H
#define POSTERN_CNSSSHIM_DATAGRAM_H
#include <stddef.h>
#include <stdint.h>
#include <prio.h>
#include <seccomon.h>
#include <cert.h>
#include <keyhi.h>

/// Largest datagram the layer holds, either way: a DTLS record's largest ciphertext
/// (2^14 + 2048) plus its 13-byte header. A longer datagram fed in is refused.
#define POSTERN_NSS_DATAGRAM_MAX_BYTES 18445 /* 16384 + 2048 + 13 */
/// Datagrams waiting for NSS to read; postern_nss_datagram_feed refuses more. The caller feeds
/// one and lets NSS read it, so a flood from the peer never queues beyond this.
#define POSTERN_NSS_DATAGRAM_INBOUND_CAPACITY 64
/// Datagrams NSS wrote and the caller has not taken; beyond it a send says "would block" (DTLS
/// treats that as loss and retransmits the flight on its timer).
#define POSTERN_NSS_DATAGRAM_OUTBOUND_CAPACITY 256
/// Most SRTP protection profiles a server configures.
#define POSTERN_NSS_SRTP_PROFILE_CAPACITY 8

/// A DTLS socket (NSS's SSL layer over a fresh datagram layer), as a server when `server` is
/// non-zero, else as a client. Nothing else is set. NULL when NSS is not initialised or memory is
/// short. PR_Close frees both layers. One owner; NSS calls on it must not run concurrently.
PRFileDesc *postern_nss_datagram_socket(int server);

/// Queues one datagram from the peer. 0 (nothing queued) when it is empty, longer than
/// POSTERN_NSS_DATAGRAM_MAX_BYTES, the inbound queue is full, or `socket` has no datagram layer.
int postern_nss_datagram_feed(PRFileDesc *socket, const uint8_t *bytes, size_t count);
/// Datagrams fed and not yet read by NSS.
size_t postern_nss_datagram_inbound_count(PRFileDesc *socket);
/// Datagrams NSS wrote and not yet taken.
size_t postern_nss_datagram_outbound_count(PRFileDesc *socket);
/// The length of the oldest datagram NSS wrote; 0 when none waits.
size_t postern_nss_datagram_next_count(PRFileDesc *socket);
/// The oldest datagram NSS wrote: its length, copied into `out` and removed when it fits in
/// `capacity`; 0 when none waits; -1 (and it stays) when `capacity` is too small.
long postern_nss_datagram_take(PRFileDesc *socket, uint8_t *out, size_t capacity);

/// Writes the use_srtp extension (RFC 5764) through NSS's extension hooks, as Firefox's WebRTC
/// does: a server picks the first of `profiles` (its preference) that the client offers and names
/// it in its ServerHello (DTLS 1.2) or EncryptedExtensions (DTLS 1.3); hook-written extensions go
/// after NSS's own. A client offering none of them gets a handshake_failure alert.
SECStatus postern_nss_datagram_use_srtp(PRFileDesc *socket, const uint16_t *profiles, unsigned int count);
/// The SRTP profile the handshake chose; 0 when none.
uint16_t postern_nss_datagram_srtp_profile(PRFileDesc *socket);

/// The peer's certificate must have this SHA-256 digest (the SDP's a=fingerprint): installs
/// NSS's authentication hook, which fails the handshake (bad_certificate) on any other
/// certificate. Until it is called, no certificate is accepted.
SECStatus postern_nss_datagram_expect_peer_sha256(PRFileDesc *socket, const uint8_t digest[32]);
/// 1 once the hook accepted the peer's certificate.
int postern_nss_datagram_peer_verified(PRFileDesc *socket);
/// SHA-256 of the peer's certificate into `digest`; 0 when there is none yet.
int postern_nss_datagram_peer_sha256(PRFileDesc *socket, uint8_t digest[32]);

/// A client's certificate and key for the server's CertificateRequest (both kept, as copies,
/// until the socket closes).
SECStatus postern_nss_datagram_client_identity(PRFileDesc *socket, CERTCertificate *certificate, SECKEYPrivateKey *key);

/// The DTLS 1.3 version workaround Firefox turns on for its clients (SSL_SetDtls13VersionWorkaround).
SECStatus postern_nss_set_dtls13_version_workaround(PRFileDesc *socket, PRBool enabled);

/// A WebRTC identity shaped like Firefox's (one per peer connection): an ECDSA P-256 key and a
/// self-signed X.509 v3 certificate, subject and issuer "CN=" and 32 random lower-case hex
/// characters, a random serial that NSS encodes from 32 bits, valid from a day ago for 31 days,
/// no extensions, signed ecdsa-with-SHA256. 1 on success.
int postern_nss_webrtc_identity(CERTCertificate **certificate, SECKEYPrivateKey **key);
/// The certificate's DER bytes (owned by the certificate) and their count.
const uint8_t *postern_nss_certificate_der(const CERTCertificate *certificate, size_t *count);
/// SHA-256 of `count` bytes into `digest`; 1 on success.
int postern_nss_sha256(const uint8_t *bytes, size_t count, uint8_t digest[32]);

#endif
