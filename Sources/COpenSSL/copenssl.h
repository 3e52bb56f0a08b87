// OpenSSL 3 (Debian libssl-dev) for TransportTLS's certificate checks: chains verified against the
// system trust or a CA file, names and addresses matched (ServerCertificateVerifier). No TLS or DTLS
// runs on OpenSSL: every TLS connection and snowflake's DTLS are TransportTLS's, on NSS.
#ifndef POSTERN_COPENSSL_H
#define POSTERN_COPENSSL_H
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#endif
