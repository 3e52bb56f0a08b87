import PosternLinkSpec
import TransportBase

/// obfs4's argument rules (obfs4proxy 0.0.14's doc/obfs4-spec.txt and lyrebird v0.5.0's transports/obfs4): the one implementation behind both the
/// bridge-line check (PosternLinkSpec's line parser asks for it through the rulebook) and
/// `Obfs4BridgeConfiguration(arguments:)`, which reads tor's SOCKS arguments at dial time.
public struct Obfs4ArgumentRules: BridgeArgumentRules {
    public init() {}

    public var transport: TransportName { .obfs4 }
    /// obfs4 connects to the bridge address itself.
    public var acceptsHostNameAddress: Bool { false }

    public func review(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) {
        _ = try Self.configuration(&review)
    }

    /// Checks the arguments and returns them typed. A padded cert (`...==`) is normalised to the
    /// unpadded form in `review.arguments`.
    static func configuration(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) -> Obfs4BridgeConfiguration {
        review.warnAboutUnknownKeys(known: ["cert", "iat-mode", "node-id", "public-key"])
        let nodeID: [UInt8]
        let publicKey: [UInt8]
        if let cert = review["cert"] {
            // Go's decoder rejects a cert that still carries `==` and gets another `==` added, so
            // tolerate padding here and keep the canonical unpadded form.
            var body = Substring(cert)
            while body.hasSuffix("=") { body = body.dropLast() }
            guard body.utf8.count == 70, let decoded = BridgeArgumentSyntax.decodeBase64(body), decoded.count == 52 else {
                throw BridgeArgumentProblem(.badCert, key: "cert", "an obfs4 cert is 70 characters of base64 that decode to 52 bytes")
            }
            if body.utf8.count != cert.utf8.count { review.normalize("cert", to: String(body)) }
            if review["node-id"] != nil || review["public-key"] != nil {
                review.warn(.legacyKeysIgnored, key: nil, "the line has cert= and also the older node-id=/public-key=; obfs4 uses cert")
            }
            nodeID = Array(decoded[0..<20])
            publicKey = Array(decoded[20..<52])
        } else {
            guard let nodeIDText = review["node-id"], let publicKeyText = review["public-key"] else {
                throw BridgeArgumentProblem(.missingCert, key: "cert", "an obfs4 bridge needs cert= (or the older node-id= and public-key=)")
            }
            guard nodeIDText.utf8.count == 40, let nodeIDBytes = Obfs4BridgeConfiguration.decodeHex(nodeIDText) else {
                throw BridgeArgumentProblem(.badNodeID, key: "node-id", "node-id is 40 hexadecimal characters")
            }
            guard publicKeyText.utf8.count == 64, let publicKeyBytes = Obfs4BridgeConfiguration.decodeHex(publicKeyText) else {
                throw BridgeArgumentProblem(.badPublicKey, key: "public-key", "public-key is 64 hexadecimal characters")
            }
            nodeID = nodeIDBytes
            publicKey = publicKeyBytes
        }
        guard let iatText = review["iat-mode"] else {
            throw BridgeArgumentProblem(.missingIATMode, key: "iat-mode", "an obfs4 bridge needs iat-mode=0, 1 or 2 (the obfs4 client refuses a line without it)")
        }
        guard let iatMode = Obfs4IATMode(exactly: iatText) else {
            throw BridgeArgumentProblem(.badIATMode, key: "iat-mode", "iat-mode must be 0, 1 or 2")
        }
        // The lengths are checked above, so the identity's own length check cannot fail.
        guard let identity = try? Obfs4ServerIdentity(nodeID: nodeID, publicKey: publicKey) else {
            throw BridgeArgumentProblem(.badCert, key: "cert", "the node ID or public key has the wrong length")
        }
        return Obfs4BridgeConfiguration(identity: identity, iatMode: iatMode)
    }
}
