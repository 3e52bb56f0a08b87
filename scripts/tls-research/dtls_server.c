/* OpenSSL 3.0 DTLS 1.2 server (WebRTC position) shaped toward Chrome's flight; memory BIOs over UDP. */
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int accept_any(int ok, X509_STORE_CTX *c) { return 1; }
int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 9443;
    int shaped = argc > 2 && strcmp(argv[2], "chrome") == 0;
    SSL_CTX *ctx = SSL_CTX_new(DTLS_server_method());
    EVP_PKEY *key = EVP_EC_gen("P-256"); X509 *crt = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(crt), 0x1234567);
    X509_set_version(crt, 2); X509_gmtime_adj(X509_getm_notBefore(crt), -86400); X509_gmtime_adj(X509_getm_notAfter(crt), 30L * 86400);
    X509_set_pubkey(crt, key); X509_NAME *n = X509_get_subject_name(crt);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"WebRTC", -1, -1, 0); X509_set_issuer_name(crt, n);
    X509_sign(crt, key, EVP_sha256());
    SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
    SSL_CTX_use_certificate(ctx, crt); SSL_CTX_use_PrivateKey(ctx, key);
    SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256");
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
    if (shaped) {
        SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AES128_CM_SHA1_80:SRTP_AEAD_AES_128_GCM");
        static const unsigned char types[] = {1, 64};                 /* rsa_sign, ecdsa_sign */
        int a = SSL_CTX_set1_client_certificate_types(ctx, types, 2);
        int b = SSL_CTX_set1_client_sigalgs_list(ctx, "ECDSA+SHA256:rsa_pss_rsae_sha256:RSA+SHA256:ECDSA+SHA384:rsa_pss_rsae_sha384:RSA+SHA384:rsa_pss_rsae_sha512:RSA+SHA512:RSA+SHA1");
        SSL_CTX_set_security_level(ctx, 0);                           /* rsa_pkcs1_sha1 (0201) needs level 0 */
        int c = SSL_CTX_set1_groups_list(ctx, "X25519:P-256:P-384");
        int d = SSL_CTX_set1_sigalgs_list(ctx, "ECDSA+SHA256:rsa_pss_rsae_sha256:RSA+SHA256:ECDSA+SHA384:rsa_pss_rsae_sha384:RSA+SHA384:rsa_pss_rsae_sha512:RSA+SHA512:RSA+SHA1");
        /* try to suppress the 0,1,2 point formats / reorder extensions: no 3.0 API; custom ext for a built-in type is refused */
        int e = SSL_CTX_add_custom_ext(ctx, 11, SSL_EXT_TLS1_2_SERVER_HELLO | SSL_EXT_CLIENT_HELLO, NULL, NULL, NULL, NULL, NULL);
        int f = SSL_CTX_add_custom_ext(ctx, 23, SSL_EXT_TLS1_2_SERVER_HELLO | SSL_EXT_CLIENT_HELLO, NULL, NULL, NULL, NULL, NULL);
        fprintf(stderr, "client_cert_types=%d client_sigalgs=%d groups=%d sigalgs=%d custom_ext(11)=%d custom_ext(23)=%d\n", a, b, c, d, e, f);
        ERR_clear_error();
    } else {
        SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80");
    }
    SSL *ssl = SSL_new(ctx);
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_accept_state(ssl);
    SSL_set_mtu(ssl, 1200); SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)}, peer; socklen_t pl = sizeof peer;
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr); bind(fd, (struct sockaddr *)&sa, sizeof sa);
    unsigned char buf[65536];
    for (int round = 0; round < 10; round++) {
        int nr = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&peer, &pl);
        if (nr <= 0) break;
        BIO_write(in, buf, nr);
        int r = SSL_do_handshake(ssl);
        /* memory BIO loses datagram boundaries: send what is pending as one datagram (fine for this test: one flight fits 1200) */
        int k; while ((k = BIO_read(out, buf, sizeof buf)) > 0) sendto(fd, buf, k, 0, (struct sockaddr *)&peer, pl);
        if (r == 1) { fprintf(stderr, "DTLS handshake OK: %s %s srtp=%s\n", SSL_get_version(ssl), SSL_get_cipher(ssl),
                              SSL_get_selected_srtp_profile(ssl) ? SSL_get_selected_srtp_profile(ssl)->name : "-"); break; }
        if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ) { ERR_print_errors_fp(stderr); break; }
    }
    return 0;
}
