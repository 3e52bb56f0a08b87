import Obfs4Transport
import PosternCrypto
import TransportBase

/// Drives the client handshake's response parser with fuzzer-chosen input (used by the
/// `Obfs4HandshakeFuzzer` libFuzzer target). The handshake types it drives are `package` API of
/// Obfs4Transport, out of the library's public API.
///
/// A random response almost never carries a valid mark and MAC, so most inputs are turned into a
/// response by a server model that knows the bridge's keys: it signs fuzzer-chosen fields correctly,
/// or answers with a real ntor handshake, and the harness traps when the client's verdict is wrong:
/// - fewer than 96 bytes, or no mark yet within 8192 bytes: "need more" (nil), never an error;
///   8192 bytes without a mark: an error, never "need more";
/// - a correctly marked and MACed response never fails with "no mark" or "bad MAC", and one flipped
///   MAC bit always fails with "bad MAC";
/// - a real server handshake yields exactly the server's key material and the bytes after the MAC;
/// - Elligator2: a derived key pair's representative decodes to its public key.
package enum Obfs4HandshakeFuzzHarness {
    /// The bridge: identity key pair and node ID, fixed so that crashes replay.
    private static let nodeID = (0..<20).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    private static let identitySecret = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
    private static let identity: Obfs4ServerIdentity = {
        let publicKey = try! Sodium.x25519Base(scalar: identitySecret)
        return try! Obfs4ServerIdentity(nodeID: nodeID, publicKey: publicKey)
    }()
    private static let epochHour = "493827"

    /// The first of the seeds 0, 1, 2… whose key pair has a representative.
    private static func keyPair(from start: UInt8) -> RepresentableKeyPair {
        var seed = start
        while true {
            if let pair = try! RepresentableKeyPair.derive(fromSeed: [UInt8](repeating: seed, count: 32)) { return pair }
            seed &+= 1
        }
    }
    private static let client = ClientHandshake(identity: identity, keyPair: keyPair(from: 0),
                                                padding: [UInt8](repeating: 0x55, count: ClientHandshake.minimumClientPadding),
                                                epochHour: epochHour)

    private static func hmac128(_ parts: [UInt8]...) -> [UInt8] {
        Array(Digest.hmacSHA256(key: identity.hmacKey, parts: parts).prefix(16))
    }

    private static func verdict(_ bytes: [UInt8]) -> Result<ClientHandshake.Outcome?, TransportError> {
        do throws(TransportError) { return .success(try client.parseResponse(bytes)) } catch { return .failure(error) }
    }

    package static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        guard let mode = bytes.first else { return }
        let body = Array(bytes.dropFirst())
        switch mode % 4 {
        case 0: arbitrary(body)
        case 1: signed(body, real: false)
        case 2: signed(body, real: true)
        default: elligator(body)
        }
    }

    /// Raw bytes as the server's response.
    private static func arbitrary(_ response: [UInt8]) {
        switch verdict(response) {
        case .success(nil):
            precondition(response.count < ClientHandshake.maximumHandshakeLength, "no verdict after 8192 bytes")
        case .success:
            break
        case .failure(let error):
            precondition(response.count >= ClientHandshake.serverMinimumLength, "an error before 96 bytes: \(error.code)")
            if error.code == .obfs4ServerMarkNotFound {
                precondition(response.count >= ClientHandshake.maximumHandshakeLength, "gave up on the mark before 8192 bytes")
            }
        }
    }

    /// Y' | AUTH | P_S | M_S | MAC_S | trailing, with a correct mark and MAC. With `real`, Y' and AUTH
    /// come from an ntor server run with the bridge's keys (a full successful handshake).
    private static func signed(_ body: [UInt8], real: Bool) {
        var cursor = 0
        func take(_ count: Int) -> [UInt8] {
            let end = min(body.count, cursor + count)
            defer { cursor = end }
            return Array(body[cursor..<end])
        }
        let lengthBytes = take(2) + [0, 0]
        let paddingLength = (Int(lengthBytes[0]) << 8 | Int(lengthBytes[1])) % (ClientHandshake.maximumHandshakeLength - ClientHandshake.serverMinimumLength + 1)
        let flip = take(1).first
        var representative = take(32)
        representative += [UInt8](repeating: 0, count: 32 - representative.count)
        var auth = take(32)
        auth += [UInt8](repeating: 0, count: 32 - auth.count)
        var expectedKeys: [UInt8]?
        if real {
            let server = keyPair(from: representative[0])
            representative = server.representative
            let result = try! Obfs4Ntor.server(serverSecret: server.secretKey, serverPublic: server.publicKey,
                                               identitySecret: identitySecret, identityKey: identity.publicKey,
                                               nodeID: nodeID, clientPublic: client.keyPair.publicKey)
            auth = result.auth
            expectedKeys = Obfs4Ntor.expand(keySeed: result.keySeed)
        }
        let padding = (take(paddingLength) + [UInt8](repeating: 0xA5, count: paddingLength)).prefix(paddingLength)
        let trailing = take(body.count)
        let mark = hmac128(representative)
        // A mark that also occurs earlier (in the fuzzer's padding) is found there first: legitimately
        // a MAC failure, so such inputs prove nothing either way.
        let head = representative + auth + Array(padding)
        guard ClientHandshake.firstIndex(of: mark, in: head + mark, from: 64, to: head.count + mark.count - 1) == nil else { return }
        let mac = hmac128(head + mark, Array(epochHour.utf8))
        let response = head + mark + mac + trailing

        // Every proper prefix up to the MAC's end is "need more".
        for cut in [0, 95, head.count, head.count + 16, head.count + 31] where cut < head.count + 32 {
            guard case .success(nil) = verdict(Array(response.prefix(cut))) else {
                preconditionFailure("a prefix of a valid response got a verdict (cut \(cut))")
            }
        }
        switch verdict(response) {
        case .success(let outcome?):
            precondition(outcome.remainder == trailing, "the bytes after the MAC were not handed on intact")
            if let expectedKeys { precondition(outcome.keyMaterial == expectedKeys, "client and server keys differ") }
        case .success(nil):
            preconditionFailure("a complete response within 8192 bytes got no verdict")
        case .failure(let error):
            precondition(expectedKeys == nil, "a real server handshake failed: \(error.code)")
            precondition(error.code != .obfs4ServerMarkNotFound && error.code != .obfs4ServerMACMismatch,
                         "a correctly marked and MACed response failed with \(error.code)")
        }
        if let flip {
            var tampered = response
            tampered[head.count + 16 + Int(flip % 16)] ^= 1 << (flip / 16 % 8)
            guard case .failure(let error) = verdict(tampered), error.code == .obfs4ServerMACMismatch else {
                preconditionFailure("a response with a flipped MAC bit was not rejected for its MAC")
            }
        }
    }

    /// derive(seed) → decode(representative) == public key.
    private static func elligator(_ body: [UInt8]) {
        guard body.count >= 32 else { return }
        let seed = Array(body.prefix(32))
        let clear = body.count > 32 && body[32] & 1 == 1
        guard let pair = try! RepresentableKeyPair.derive(fromSeed: seed, clearTweakBit254: clear) else { return }
        precondition(Elligator2.decode(representative: pair.representative) == pair.publicKey,
                     "a representative does not decode to its public key")
        if clear { precondition(pair.representative[31] & 0x40 == 0, "bit 254 not cleared") }
    }
}
