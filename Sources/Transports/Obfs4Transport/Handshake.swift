// The obfs4 client handshake (spec §4–§7). What the server sends us:
//
//   Y'(32, Elligator2 representative) | AUTH(32) | P_S (0…8096 random bytes) | M_S(16) | MAC_S(16) | frames…
//   M_S   = HMAC-SHA256-128(B | NODEID, Y')                     found by searching from byte 64
//   MAC_S = HMAC-SHA256-128(B | NODEID, Y' | AUTH | P_S | M_S | E)   E = epoch hour, ASCII
//
// The rule for this decoder, as for every decoder of network input in Postern: no byte from the
// peer may trap, hang or grow memory without a stated cap. The server picks no number we compute
// with: P_S's length is only ever found by searching for M_S, and only within the first
// `maximumHandshakeLength` (8192) bytes; a reply without a mark there is a typed error
// (`obfs4ServerMarkNotFound`). The reader holds at most 8192 bytes plus one read; the wait for
// them is bounded by `Obfs4Transport.handshakeTimeout`.
import PosternCrypto
import Glibc
import PosternSystem
import TransportBase

extension TransportError.Code {
    public static let obfs4ServerMACMismatch = Self(rawValue: "obfs4-server-mac-mismatch")
    public static let obfs4ServerMarkNotFound = Self(rawValue: "obfs4-server-mark-not-found")
    public static let obfs4HandshakeTimeout = Self(rawValue: "obfs4-handshake-timeout")
    public static let obfs4ServerClosed = Self(rawValue: "obfs4-server-closed-during-handshake")
}

/// A bridge's static identity: NODEID (20 random bytes, not the RSA fingerprint) and the X25519
/// identity public key B.
public struct Obfs4ServerIdentity: Sendable, Hashable {
    public let nodeID: [UInt8]
    public let publicKey: [UInt8]

    public init(nodeID: [UInt8], publicKey: [UInt8]) throws(TransportError) {
        guard nodeID.count == 20 else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "node-id: must be 20 bytes")
        }
        guard publicKey.count == 32 else {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "public-key: must be 32 bytes")
        }
        self.nodeID = nodeID
        self.publicKey = publicKey
    }

    /// The key for every mark and MAC: B | NODEID (B first).
    package var hmacKey: [UInt8] { publicKey + nodeID }
}

