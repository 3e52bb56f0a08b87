// A bottom NSPR I/O layer for DTLS: two bounded queues of datagrams. NSS's SSL layer (imported
// with DTLS_ImportFD) sits on top; each recv gives it one queued datagram and each send queues
// one, so record boundaries survive as they do on a UDP socket. The Swift side moves datagrams
// between these queues and ICE. The layer also keeps what the two hooks of a WebRTC DTLS
// socket need: the SRTP profiles (use_srtp) and the peer certificate digest the SDP announced.
#include "cnssshim.h"
#include "io_layer_methods.h"
#include "cnssshim_datagram.h"
#include <nss.h>
#include <pk11pub.h>
#include <prerror.h>
#include <pthread.h>
#include <secerr.h>
#include <ssl.h>
#include <sslerr.h>
#include <sslexp.h>
#include <sslproto.h>
#include <stdlib.h>
#include <string.h>

struct datagram {
    uint8_t *bytes;
    size_t count;
};

/// A ring of at most `capacity` datagrams.
struct datagram_queue {
    struct datagram *slots;
    size_t capacity, first, count;
};

struct datagram_layer {
    struct datagram_queue in, out;
    uint16_t srtp_profiles[POSTERN_NSS_SRTP_PROFILE_CAPACITY];
    unsigned int srtp_count;
    uint16_t srtp_chosen;
    uint8_t expected_digest[32];
    int expects_digest;
    int peer_verified;
    CERTCertificate *client_certificate;
    SECKEYPrivateKey *client_key;
};

static PRDescIdentity datagram_identity = PR_INVALID_IO_LAYER;
static PRIOMethods datagram_methods;

static struct datagram_layer *layer_of(PRFileDesc *socket) {
    if (socket == NULL || datagram_identity == PR_INVALID_IO_LAYER) return NULL;
    PRFileDesc *layer = PR_GetIdentitiesLayer(socket, datagram_identity);
    return layer == NULL ? NULL : (struct datagram_layer *)layer->secret;
}

static int queue_init(struct datagram_queue *q, size_t capacity) {
    q->slots = calloc(capacity, sizeof *q->slots);
    q->capacity = capacity;
    q->first = q->count = 0;
    return q->slots != NULL;
}

static void queue_free(struct datagram_queue *q) {
    for (size_t i = 0; i < q->count; i++) free(q->slots[(q->first + i) % q->capacity].bytes);
    free(q->slots);
    q->slots = NULL;
    q->count = 0;
}

/// Copies `count` bytes in as the newest datagram; 0 when full or memory is short.
static int queue_push(struct datagram_queue *q, const void *bytes, size_t count) {
    if (q->count == q->capacity) return 0;
    uint8_t *copy = malloc(count == 0 ? 1 : count);
    if (copy == NULL) return 0;
    if (count > 0) memcpy(copy, bytes, count);
    q->slots[(q->first + q->count) % q->capacity] = (struct datagram){ copy, count };
    q->count++;
    return 1;
}

static struct datagram *queue_front(struct datagram_queue *q) {
    return q->count == 0 ? NULL : &q->slots[q->first];
}

static void queue_pop(struct datagram_queue *q) {
    if (q->count == 0) return;
    free(q->slots[q->first].bytes);
    q->slots[q->first] = (struct datagram){ NULL, 0 };
    q->first = (q->first + 1) % q->capacity;
    q->count--;
}

static void layer_free(struct datagram_layer *l) {
    if (l == NULL) return;
    queue_free(&l->in);
    queue_free(&l->out);
    if (l->client_certificate != NULL) CERT_DestroyCertificate(l->client_certificate);
    if (l->client_key != NULL) SECKEY_DestroyPrivateKey(l->client_key);
    free(l);
}

static PRStatus datagram_close(PRFileDesc *fd) {
    layer_free((struct datagram_layer *)fd->secret);
    fd->secret = NULL;
    fd->dtor(fd);
    return PR_SUCCESS;
}

