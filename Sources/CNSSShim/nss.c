// NSS initialised once per process, and the experimental calls as plain functions.
#include "cnssshim.h"
#include <cert.h>
#include <nss.h>
#include <prerror.h>
#include <pthread.h>
#include <ssl.h>
#include <sslexp.h>
#include <string.h>

static pthread_once_t initialize_once = PTHREAD_ONCE_INIT;
static const char *initialize_result = "NSS was not initialised";

static void initialize(void) {
    // No databases: Postern verifies server certificates itself with OpenSSL against the system
    // trust store, so NSS needs neither a certificate DB nor its built-in roots module. The
    // context is kept for the life of the process (NSS_InitContext counts its users, so another
    // NSS user in the process is not disturbed).
    NSSInitContext *context = NSS_InitContext("", "", "", "", NULL,
                                              NSS_INIT_READONLY | NSS_INIT_NOCERTDB | NSS_INIT_NOMODDB
                                              | NSS_INIT_FORCEOPEN | NSS_INIT_NOROOTINIT | NSS_INIT_OPTIMIZESPACE);
    if (context == NULL) { initialize_result = "NSS could not be initialised"; return; }
    if (NSS_SetDomesticPolicy() != SECSuccess) { initialize_result = "NSS refused its cipher policy"; return; }
    initialize_result = NULL;
}

const char *postern_nss_initialize(void) {
    pthread_once(&initialize_once, initialize);
    return initialize_result;
}

SECStatus postern_nss_set_cipher_order(PRFileDesc *socket, const PRUint16 *suites, unsigned int count) {
    return SSL_CipherSuiteOrderSet(socket, suites, count);
}

SECStatus postern_nss_enable_ech_grease(PRFileDesc *socket, PRBool enabled) {
    return SSL_EnableTls13GreaseEch(socket, enabled);
}

SECStatus postern_nss_set_resumption_token_callback(PRFileDesc *socket,
                                                    SECStatus (*callback)(PRFileDesc *, const PRUint8 *, unsigned int, void *),
                                                    void *context) {
    return SSL_SetResumptionTokenCallback(socket, callback, context);
}

SECStatus postern_nss_set_resumption_token(PRFileDesc *socket, const uint8_t *token, unsigned int count) {
    return SSL_SetResumptionToken(socket, token, count);
}

int64_t postern_nss_resumption_token_expiry(const uint8_t *token, unsigned int count) {
    SSLResumptionTokenInfo info;
    memset(&info, 0, sizeof info);
    if (SSL_GetResumptionTokenInfo(token, count, &info, sizeof info) != SECSuccess) return 0;
    int64_t expiry = info.expirationTime;
    SSL_DestroyResumptionTokenInfo(&info);
    return expiry;
}

long postern_nss_copy_peer_chain(PRFileDesc *socket, uint8_t *out, size_t capacity) {
    CERTCertList *chain = SSL_PeerCertificateChain(socket);
    if (chain == NULL) return -1;
    size_t used = 0;
    long result = 0;
    for (CERTCertListNode *node = CERT_LIST_HEAD(chain); !CERT_LIST_END(node, chain); node = CERT_LIST_NEXT(node)) {
        const SECItem *der = &node->cert->derCert;
        if (capacity - used < 4 || der->len > capacity - used - 4) { result = -2; break; }
        out[used] = (uint8_t)(der->len >> 24);
        out[used + 1] = (uint8_t)(der->len >> 16);
        out[used + 2] = (uint8_t)(der->len >> 8);
        out[used + 3] = (uint8_t)der->len;
        memcpy(out + used + 4, der->data, der->len);
        used += 4 + der->len;
    }
    CERT_DestroyCertList(chain);
    return result < 0 ? result : (long)used;
}
