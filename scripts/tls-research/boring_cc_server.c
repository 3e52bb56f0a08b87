/* BoringSSL TLS server that compresses its certificate (as CDNs do) to test clients that only *advertise* compress_certificate. */
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int fake_compress(SSL *ssl, CBB *out, const uint8_t *in, size_t in_len) { return CBB_add_bytes(out, in, in_len); } /* not real brotli: the client never gets as far as decompressing */
int main(int argc, char **argv) {
    int port = atoi(argv[1]), conns = atoi(argv[2]);
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    SSL_CTX_use_certificate_file(ctx, "cert.pem", SSL_FILETYPE_PEM); SSL_CTX_use_PrivateKey_file(ctx, "key.pem", SSL_FILETYPE_PEM);
    SSL_CTX_add_cert_compression_alg(ctx, 2, fake_compress, NULL); /* brotli */
    SSL_CTX_add_cert_compression_alg(ctx, 1, fake_compress, NULL); /* zlib */
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1; setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)}; inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    bind(ls, (struct sockaddr *)&sa, sizeof sa); listen(ls, 4);
    for (int i = 0; i < conns; i++) {
        int fd = accept(ls, NULL, NULL); SSL *ssl = SSL_new(ctx); SSL_set_fd(ssl, fd);
        int r = SSL_accept(ssl); fprintf(stderr, "server: accept=%d %s\n", r, r == 1 ? "ok" : ERR_reason_error_string(ERR_get_error()));
        SSL_free(ssl); close(fd);
    }
    return 0;
}