/// One datagram per call. A datagram longer than `amount` is cut to it and the rest dropped, as
/// a UDP socket does (NSS reads with room for the largest record, so this does not happen).
static PRInt32 datagram_recv(PRFileDesc *fd, void *buf, PRInt32 amount, PRIntn flags, PRIntervalTime timeout) {
    (void)timeout;
    struct datagram_layer *l = (struct datagram_layer *)fd->secret;
    if (amount < 0) { PR_SetError(PR_INVALID_ARGUMENT_ERROR, 0); return -1; }
    struct datagram *front = queue_front(&l->in);
    if (front == NULL) { PR_SetError(PR_WOULD_BLOCK_ERROR, 0); return -1; }
    size_t count = front->count < (size_t)amount ? front->count : (size_t)amount;
    if (count > 0) memcpy(buf, front->bytes, count);
    if (!(flags & PR_MSG_PEEK)) queue_pop(&l->in);
    return (PRInt32)count;
}

static PRInt32 datagram_send(PRFileDesc *fd, const void *buf, PRInt32 amount, PRIntn flags, PRIntervalTime timeout) {
    (void)flags; (void)timeout;
    struct datagram_layer *l = (struct datagram_layer *)fd->secret;
    if (amount < 0 || (size_t)amount > POSTERN_NSS_DATAGRAM_MAX_BYTES) { PR_SetError(PR_INVALID_ARGUMENT_ERROR, 0); return -1; }
    if (l->out.count == l->out.capacity) { PR_SetError(PR_WOULD_BLOCK_ERROR, 0); return -1; }
    if (!queue_push(&l->out, buf, (size_t)amount)) { PR_SetError(PR_OUT_OF_MEMORY_ERROR, 0); return -1; }
    return amount;
}

static PRInt32 datagram_read(PRFileDesc *fd, void *buf, PRInt32 amount) {
    return datagram_recv(fd, buf, amount, 0, PR_INTERVAL_NO_WAIT);
}

static PRInt32 datagram_write(PRFileDesc *fd, const void *buf, PRInt32 amount) {
    return datagram_send(fd, buf, amount, 0, PR_INTERVAL_NO_WAIT);
}

static PRInt32 datagram_available(PRFileDesc *fd) {
    struct datagram *front = queue_front(&((struct datagram_layer *)fd->secret)->in);
    return front == NULL ? 0 : (PRInt32)front->count;
}

static PRInt64 datagram_available64(PRFileDesc *fd) { return datagram_available(fd); }

static PRStatus datagram_get_option(PRFileDesc *fd, PRSocketOptionData *data) {
    (void)fd;
    if (data->option == PR_SockOpt_Nonblocking) { data->value.non_blocking = PR_TRUE; return PR_SUCCESS; }
    PR_SetError(PR_NOT_IMPLEMENTED_ERROR, 0);
    return PR_FAILURE;
}

static pthread_once_t methods_once = PTHREAD_ONCE_INIT;

static void make_methods(void) {
    datagram_identity = PR_GetUniqueIdentity("postern-datagram");
    PRIOMethods *m = &datagram_methods;
    m->file_type = PR_DESC_SOCKET_UDP;
    m->close = datagram_close;
    m->read = datagram_read;
    m->write = datagram_write;
    m->available = datagram_available;
    m->available64 = datagram_available64;
    m->recv = datagram_recv;
    m->send = datagram_send;
    m->getsocketoption = datagram_get_option;
    postern_io_layer_common_methods(m);
}

