// A WebRTC identity made with NSS the way a browser on NSS makes one per peer connection: the
// shape (name, serial, validity, no extensions) is what docs/FINGERPRINTS.md measured on
// firefox-esr's DTLS server flight.
#include "cnssshim.h"
#include "cnssshim_datagram.h"
#include <cryptohi.h>
#include <keyhi.h>
#include <nss.h>
#include <pk11pub.h>
#include <secder.h>
#include <secasn1.h>
#include <secoid.h>
#include <stdio.h>
#include <string.h>

const uint8_t *postern_nss_certificate_der(const CERTCertificate *certificate, size_t *count) {
    *count = certificate->derCert.len;
    return certificate->derCert.data;
}

/// Generates the key pair on the internal slot: session objects (never stored), sensitive.
static SECKEYPrivateKey *generate_p256_key(PK11SlotInfo *slot, SECKEYPublicKey **public_key) {
    SECOidData *curve = SECOID_FindOIDByTag(SEC_OID_SECG_EC_SECP256R1);
    if (curve == NULL || curve->oid.len > 30) return NULL;
    // The curve as an encoded OBJECT IDENTIFIER (tag, length, bytes): NSS's EC parameters.
    uint8_t encoded[32];
    encoded[0] = SEC_ASN1_OBJECT_ID;
    encoded[1] = (uint8_t)curve->oid.len;
    memcpy(encoded + 2, curve->oid.data, curve->oid.len);
    SECItem parameters = { siBuffer, encoded, curve->oid.len + 2 };
    return PK11_GenerateKeyPair(slot, CKM_EC_KEY_PAIR_GEN, &parameters, public_key, PR_FALSE, PR_TRUE, NULL);
}

/// "CN=" and 16 random bytes as lower-case hex.
static CERTName *random_common_name(PK11SlotInfo *slot) {
    uint8_t random[16];
    if (PK11_GenerateRandomOnSlot(slot, random, sizeof random) != SECSuccess) return NULL;
    char text[3 + 2 * sizeof random + 1] = "CN=";
    for (size_t i = 0; i < sizeof random; i++) snprintf(text + 3 + 2 * i, 3, "%02x", random[i]);
    return CERT_AsciiToName(text);
}

int postern_nss_webrtc_identity(CERTCertificate **certificate_out, SECKEYPrivateKey **key_out) {
    *certificate_out = NULL;
    *key_out = NULL;
    if (postern_nss_initialize() != NULL) return 0;
    PK11SlotInfo *slot = PK11_GetInternalSlot();
    if (slot == NULL) return 0;

    int ok = 0;
    SECKEYPublicKey *public_key = NULL;
    SECKEYPrivateKey *private_key = NULL;
    CERTName *name = NULL;
    CERTSubjectPublicKeyInfo *spki = NULL;
    CERTCertificateRequest *request = NULL;
    CERTValidity *validity = NULL;
    CERTCertificate *unsigned_certificate = NULL;
    CERTCertificate *certificate = NULL;

    private_key = generate_p256_key(slot, &public_key);
    if (private_key == NULL) goto done;
    name = random_common_name(slot);
    if (name == NULL) goto done;
    spki = SECKEY_CreateSubjectPublicKeyInfo(public_key);
    if (spki == NULL) goto done;
    request = CERT_CreateCertificateRequest(name, spki, NULL);
    if (request == NULL) goto done;
    // A day back (clock skew) and 30 ahead: 31 days, as measured.
    const PRTime day = (PRTime)PR_USEC_PER_SEC * 60 * 60 * 24;
    PRTime now = PR_Now();
    validity = CERT_CreateValidity(now - day, now + 30 * day);
    if (validity == NULL) goto done;
    // CERT_CreateCertificate encodes the serial from its low 32 bits (DER_SetUInteger): 4 bytes,
    // 5 when the top bit is set, fewer when the top bytes are zero.
    uint32_t serial;
    if (PK11_GenerateRandomOnSlot(slot, (unsigned char *)&serial, sizeof serial) != SECSuccess) goto done;
    // Issuer = subject (self-signed); no extensions are added.
    unsigned_certificate = CERT_CreateCertificate(serial, name, validity, request);
    if (unsigned_certificate == NULL) goto done;
    PLArenaPool *arena = unsigned_certificate->arena;
    if (SECOID_SetAlgorithmID(arena, &unsigned_certificate->signature, SEC_OID_ANSIX962_ECDSA_SHA256_SIGNATURE, NULL) != SECSuccess)
        goto done;
    if (unsigned_certificate->version.data == NULL || unsigned_certificate->version.len < 1) goto done;
    unsigned_certificate->version.data[0] = SEC_CERTIFICATE_VERSION_3;
    unsigned_certificate->version.len = 1;
    SECItem to_be_signed = { siBuffer, NULL, 0 };
    if (SEC_ASN1EncodeItem(arena, &to_be_signed, unsigned_certificate, SEC_ASN1_GET(CERT_CertificateTemplate)) == NULL) goto done;
    SECItem signed_der = { siBuffer, NULL, 0 };
    if (SEC_DerSignData(arena, &signed_der, to_be_signed.data, (int)to_be_signed.len, private_key,
                        SEC_OID_ANSIX962_ECDSA_SHA256_SIGNATURE) != SECSuccess) goto done;
    // Decoded again into a certificate NSS's SSL code can use (a temporary one, in no database).
    certificate = CERT_NewTempCertificate(CERT_GetDefaultCertDB(), &signed_der, NULL, PR_FALSE, PR_TRUE);
    if (certificate == NULL) goto done;
    *certificate_out = certificate;
    *key_out = private_key;
    private_key = NULL;
    ok = 1;

done:
    if (unsigned_certificate != NULL) CERT_DestroyCertificate(unsigned_certificate);
    if (validity != NULL) CERT_DestroyValidity(validity);
    if (request != NULL) CERT_DestroyCertificateRequest(request);
    if (spki != NULL) SECKEY_DestroySubjectPublicKeyInfo(spki);
    if (name != NULL) CERT_DestroyName(name);
    if (public_key != NULL) SECKEY_DestroyPublicKey(public_key);
    if (private_key != NULL) SECKEY_DestroyPrivateKey(private_key);
    PK11_FreeSlot(slot);
    return ok;
}
