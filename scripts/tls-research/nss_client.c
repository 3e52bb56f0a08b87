/* NSS 3.87 (Debian 12 libnss3-dev) Firefox-ESR-like ClientHello. */
#include <nss.h>
#include <ssl.h>
#include <sslexp.h>
#include <sslproto.h>
#include <prio.h>
#include <prnetdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static SECStatus auth_ok(void *arg, PRFileDesc *fd, PRBool checksig, PRBool isServer) { return SECSuccess; }
static PRBool cc_writer(PRFileDesc *fd, SSLHandshakeType message, PRUint8 *data, unsigned int *len, unsigned int maxLen, void *arg) {
    if (message != ssl_hs_client_hello) return PR_FALSE;
    static const PRUint8 body[] = {0x06, 0x00, 0x01, 0x00, 0x02, 0x00, 0x03}; /* zlib, brotli, zstd */
    memcpy(data, body, sizeof body); *len = sizeof body; return PR_TRUE;
}
static SECStatus cc_handler(PRFileDesc *fd, SSLHandshakeType message, const PRUint8 *data, unsigned int len, SSLAlertDescription *alert, void *arg) { return SECSuccess; }
static PRBool grease_writer(PRFileDesc *fd, SSLHandshakeType message, PRUint8 *data, unsigned int *len, unsigned int maxLen, void *arg) {
    return message == ssl_hs_client_hello;
}
static PRBool rsl_writer(PRFileDesc *fd, SSLHandshakeType message, PRUint8 *data, unsigned int *len, unsigned int maxLen, void *arg) {
    return PR_FALSE;
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 8443;
    const char *sni = argc > 2 && strcmp(argv[2], "-") ? argv[2] : NULL;
    if (NSS_NoDB_Init(NULL) != SECSuccess) { fprintf(stderr, "NSS init failed\n"); return 1; }
    NSS_SetDomesticPolicy();
    PRFileDesc *tcp = PR_NewTCPSocket();
    PRFileDesc *fd = SSL_ImportFD(NULL, tcp);
    SSLVersionRange vr = {SSL_LIBRARY_VERSION_TLS_1_2, SSL_LIBRARY_VERSION_TLS_1_3};
    SSL_VersionRangeSet(fd, &vr);
    /* Firefox 153 cipher list B, in order */
    static const PRUint16 ff_ciphers[] = {0x1301, 0x1303, 0x1302, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc02c, 0xc030, 0xc00a, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035};
    const PRUint16 *impl = SSL_GetImplementedCiphers();
    for (int i = 0; i < SSL_GetNumImplementedCiphers(); i++) SSL_CipherPrefSet(fd, impl[i], PR_FALSE);
    for (size_t i = 0; i < sizeof ff_ciphers / 2; i++) SSL_CipherPrefSet(fd, ff_ciphers[i], PR_TRUE);
    SECStatus so = SSL_CipherSuiteOrderSet(fd, ff_ciphers, sizeof ff_ciphers / 2);
    static const SSLNamedGroup groups[] = {ssl_grp_ec_curve25519, ssl_grp_ec_secp256r1, ssl_grp_ec_secp384r1, ssl_grp_ec_secp521r1, ssl_grp_ffdhe_2048, ssl_grp_ffdhe_3072};
    SECStatus sg = SSL_NamedGroupConfig(fd, groups, 6);
    SSL_SendAdditionalKeyShares(fd, 1);
    static const SSLSignatureScheme sigs[] = {ssl_sig_ecdsa_secp256r1_sha256, ssl_sig_ecdsa_secp384r1_sha384, ssl_sig_ecdsa_secp521r1_sha512,
        ssl_sig_rsa_pss_rsae_sha256, ssl_sig_rsa_pss_rsae_sha384, ssl_sig_rsa_pss_rsae_sha512, ssl_sig_rsa_pkcs1_sha256, ssl_sig_rsa_pkcs1_sha384,
        ssl_sig_rsa_pkcs1_sha512, ssl_sig_ecdsa_sha1, ssl_sig_rsa_pkcs1_sha1};
    SECStatus ss = SSL_SignatureSchemePrefSet(fd, sigs, 11);
    static const unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1', 2, 'h', '2'}; /* NSS moves the first entry last */
    SSL_SetNextProtoNego(fd, alpn, sizeof alpn);
    SSL_OptionSet(fd, SSL_ENABLE_SESSION_TICKETS, PR_TRUE);
    SSL_OptionSet(fd, SSL_ENABLE_OCSP_STAPLING, PR_TRUE);
    SSL_OptionSet(fd, SSL_ENABLE_SIGNED_CERT_TIMESTAMPS, PR_TRUE);
    SSL_OptionSet(fd, SSL_ENABLE_EXTENDED_MASTER_SECRET, PR_TRUE);
    SSL_OptionSet(fd, SSL_ENABLE_RENEGOTIATION, SSL_RENEGOTIATE_REQUIRES_XTN);
    SSL_OptionSet(fd, SSL_ENABLE_DELEGATED_CREDENTIALS, PR_TRUE);
    SSL_OptionSet(fd, SSL_RECORD_SIZE_LIMIT, 16385);
    SSL_OptionSet(fd, SSL_ENABLE_TLS13_COMPAT_MODE, PR_TRUE);
    SSL_OptionSet(fd, SSL_ENABLE_ALPN, PR_TRUE);
    SECStatus eg = SSL_EnableTls13GreaseEch(fd, PR_TRUE);
    SECStatus hk = SSL_InstallExtensionHooks(fd, 27, cc_writer, NULL, cc_handler, NULL);
    SECStatus hk2 = SSL_InstallExtensionHooks(fd, 0x0a0a, grease_writer, NULL, cc_handler, NULL);
    SECStatus hk3 = getenv("HOOK_FF01") ? SSL_InstallExtensionHooks(fd, 0xff01, rsl_writer, NULL, cc_handler, NULL) : 99;
    fprintf(stderr, "NSS %s: cipher_order=%d groups=%d sigalgs=%d ech_grease=%d hook27=%d hook0a0a=%d hook_ff01(native)=%d\n",
            NSS_GetVersion(), so, sg, ss, eg, hk, hk2, hk3);
    if (getenv("NO_GREASE_HOOK")) SSL_InstallExtensionHooks(fd, 0x0a0a, NULL, NULL, NULL, NULL);
    SSL_AuthCertificateHook(fd, auth_ok, NULL);
    if (sni) SSL_SetURL(fd, sni);
    SSL_ResetHandshake(fd, PR_FALSE);
    PRNetAddr addr; PR_StringToNetAddr("127.0.0.1", &addr); PR_InitializeNetAddr(PR_IpAddrNull, port, &addr); PR_StringToNetAddr("127.0.0.1", &addr);
    addr.inet.port = PR_htons(port);
    if (PR_Connect(fd, &addr, PR_SecondsToInterval(5)) != PR_SUCCESS) { fprintf(stderr, "connect failed\n"); return 1; }
    if (SSL_ForceHandshake(fd) == SECSuccess) {
        SSLChannelInfo info; SSL_GetChannelInfo(fd, &info, sizeof info);
        unsigned char proto[32]; unsigned int plen = 0; SSLNextProtoState st;
        SSL_GetNextProto(fd, &st, proto, &plen, sizeof proto);
        fprintf(stderr, "handshake OK: version %04x cipher %04x alpn=%.*s\n", info.protocolVersion, info.cipherSuite, plen, proto);
    } else fprintf(stderr, "handshake failed: %d\n", PR_GetError());
    PR_Close(fd);
    NSS_Shutdown();
    return 0;
}
