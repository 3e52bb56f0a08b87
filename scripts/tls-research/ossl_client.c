/* OpenSSL 3.0 ClientHello shaping experiment: memory BIOs (as Postern's streams), bytes pumped to a TCP socket. */
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { unsigned type; const unsigned char *body; size_t len; const char *what; } ext_t;
static unsigned char ech_body[1 + 2 + 2 + 1 + 2 + 32 + 2 + 208];
static int add_cb(SSL *s, unsigned int ext_type, unsigned int context, const unsigned char **out, size_t *outlen,
                  X509 *x, size_t chainidx, int *al, void *add_arg) {
    ext_t *e = add_arg; (void)s; (void)ext_type; (void)context; (void)x; (void)chainidx; (void)al;
    *out = e->body; *outlen = e->len; return 1;
}
static int parse_cb(SSL *s, unsigned int ext_type, unsigned int context, const unsigned char *in, size_t inlen,
                    X509 *x, size_t chainidx, int *al, void *parse_arg) { return 1; }

static const unsigned char compress_brotli[] = {0x02, 0x00, 0x02};
static const unsigned char alps_h2[] = {0x00, 0x03, 0x02, 'h', '2'};
static const unsigned char empty[] = {0};
static const unsigned char one_zero[] = {0x00};
static const unsigned char reneg[] = {0x00};
static const unsigned char sct_empty[] = {0};

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "default";
    int port = argc > 2 ? atoi(argv[2]) : 8443;
    const char *sni = argc > 3 ? argv[3] : NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (strcmp(mode, "chrome") == 0 || strcmp(mode, "firefox") == 0) {
        int ff = strcmp(mode, "firefox") == 0;
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        int r1 = SSL_CTX_set_ciphersuites(ctx, ff ? "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384"
                                                  : "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
        int r2 = SSL_CTX_set_cipher_list(ctx, ff ?
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
            "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA:"
            "AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA:AES256-SHA:@SECLEVEL=0"
          : "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
            "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA:"
            "AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA:AES256-SHA:@SECLEVEL=0");
        int r3 = SSL_CTX_set1_groups_list(ctx, ff ? "X25519:P-256:P-384:P-521:ffdhe2048:ffdhe3072" : "X25519:P-256:P-384");
        int r4 = SSL_CTX_set1_sigalgs_list(ctx, ff ?
            "ECDSA+SHA256:ECDSA+SHA384:ECDSA+SHA512:rsa_pss_rsae_sha256:rsa_pss_rsae_sha384:rsa_pss_rsae_sha512:RSA+SHA256:RSA+SHA384:RSA+SHA512:ECDSA+SHA1:RSA+SHA1"
          : "ECDSA+SHA256:rsa_pss_rsae_sha256:RSA+SHA256:ECDSA+SHA384:rsa_pss_rsae_sha384:RSA+SHA384:rsa_pss_rsae_sha512:RSA+SHA512");
        /* ML-DSA codepoints 0x0904..6 as Chrome 156 sends: does 3.0 take them by name or number? */
        int r4b = SSL_CTX_set1_sigalgs_list(ctx, "mldsa44:ECDSA+SHA256");
        ERR_clear_error();
        fprintf(stderr, "ciphersuites=%d cipher_list=%d groups=%d sigalgs=%d sigalgs_with_mldsa=%d\n", r1, r2, r3, r4, r4b);
        static const unsigned char alpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
        SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn);
        SSL_CTX_set_options(ctx, SSL_OP_NO_ENCRYPT_THEN_MAC);
        /* custom extensions: which types does 3.0 accept? */
        RAND_bytes(ech_body, sizeof ech_body);
        ech_body[0] = 0; ech_body[1] = 0; ech_body[2] = 1; ech_body[3] = 0; ech_body[4] = 1; /* outer, HKDF-SHA256, AES-128-GCM */
        ech_body[6] = 0; ech_body[7] = 32; ech_body[40] = 0; ech_body[41] = 208;
        static ext_t tries[] = {
            {0x0a0a, empty, 0, "GREASE 0x0a0a (empty)"},
            {27, compress_brotli, sizeof compress_brotli, "compress_certificate brotli"},
            {17613, alps_h2, sizeof alps_h2, "application_settings (new, 17613) h2"},
            {0xca34, empty, 0, "trust_anchors 0xca34 (empty body: Chrome's body unverified)"},
            {0xfe0d, ech_body, sizeof ech_body, "encrypted_client_hello GREASE"},
            {18, sct_empty, 0, "signed_cert_timestamp"},
            {0xff01, reneg, 1, "renegotiation_info"},
            {21, empty, 0, "padding"},
            {0x1a1a, one_zero, 1, "GREASE 0x1a1a (1 byte)"},
            {28, empty, 0, "record_size_limit (placeholder)"},
            {34, empty, 0, "delegated_credentials (placeholder)"},
        };
        for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
            if (ff && (tries[i].type == 17613 || tries[i].type == 0xca34 || tries[i].type == 0x0a0a || tries[i].type == 0x1a1a)) continue;
            if (!ff && (tries[i].type == 28 || tries[i].type == 34)) continue;
            if (tries[i].type == 28) { static const unsigned char rsl[] = {0x40, 0x01}; tries[i].body = rsl; tries[i].len = 2; }
            if (tries[i].type == 34) { static const unsigned char dc[] = {0x00, 0x08, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x02, 0x03}; tries[i].body = dc; tries[i].len = sizeof dc; }
            if (ff && tries[i].type == 27) { static const unsigned char cc[] = {0x06, 0x00, 0x01, 0x00, 0x02, 0x00, 0x03}; tries[i].body = cc; tries[i].len = sizeof cc; }
            int ok = SSL_CTX_add_custom_ext(ctx, tries[i].type,
                SSL_EXT_CLIENT_HELLO | SSL_EXT_TLS1_3_ENCRYPTED_EXTENSIONS | SSL_EXT_TLS1_2_SERVER_HELLO | SSL_EXT_TLS1_3_CERTIFICATE,
                add_cb, NULL, &tries[i], parse_cb, NULL);
            fprintf(stderr, "custom ext %5u (0x%04x) %-55s -> %s\n", tries[i].type, tries[i].type, tries[i].what, ok ? "accepted" : "REFUSED");
        }
    }
    SSL *ssl = SSL_new(ctx);
    if (strcmp(mode, "chrome") == 0 || strcmp(mode, "firefox") == 0) {
        SSL_set_tlsext_status_type(ssl, TLSEXT_STATUSTYPE_ocsp);
    }
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
        if (r == 1) { fprintf(stderr, "handshake OK: %s %s alpn=", SSL_get_version(ssl), SSL_get_cipher(ssl));
            const unsigned char *p; unsigned l; SSL_get0_alpn_selected(ssl, &p, &l); fprintf(stderr, "%.*s\n", (int)l, p); break; }
        if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ) { fprintf(stderr, "handshake failed\n"); ERR_print_errors_fp(stderr); break; }
        n = read(fd, buf, sizeof buf);
        if (n <= 0) { fprintf(stderr, "peer closed\n"); break; }
        BIO_write(in, buf, n);
    }
    close(fd);
    return 0;
}
