// OpenSSL 3 (Debian libssl-dev) for the snowflake transport's DTLS and TransportTLS's certificate checks (no TLS client:
// every TLS connection is TransportTLS's, on NSS). Macros and variadic calls
// cannot be used from Swift; the static inline helpers below wrap them.
#ifndef POSTERN_COPENSSL_H
#define POSTERN_COPENSSL_H
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/// WebRTC authenticates the peer by the certificate digest in the SDP, not by a CA: the chain is
/// accepted here and the digest compared after the handshake.
static int postern_dtls__accept_any_certificate(int preverified, X509_STORE_CTX *store) {
    (void)preverified; (void)store;
    return 1;
}

/// A fresh self-signed ECDSA P-256 certificate (SHA-256, valid from a day ago for 30 days).
static inline int postern_dtls_make_identity(EVP_PKEY **key_out, X509 **certificate_out) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *certificate = X509_new();
    unsigned char serial[8];
    if (key == NULL || certificate == NULL || RAND_bytes(serial, sizeof serial) != 1) goto fail;
    serial[0] &= 0x7f;
    BIGNUM *number = BN_bin2bn(serial, sizeof serial, NULL);
    if (number == NULL || BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) == NULL) { BN_free(number); goto fail; }
    BN_free(number);
    if (X509_set_version(certificate, 2) != 1) goto fail;
    if (X509_gmtime_adj(X509_getm_notBefore(certificate), -86400) == NULL) goto fail;
    if (X509_gmtime_adj(X509_getm_notAfter(certificate), 30L * 86400) == NULL) goto fail;
    if (X509_set_pubkey(certificate, key) != 1) goto fail;
    X509_NAME *name = X509_get_subject_name(certificate);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"WebRTC", -1, -1, 0) != 1) goto fail;
    if (X509_set_issuer_name(certificate, name) != 1) goto fail;
    if (X509_sign(certificate, key, EVP_sha256()) == 0) goto fail;
    *key_out = key;
    *certificate_out = certificate;
    return 1;
fail:
    EVP_PKEY_free(key);
    X509_free(certificate);
    return 0;
}

/// A DTLS 1.2 server context that asks for (and needs) the peer's certificate.
static inline SSL_CTX *postern_dtls_server_context(EVP_PKEY *key, X509 *certificate) {
    SSL_CTX *context = SSL_CTX_new(DTLS_server_method());
    if (context == NULL) return NULL;
    if (SSL_CTX_set_min_proto_version(context, DTLS1_2_VERSION) != 1
        || SSL_CTX_use_certificate(context, certificate) != 1
        || SSL_CTX_use_PrivateKey(context, key) != 1
        || SSL_CTX_set_cipher_list(context, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
                                            "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256") != 1) {
        SSL_CTX_free(context);
        return NULL;
    }
    // pion's DTLS client (the proxy) offers use_srtp and aborts with insufficient_security when
    // the server selects no profile, data channel or not; browsers' servers always select one.
    if (SSL_CTX_set_tlsext_use_srtp(context, "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80") != 0) {
        SSL_CTX_free(context);
        return NULL;
    }
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, postern_dtls__accept_any_certificate);
    SSL_CTX_set_read_ahead(context, 1);
    return context;
}

/// A server-side connection on two memory BIOs (datagrams in, datagrams out); the MTU keeps every
/// flight below what ICE carries.
static inline SSL *postern_dtls_connection(SSL_CTX *context, BIO **incoming, BIO **outgoing, long mtu) {
    SSL *ssl = SSL_new(context);
    BIO *in = BIO_new(BIO_s_mem());
    BIO *out = BIO_new(BIO_s_mem());
    if (ssl == NULL || in == NULL || out == NULL) {
        SSL_free(ssl); BIO_free(in); BIO_free(out);
        return NULL;
    }
    BIO_set_mem_eof_return(in, -1);
    BIO_set_mem_eof_return(out, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_accept_state(ssl);
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    DTLS_set_link_mtu(ssl, mtu);
    *incoming = in;
    *outgoing = out;
    return ssl;
}

static inline long postern_dtls_handle_timeout(SSL *ssl) { return DTLSv1_handle_timeout(ssl); }
static inline size_t postern_bio_pending(BIO *bio) { return BIO_ctrl_pending(bio); }

/// SHA-256 of a certificate (32 bytes into `digest`); 1 on success.
static inline int postern_certificate_sha256(X509 *certificate, unsigned char *digest) {
    unsigned int length = 0;
    return X509_digest(certificate, EVP_sha256(), digest, &length) == 1 && length == 32;
}

/// SHA-256 of the peer's certificate; 0 when there is none.
static inline int postern_dtls_peer_sha256(SSL *ssl, unsigned char *digest) {
    X509 *peer = SSL_get1_peer_certificate(ssl);
    if (peer == NULL) return 0;
    int ok = postern_certificate_sha256(peer, digest);
    X509_free(peer);
    return ok;
}
#endif
