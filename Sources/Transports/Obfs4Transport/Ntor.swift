import PosternCrypto
import TransportBase
import PosternSystem

extension TransportError.Code {
    public static let obfs4AuthMismatch = Self(rawValue: "obfs4-ntor-auth-mismatch")
}

/// obfs4's variant of ntor (spec §7). It is not tor's ntor: the suffix is B|B|X|Y|PROTOID|ID and
/// the auth input keeps X before Y.
package enum Obfs4Ntor {
    static let protocolID = Array("ntor-curve25519-sha256-1".utf8)
    static let macKey = protocolID + Array(":mac".utf8)
    static let extractKey = protocolID + Array(":key_extract".utf8)
    static let verifyKey = protocolID + Array(":key_verify".utf8)
    static let expandInfo = protocolID + Array(":key_expand".utf8)
    static let keyMaterialLength = 144

    package struct Result {
        package let keySeed: [UInt8]
        package let auth: [UInt8]
    }

    /// Computes KEY_SEED and AUTH from the two DH results and the public transcript.
    static func derive(exp1: [UInt8], exp2: [UInt8], identityKey: [UInt8], nodeID: [UInt8],
                       clientPublic: [UInt8], serverPublic: [UInt8]) -> Result {
        let suffix = identityKey + identityKey + clientPublic + serverPublic + protocolID + nodeID
        let secretInput = exp1 + exp2 + suffix
        let keySeed = Digest.hmacSHA256(key: extractKey, secretInput)
        let verify = Digest.hmacSHA256(key: verifyKey, secretInput)
        let auth = Digest.hmacSHA256(key: macKey, verify, suffix, Array("Server".utf8))
        return Result(keySeed: keySeed, auth: auth)
    }

    /// Client side: EXP1 = X25519(x, Y), EXP2 = X25519(x, B). All-zero results are errors.
    static func client(clientSecret: [UInt8], clientPublic: [UInt8], serverPublic: [UInt8],
                       identityKey: [UInt8], nodeID: [UInt8]) throws(TransportError) -> Result {
        let exp1 = try Sodium.x25519(scalar: clientSecret, point: serverPublic)
        let exp2 = try Sodium.x25519(scalar: clientSecret, point: identityKey)
        return derive(exp1: exp1, exp2: exp2, identityKey: identityKey, nodeID: nodeID,
                      clientPublic: clientPublic, serverPublic: serverPublic)
    }

    /// Server side (used by tests, the fuzz harnesses and the local old-bridge model): EXP1 = X25519(y, X), EXP2 = X25519(b, X).
    package static func server(serverSecret: [UInt8], serverPublic: [UInt8], identitySecret: [UInt8], identityKey: [UInt8],
                       nodeID: [UInt8], clientPublic: [UInt8]) throws(TransportError) -> Result {
        let exp1 = try Sodium.x25519(scalar: serverSecret, point: clientPublic)
        let exp2 = try Sodium.x25519(scalar: identitySecret, point: clientPublic)
        return derive(exp1: exp1, exp2: exp2, identityKey: identityKey, nodeID: nodeID,
                      clientPublic: clientPublic, serverPublic: serverPublic)
    }

    /// The 144 bytes of session key material: [0,72) client→server, [72,144) server→client.
    package static func expand(keySeed: [UInt8]) -> [UInt8] {
        Digest.hkdfSHA256(inputKeyMaterial: keySeed, salt: extractKey, info: expandInfo, length: keyMaterialLength)
    }
}