PRFileDesc *postern_nss_datagram_socket(int server) {
    if (postern_nss_initialize() != NULL) return NULL;
    pthread_once(&methods_once, make_methods);
    if (datagram_identity == PR_INVALID_IO_LAYER) return NULL;
    struct datagram_layer *l = calloc(1, sizeof *l);
    if (l == NULL) return NULL;
    if (!queue_init(&l->in, POSTERN_NSS_DATAGRAM_INBOUND_CAPACITY) || !queue_init(&l->out, POSTERN_NSS_DATAGRAM_OUTBOUND_CAPACITY)) {
        layer_free(l);
        return NULL;
    }
    PRFileDesc *layer = PR_CreateIOLayerStub(datagram_identity, &datagram_methods);
    if (layer == NULL) { layer_free(l); return NULL; }
    layer->secret = (PRFilePrivate *)l;
    // DTLS_ImportFD pushes NSS's SSL layer on top; from here PR_Close of the result frees both.
    PRFileDesc *ssl = DTLS_ImportFD(NULL, layer);
    if (ssl == NULL) {
        datagram_close(layer);
        return NULL;
    }
    if (SSL_OptionSet(ssl, SSL_SECURITY, PR_TRUE) != SECSuccess
        || SSL_OptionSet(ssl, SSL_HANDSHAKE_AS_CLIENT, server ? PR_FALSE : PR_TRUE) != SECSuccess
        || SSL_OptionSet(ssl, SSL_HANDSHAKE_AS_SERVER, server ? PR_TRUE : PR_FALSE) != SECSuccess) {
        PR_Close(ssl);
        return NULL;
    }
    return ssl;
}

int postern_nss_datagram_feed(PRFileDesc *socket, const uint8_t *bytes, size_t count) {
    struct datagram_layer *l = layer_of(socket);
    if (l == NULL || count == 0 || count > POSTERN_NSS_DATAGRAM_MAX_BYTES) return 0;
    return queue_push(&l->in, bytes, count);
}

size_t postern_nss_datagram_inbound_count(PRFileDesc *socket) {
    struct datagram_layer *l = layer_of(socket);
    return l == NULL ? 0 : l->in.count;
}

size_t postern_nss_datagram_outbound_count(PRFileDesc *socket) {
    struct datagram_layer *l = layer_of(socket);
    return l == NULL ? 0 : l->out.count;
}

size_t postern_nss_datagram_next_count(PRFileDesc *socket) {
    struct datagram_layer *l = layer_of(socket);
    struct datagram *front = l == NULL ? NULL : queue_front(&l->out);
    return front == NULL ? 0 : front->count;
}

long postern_nss_datagram_take(PRFileDesc *socket, uint8_t *out, size_t capacity) {
    struct datagram_layer *l = layer_of(socket);
    if (l == NULL) return 0;
    struct datagram *front = queue_front(&l->out);
    if (front == NULL) return 0;
    if (front->count > capacity) return -1;
    long count = (long)front->count;
    if (count > 0) memcpy(out, front->bytes, front->count);
    queue_pop(&l->out);
    return count;
}

// ---- use_srtp (RFC 5764 section 4.1.1): SRTPProtectionProfiles (2-byte length, 2-byte values)
// then an MKI (1-byte length). Postern never uses an MKI.

/// TLS alert descriptions (RFC 8446 section 6); NSS keeps its names in private headers.
enum {
    alert_handshake_failure = 40,
    alert_illegal_parameter = 47,
    alert_decode_error = 50,
    alert_unsupported_extension = 110,
};

/// The message that carries a server's use_srtp: EncryptedExtensions from (D)TLS 1.3 on.
static SSLHandshakeType srtp_server_message(PRFileDesc *fd) {
    SSLPreliminaryChannelInfo info;
    if (SSL_GetPreliminaryChannelInfo(fd, &info, sizeof info) != SECSuccess
        || !(info.valuesSet & ssl_preinfo_version)) return ssl_hs_server_hello;
    return info.protocolVersion >= SSL_LIBRARY_VERSION_TLS_1_3 ? ssl_hs_encrypted_extensions : ssl_hs_server_hello;
}

