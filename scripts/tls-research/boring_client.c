/* Android BoringSSL (Debian 12 android-libboringssl-dev 13.0.0+r24) Chrome-like ClientHello, memory BIOs. */
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int brotli_decompress_stub(SSL *ssl, CRYPTO_BUFFER **out, size_t uncompressed_len, const uint8_t *in, size_t in_len) {
    (void)ssl; (void)out; (void)uncompressed_len; (void)in; (void)in_len;
    return 0; /* a real build would call libbrotlidec (Debian libbrotli-dev) here */
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 8443;
    const char *sni = argc > 2 && strcmp(argv[2], "-") ? argv[2] : NULL;
    int count = argc > 3 ? atoi(argv[3]) : 1;
    for (int c = 0; c < count; c++) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_grease_enabled(ctx, 1);
    SSL_CTX_set_permute_extensions(ctx, 1);
    int r1 = SSL_CTX_set_strict_cipher_list(ctx,
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
        "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA:"
        "AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA:AES256-SHA");
    int r2 = SSL_CTX_set1_curves_list(ctx, "X25519:P-256:P-384");
    static const uint16_t chrome_sigalgs[] = {0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601};
    static const uint16_t mldsa_sigalgs[] = {0x0904, 0x0905, 0x0906, 0x0403};
    int r3b = SSL_CTX_set_verify_algorithm_prefs(ctx, mldsa_sigalgs, 4);
    ERR_clear_error();
    static const uint16_t chrome156[] = {0x0904, 0x0905, 0x0906, 0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601};
    int r3 = getenv("MLDSA") ? SSL_CTX_set_verify_algorithm_prefs(ctx, chrome156, 11) : SSL_CTX_set_verify_algorithm_prefs(ctx, chrome_sigalgs, sizeof chrome_sigalgs / 2);
    int r4 = SSL_CTX_add_cert_compression_alg(ctx, TLSEXT_cert_compression_brotli, NULL, brotli_decompress_stub);
    static const uint16_t kyber[] = {0x6399, 0x11ec};
    int r5 = SSL_CTX_set1_curves_list(ctx, "X25519Kyber768Draft00:X25519") ; ERR_clear_error();
    if (!r5) SSL_CTX_set1_curves_list(ctx, "X25519:P-256:P-384");
    (void)kyber;
    if (c == 0) fprintf(stderr, "strict_cipher_list=%d curves=%d sigalgs(8)=%d sigalgs_with_mldsa=%d cert_compression=%d kyber_by_name=%d\n", r1, r2, r3, r3b, r4, r5);
    SSL *ssl = SSL_new(ctx);
    static const uint8_t alpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_set_alpn_protos(ssl, alpn, sizeof alpn);
    SSL_add_application_settings(ssl, (const uint8_t *)"h2", 2, NULL, 0);
    SSL_enable_ocsp_stapling(ssl);
    SSL_enable_signed_cert_timestamps(ssl);
    SSL_set_enable_ech_grease(ssl, 1);
    SSL_set_renegotiate_mode(ssl, ssl_renegotiate_once); /* Chrome sends renegotiation_info */
    if (sni) SSL_set_tlsext_host_name(ssl, sni);
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, in, out);
    SSL_set_connect_state(ssl);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) { perror("connect"); return 1; }
    char buf[65536];
    for (int round = 0; round < 20; round++) {
        int r = SSL_do_handshake(ssl);
        int n;
        while ((n = BIO_read(out, buf, sizeof buf)) > 0) write(fd, buf, n);
        if (r == 1) { const uint8_t *p; unsigned l; SSL_get0_alpn_selected(ssl, &p, &l);
            fprintf(stderr, "handshake OK: %s %s alpn=%.*s\n", SSL_get_version(ssl), SSL_get_cipher(ssl), (int)l, p); break; }
        if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ) { fprintf(stderr, "handshake failed\n"); ERR_print_errors_fp(stderr); break; }
        n = read(fd, buf, sizeof buf);
        if (n <= 0) { fprintf(stderr, "peer closed\n"); break; }
        BIO_write(in, buf, n);
    }
    close(fd); SSL_free(ssl); SSL_CTX_free(ctx);
    }
    return 0;
}
