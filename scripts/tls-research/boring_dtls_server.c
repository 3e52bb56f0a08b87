/* Android BoringSSL DTLS 1.2 server flight (libwebrtc's library) over UDP with memory BIOs. */
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static enum ssl_verify_result_t accept_any(SSL *ssl, uint8_t *alert) { return ssl_verify_ok; }
int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 9445;
    SSL_CTX *ctx = SSL_CTX_new(DTLS_method());
    SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
    SSL_CTX_use_certificate_file(ctx, "ccert.pem", SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(ctx, "ckey.pem", SSL_FILETYPE_PEM);
    SSL_CTX_set_strict_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES256-SHA:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384");
    SSL_CTX_set_srtp_profiles(ctx, "SRTP_AES128_CM_SHA1_80:SRTP_AEAD_AES_128_GCM");
    static const uint16_t sig[] = {0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601, 0x0201};
    SSL_CTX_set_verify_algorithm_prefs(ctx, sig, 9);
    SSL_CTX_set_custom_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
    SSL *ssl = SSL_new(ctx);
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    SSL_set_bio(ssl, in, out); SSL_set_accept_state(ssl); SSL_set_mtu(ssl, 1200);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)}, peer; socklen_t pl = sizeof peer;
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr); bind(fd, (struct sockaddr *)&sa, sizeof sa);
    unsigned char buf[65536];
    for (int round = 0; round < 10; round++) {
        int nr = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&peer, &pl);
        if (nr <= 0) break;
        BIO_write(in, buf, nr);
        int r = SSL_do_handshake(ssl);
        int k; while ((k = BIO_read(out, buf, sizeof buf)) > 0) sendto(fd, buf, k, 0, (struct sockaddr *)&peer, pl);
        if (r == 1) { fprintf(stderr, "BoringSSL DTLS handshake OK: %s %s srtp=%s\n", SSL_get_version(ssl), SSL_get_cipher(ssl),
                              SSL_get_selected_srtp_profile(ssl) ? SSL_get_selected_srtp_profile(ssl)->name : "-"); break; }
        if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ) { ERR_print_errors_fp(stderr); break; }
    }
    return 0;
}