static PRBool srtp_writer(PRFileDesc *fd, SSLHandshakeType message, PRUint8 *data, unsigned int *len,
                          unsigned int max_len, void *arg) {
    struct datagram_layer *l = arg;
    if (message == ssl_hs_client_hello) {
        unsigned int needed = 2 + 2 * l->srtp_count + 1;
        if (l->srtp_count == 0 || max_len < needed) return PR_FALSE;
        data[0] = (PRUint8)((2 * l->srtp_count) >> 8);
        data[1] = (PRUint8)(2 * l->srtp_count);
        for (unsigned int i = 0; i < l->srtp_count; i++) {
            data[2 + 2 * i] = (PRUint8)(l->srtp_profiles[i] >> 8);
            data[3 + 2 * i] = (PRUint8)l->srtp_profiles[i];
        }
        data[needed - 1] = 0;
        *len = needed;
        return PR_TRUE;
    }
    if (message == srtp_server_message(fd) && l->srtp_chosen != 0 && max_len >= 5) {
        data[0] = 0;
        data[1] = 2;
        data[2] = (PRUint8)(l->srtp_chosen >> 8);
        data[3] = (PRUint8)l->srtp_chosen;
        data[4] = 0;
        *len = 5;
        return PR_TRUE;
    }
    return PR_FALSE;
}

static SECStatus srtp_handler(PRFileDesc *fd, SSLHandshakeType message, const PRUint8 *data, unsigned int len,
                              SSLAlertDescription *alert, void *arg) {
    struct datagram_layer *l = arg;
    // Parse: every length is checked against what is left before it is used.
    if (len < 2) { *alert = alert_decode_error; return SECFailure; }
    unsigned int list = (unsigned int)data[0] << 8 | data[1];
    if (list % 2 != 0 || list > len - 2 || len - 2 - list < 1) { *alert = alert_decode_error; return SECFailure; }
    unsigned int mki = data[2 + list];
    if (len != 2 + list + 1 + mki) { *alert = alert_decode_error; return SECFailure; }
    const PRUint8 *offered = data + 2;
    unsigned int offered_count = list / 2;

    if (message == ssl_hs_client_hello) {
        for (unsigned int i = 0; i < l->srtp_count; i++) {
            for (unsigned int j = 0; j < offered_count; j++) {
                uint16_t profile = (uint16_t)(offered[2 * j] << 8 | offered[2 * j + 1]);
                if (profile == l->srtp_profiles[i]) {
                    l->srtp_chosen = profile;
                    return SECSuccess;
                }
            }
        }
        *alert = alert_handshake_failure;
        return SECFailure;
    }
    if (message == srtp_server_message(fd)) {
        if (offered_count != 1 || mki != 0) { *alert = alert_illegal_parameter; return SECFailure; }
        uint16_t profile = (uint16_t)(offered[0] << 8 | offered[1]);
        for (unsigned int i = 0; i < l->srtp_count; i++) {
            if (l->srtp_profiles[i] == profile) {
                l->srtp_chosen = profile;
                return SECSuccess;
            }
        }
        *alert = alert_illegal_parameter;
        return SECFailure;
    }
    *alert = alert_unsupported_extension;
    return SECFailure;
}

SECStatus postern_nss_datagram_use_srtp(PRFileDesc *socket, const uint16_t *profiles, unsigned int count) {
    struct datagram_layer *l = layer_of(socket);
    if (l == NULL || count == 0 || count > POSTERN_NSS_SRTP_PROFILE_CAPACITY) {
        PR_SetError(SEC_ERROR_INVALID_ARGS, 0);
        return SECFailure;
    }
    memcpy(l->srtp_profiles, profiles, count * sizeof *profiles);
    l->srtp_count = count;
    return SSL_InstallExtensionHooks(socket, ssl_use_srtp_xtn, srtp_writer, l, srtp_handler, l);
}

uint16_t postern_nss_datagram_srtp_profile(PRFileDesc *socket) {
    struct datagram_layer *l = layer_of(socket);
    return l == NULL ? 0 : l->srtp_chosen;
}