/// The client side of the obfs4 handshake (spec §4–§7) as a pure state machine: build the request,
/// then feed it the bytes received so far until it yields session keys.
package struct ClientHandshake: Sendable {
    package static let maximumHandshakeLength = 8192
    package static let minimumClientPadding = 77     // (96 + 45) − 64; the written spec's 85 is also fine
    static let maximumClientPadding = 8128   // 8192 − 64
    static let markLength = 16
    static let macLength = 16
    static let representativeLength = 32
    static let authLength = 32
    package static let serverMinimumLength = representativeLength + authLength + markLength + macLength  // 96

    package struct Outcome: Sendable {
        /// 144 bytes: [0,72) client→server, [72,144) server→client.
        package let keyMaterial: [UInt8]
        /// Bytes after MAC_S: the start of the framed stream (the inline seed frame first).
        package let remainder: [UInt8]
    }

    let identity: Obfs4ServerIdentity
    package let keyPair: RepresentableKeyPair
    /// floor(unix time / 3600) in ASCII decimal; not sent, reused to check the server's MAC.
    let epochHour: [UInt8]
    let padding: [UInt8]

    package init(identity: Obfs4ServerIdentity, keyPair: RepresentableKeyPair, padding: [UInt8], epochHour: String) {
        precondition(padding.count >= Self.minimumClientPadding && padding.count <= Self.maximumClientPadding)
        self.identity = identity
        self.keyPair = keyPair
        self.padding = padding
        self.epochHour = Array(epochHour.utf8)
    }

    /// Random padding length in [77, 8128] and the current epoch hour.
    static func random(identity: Obfs4ServerIdentity, keyPair: RepresentableKeyPair, now: Double) -> ClientHandshake {
        let length = minimumClientPadding + Int(SecureRandom.uniform(UInt32(maximumClientPadding - minimumClientPadding + 1)))
        let hour = Int64((now / 3600).rounded(.down))
        return ClientHandshake(identity: identity, keyPair: keyPair, padding: SecureRandom.bytes(length), epochHour: String(hour))
    }

    private func hmac128(_ parts: [UInt8]...) -> [UInt8] {
        Array(Digest.hmacSHA256(key: identity.hmacKey, parts: parts).prefix(16))
    }

    /// X' | P_C | M_C | MAC_C, sent with one write; nothing may follow until the server is verified.
    func request() -> [UInt8] {
        let mark = hmac128(keyPair.representative)
        let mac = hmac128(keyPair.representative, padding, mark, epochHour)
        return keyPair.representative + padding + mark + mac
    }

    /// Verifies the server's response. Returns nil while more bytes are needed.
    package func parseResponse(_ buffer: [UInt8]) throws(TransportError) -> Outcome? {
        var searchFrom = 0
        return try parseResponse(buffer, resumingAt: &searchFrom)
    }

    /// The same, searching for the mark from `searchFrom` (earlier positions held no mark, so the
    /// result is the same as a search from the start). On "need more" `searchFrom` moves to the
    /// first position that may still begin a mark, so feeding a reply a byte at a time costs no
    /// more than feeding it whole.
    func parseResponse(_ buffer: [UInt8], resumingAt searchFrom: inout Int) throws(TransportError) -> Outcome? {
        var serverMark: [UInt8]?
        return try parseResponse(buffer, resumingAt: &searchFrom, serverMark: &serverMark)
    }

    /// The same, keeping the mark (an HMAC of the first 32 bytes) in `serverMark` once computed, so
    /// a reply dripped a byte at a time costs one HMAC, not one per read.
    func parseResponse(_ buffer: [UInt8], resumingAt searchFrom: inout Int,
                       serverMark cachedMark: inout [UInt8]?) throws(TransportError) -> Outcome? {
        guard buffer.count >= Self.serverMinimumLength else { return nil }
        let serverRepresentative = Array(buffer[0..<32])
        let serverAuth = Array(buffer[32..<64])
        let serverMark = cachedMark ?? hmac128(serverRepresentative)
        cachedMark = serverMark
        let windowEnd = min(buffer.count, Self.maximumHandshakeLength)
        let searchStart = max(Self.representativeLength + Self.authLength, searchFrom)
        let found = Self.firstIndex(of: serverMark, in: buffer, from: searchStart, to: windowEnd)
        guard let position = found, position + Self.markLength + Self.macLength <= windowEnd else {
            if buffer.count >= Self.maximumHandshakeLength {
                throw TransportError(code: .obfs4ServerMarkNotFound, kind: .protocolViolation,
                                     message: "the server's handshake has no valid mark within 8192 bytes")
            }
            searchFrom = found ?? max(searchStart, windowEnd - Self.markLength + 1)
            return nil
        }
        let expectedMAC = hmac128(Array(buffer[0..<position + Self.markLength]), epochHour)
        let receivedMAC = buffer[(position + Self.markLength)..<(position + Self.markLength + Self.macLength)]
        guard Sodium.constantTimeEqual(expectedMAC, receivedMAC) else {
            throw TransportError(code: .obfs4ServerMACMismatch, kind: .protocolViolation,
                                 message: "the server's handshake MAC does not verify")
        }
        let serverPublic = Elligator2.decode(representative: serverRepresentative)
        let ntor = try Obfs4Ntor.client(clientSecret: keyPair.secretKey, clientPublic: keyPair.publicKey,
                                        serverPublic: serverPublic, identityKey: identity.publicKey, nodeID: identity.nodeID)
        guard Sodium.constantTimeEqual(ntor.auth, serverAuth) else {
            throw TransportError(code: .obfs4AuthMismatch, kind: .protocolViolation,
                                 message: "ntor AUTH mismatch (wrong cert, or a bridge that decodes representatives differently)")
        }
        return Outcome(keyMaterial: Obfs4Ntor.expand(keySeed: ntor.keySeed),
                       remainder: Array(buffer[(position + Self.markLength + Self.macLength)...]))
    }

    /// The first position in `start..<end` where `needle` begins. libc's memchr finds each candidate
    /// first byte and memcmp checks it: a server may pad its reply to 8192 bytes, and a byte-by-byte
    /// Swift loop made every read of such a reply a scan the fuzzer (and a slow client) felt.
    package static func firstIndex(of needle: [UInt8], in haystack: [UInt8], from start: Int, to end: Int) -> Int? {
        guard let first = needle.first, start >= 0, end <= haystack.count, end - start >= needle.count else { return nil }
        return haystack.withUnsafeBufferPointer { hay -> Int? in
            needle.withUnsafeBufferPointer { pin -> Int? in
                guard let base = hay.baseAddress, let pattern = pin.baseAddress else { return nil }
                let lastStart = end - pin.count
                var position = start
                while position <= lastStart {
                    guard let hit = memchr(base + position, Int32(first), lastStart - position + 1) else { return nil }
                    let index = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(base + index, pattern, pin.count) == 0 { return index }
                    position = index + 1
                }
                return nil
            }
        }
    }
}

/// The client's side of the handshake over a byte stream: what `Obfs4Transport` runs on the
/// socket, and the `Obfs4ClientHandshakeFuzzer` target (Fuzz/Obfs4Harnesses) on arbitrary reads. Holds at most
/// ``ClientHandshake/maximumHandshakeLength`` bytes plus the last read.
package struct ClientHandshakeReader: Sendable {
    let handshake: ClientHandshake
    package private(set) var received: [UInt8] = []
    private var searchFrom = 0
    private var serverMark: [UInt8]?

    package init(handshake: ClientHandshake) { self.handshake = handshake }

    /// One read from the server: the session keys once the reply verifies, nil while more is
    /// needed; throws (typed) on a reply that cannot verify.
    package mutating func feed(_ bytes: some Collection<UInt8>) throws(TransportError) -> ClientHandshake.Outcome? {
        received.append(contentsOf: bytes)
        return try handshake.parseResponse(received, resumingAt: &searchFrom, serverMark: &serverMark)
    }
}