// ---- The peer's certificate, checked against the SDP's digest (RFC 8122) as Firefox's
// WebRTC does in its authentication hook: self-signed, so nothing else is verified.

static SECStatus certificate_hook(void *arg, PRFileDesc *fd, PRBool check_signature, PRBool is_server) {
    (void)check_signature; (void)is_server;
    struct datagram_layer *l = arg;
    uint8_t digest[32];
    if (!l->expects_digest || !postern_nss_datagram_peer_sha256(fd, digest)) {
        PR_SetError(SSL_ERROR_BAD_CERTIFICATE, 0);
        return SECFailure;
    }
    // Every byte compared, whatever the first difference (the digest is public, but there is no
    // reason to leak where it differs).
    uint8_t difference = 0;
    for (int i = 0; i < 32; i++) difference |= (uint8_t)(digest[i] ^ l->expected_digest[i]);
    if (difference != 0) {
        PR_SetError(SSL_ERROR_BAD_CERTIFICATE, 0);
        return SECFailure;
    }
    l->peer_verified = 1;
    return SECSuccess;
}

SECStatus postern_nss_datagram_expect_peer_sha256(PRFileDesc *socket, const uint8_t digest[32]) {
    struct datagram_layer *l = layer_of(socket);
    if (l == NULL) { PR_SetError(SEC_ERROR_INVALID_ARGS, 0); return SECFailure; }
    memcpy(l->expected_digest, digest, 32);
    l->expects_digest = 1;
    return SSL_AuthCertificateHook(socket, certificate_hook, l);
}

int postern_nss_datagram_peer_verified(PRFileDesc *socket) {
    struct datagram_layer *l = layer_of(socket);
    return l != NULL && l->peer_verified;
}

int postern_nss_datagram_peer_sha256(PRFileDesc *socket, uint8_t digest[32]) {
    CERTCertificate *peer = SSL_PeerCertificate(socket);
    if (peer == NULL) return 0;
    int ok = postern_nss_sha256(peer->derCert.data, peer->derCert.len, digest);
    CERT_DestroyCertificate(peer);
    return ok;
}

static SECStatus client_identity_hook(void *arg, PRFileDesc *fd, CERTDistNames *names, CERTCertificate **certificate,
                                      SECKEYPrivateKey **key) {
    (void)fd; (void)names;
    struct datagram_layer *l = arg;
    *certificate = CERT_DupCertificate(l->client_certificate);
    *key = SECKEY_CopyPrivateKey(l->client_key);
    if (*key == NULL) {
        CERT_DestroyCertificate(*certificate);
        *certificate = NULL;
        PR_SetError(PR_OUT_OF_MEMORY_ERROR, 0);
        return SECFailure;
    }
    return SECSuccess;
}

SECStatus postern_nss_datagram_client_identity(PRFileDesc *socket, CERTCertificate *certificate, SECKEYPrivateKey *key) {
    struct datagram_layer *l = layer_of(socket);
    if (l == NULL || l->client_certificate != NULL || certificate == NULL || key == NULL) {
        PR_SetError(SEC_ERROR_INVALID_ARGS, 0);
        return SECFailure;
    }
    l->client_key = SECKEY_CopyPrivateKey(key);
    if (l->client_key == NULL) { PR_SetError(PR_OUT_OF_MEMORY_ERROR, 0); return SECFailure; }
    l->client_certificate = CERT_DupCertificate(certificate);
    return SSL_GetClientAuthDataHook(socket, client_identity_hook, l);
}

SECStatus postern_nss_set_dtls13_version_workaround(PRFileDesc *socket, PRBool enabled) {
    return SSL_SetDtls13VersionWorkaround(socket, enabled);
}

int postern_nss_sha256(const uint8_t *bytes, size_t count, uint8_t digest[32]) {
    if (count > 0x7fffffff) return 0;
    return PK11_HashBuf(SEC_OID_SHA256, digest, bytes, (PRInt32)count) == SECSuccess;
}
