import Obfs4Transport
import PosternCrypto
import TransportBase

/// Drives the client's handshake state machine (``ClientHandshakeReader``, what `Obfs4Transport`
/// runs on the socket) and then the data phase's frame decoder, with fuzzer-chosen server replies
/// split into fuzzer-chosen reads. Used by the `Obfs4ClientHandshakeFuzzer` and
/// `Obfs4ClientSessionFuzzer` libFuzzer targets, over Obfs4Transport's `package` API. The `Obfs4HandshakeFuzzer`
/// target checks the reply parser on whole buffers; these check the machine that feeds it, read by
/// read, and then the data phase.
///
/// Invariants (the harness traps when one breaks):
/// - arbitrary replies: the reader's verdict comes at the same read, and is the same, as the
///   whole-buffer parser's on the bytes up to that read; it never holds 8192 bytes and still waits;
///   a reply shorter than 8192 bytes without a valid mark and MAC is "need more", never an error;
/// - a real server reply (ntor with the bridge's keys, fuzzer-chosen padding and read sizes)
///   completes exactly at the read that carries the last MAC byte, with the server's keys;
/// - the frames after it (fuzzer-chosen payloads and padding, the first ones possibly in the same
///   read as the MAC) decode to exactly those payloads; with one flipped bit, to a prefix of them
///   and then a typed error, never a wrong payload.
package enum Obfs4ClientHandshakeFuzzHarness {
    private static let nodeID = (0..<20).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) }
    private static let identitySecret = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 5) }
    private static let identity: Obfs4ServerIdentity = {
        let publicKey = try! Sodium.x25519Base(scalar: identitySecret)
        return try! Obfs4ServerIdentity(nodeID: nodeID, publicKey: publicKey)
    }()
    private static let epochHour = "493828"

    private static func keyPair(from start: UInt8) -> RepresentableKeyPair {
        var seed = start
        while true {
            if let pair = try! RepresentableKeyPair.derive(fromSeed: [UInt8](repeating: seed, count: 32)) { return pair }
            seed &+= 1
        }
    }

    private static let client = ClientHandshake(identity: identity, keyPair: keyPair(from: 1),
                                                padding: [UInt8](repeating: 0x3C, count: ClientHandshake.minimumClientPadding),
                                                epochHour: epochHour)
    /// The server's half, computed once: every input reuses it (keys are what take time).
    private static let server: (representative: [UInt8], auth: [UInt8], keyMaterial: [UInt8]) = {
        let pair = keyPair(from: 90)
        let result = try! Obfs4Ntor.server(serverSecret: pair.secretKey, serverPublic: pair.publicKey,
                                           identitySecret: identitySecret, identityKey: identity.publicKey,
                                           nodeID: nodeID, clientPublic: client.keyPair.publicKey)
        return (pair.representative, result.auth, Obfs4Ntor.expand(keySeed: result.keySeed))
    }()

    private static func hmac128(_ parts: [UInt8]...) -> [UInt8] {
        Array(Digest.hmacSHA256(key: identity.hmacKey, parts: parts).prefix(16))
    }

    private enum Verdict: Equatable {
        case waiting
        case done(keys: [UInt8], remainder: [UInt8])
        case failed(String)

        init(_ body: () throws(TransportError) -> ClientHandshake.Outcome?) {
            do throws(TransportError) {
                if let outcome = try body() { self = .done(keys: outcome.keyMaterial, remainder: outcome.remainder) } else { self = .waiting }
            } catch {
                self = .failed(error.code.rawValue)
            }
        }
    }

    /// Splits `stream` into reads of fuzzer-chosen sizes (1…256 bytes, the last read takes the rest).
    private static func reads(_ stream: [UInt8], sizes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var pieces: [ArraySlice<UInt8>] = []
        var offset = 0
        var index = sizes.startIndex
        while offset < stream.count {
            guard index < sizes.endIndex else { pieces.append(stream[offset...]); break }
            let size = Int(sizes[index]) + 1
            index += 1
            let end = min(stream.count, offset + size * (size > 200 ? 16 : 1))
            pieces.append(stream[offset..<end])
            offset = end
        }
        return pieces
    }

    /// Input: byte 0 unused (kept so one corpus serves both targets), byte 1 the number of read
    /// sizes, the sizes, then the reply.
    private static func split(_ input: UnsafeRawBufferPointer) -> (sizes: ArraySlice<UInt8>, body: [UInt8])? {
        let bytes = Array(input)
        guard bytes.count >= 2 else { return nil }
        let sizeCount = Int(bytes[1] % 32)
        let sizes = bytes.dropFirst(2).prefix(sizeCount)
        return (sizes, Array(bytes.dropFirst(2 + sizes.count)))
    }

    /// `Obfs4ClientHandshakeFuzzer`: arbitrary replies, read by read. Cheap per input (no key
    /// agreement), so a 60 s run reaches millions.
    package static func runArbitraryReplies(_ input: UnsafeRawBufferPointer) {
        guard let (sizes, body) = split(input) else { return }
        arbitrary(body, sizes: sizes)
    }

    /// `Obfs4ClientSessionFuzzer`: real server replies into the data phase (the first body byte
    /// chooses the flipped bit). Each input costs the client's Elligator2 and two X25519s, so this
    /// target runs separately: mixed into the one above it took most of that target's time.
    package static func runRealServerSessions(_ input: UnsafeRawBufferPointer) {
        guard let (sizes, body) = split(input) else { return }
        realServer(Array(body.dropFirst()), sizes: sizes, flip: body.first ?? 0)
    }

    private static func arbitrary(_ reply: [UInt8], sizes: ArraySlice<UInt8>) {
        var reader = ClientHandshakeReader(handshake: client)
        var fed = 0
        var verdict = Verdict.waiting
        var fedBefore = 0
        for read in reads(reply, sizes: sizes) {
            precondition(reader.received.count < ClientHandshake.maximumHandshakeLength, "the reader held 8192 bytes and still waited")
            fedBefore = fed
            fed += read.count
            verdict = Verdict { () throws(TransportError) in try reader.feed(read) }
            if verdict != .waiting { break }
        }
        // The whole-buffer parser agrees: the same verdict on the bytes up to that read, and
        // "need more" on the bytes before it.
        let reference = Verdict { () throws(TransportError) in try client.parseResponse(Array(reply.prefix(fed))) }
        precondition(verdict == reference, "read by read the reader said \(verdict), the whole-buffer parser \(reference)")
        if verdict != .waiting && fedBefore > 0 {
            let earlier = Verdict { () throws(TransportError) in try client.parseResponse(Array(reply.prefix(fedBefore))) }
            precondition(earlier == .waiting, "the whole-buffer parser had a verdict a read earlier: \(earlier)")
        }
        switch verdict {
        case .waiting:
            precondition(fed < ClientHandshake.maximumHandshakeLength, "no verdict after 8192 bytes")
        case .failed(let code):
            precondition(fed >= ClientHandshake.serverMinimumLength, "an error before 96 bytes")
            if code == TransportError.Code.obfs4ServerMarkNotFound.rawValue {
                precondition(fed >= ClientHandshake.maximumHandshakeLength, "gave up on the mark before 8192 bytes")
            }
        case .done:
            break
        }
    }

    private static func realServer(_ body: [UInt8], sizes: ArraySlice<UInt8>, flip: UInt8) {
        var cursor = 0
        func take(_ count: Int) -> [UInt8] {
            let end = min(body.count, cursor + max(0, count))
            defer { cursor = end }
            return Array(body[cursor..<end])
        }
        let lengthBytes = take(2) + [0, 0]
        let paddingLength = (Int(lengthBytes[0]) << 8 | Int(lengthBytes[1])) % (ClientHandshake.maximumHandshakeLength - ClientHandshake.serverMinimumLength + 1)
        let padding = Array((take(paddingLength) + [UInt8](repeating: 0x5A, count: paddingLength)).prefix(paddingLength))
        let head = server.representative + server.auth + padding
        let mark = hmac128(server.representative)
        // A mark the fuzzer planted in the padding is found there first: legitimately a MAC failure.
        guard ClientHandshake.firstIndex(of: mark, in: head + mark, from: 64, to: head.count + mark.count - 1) == nil else { return }
        let reply = head + mark + hmac128(head + mark, Array(epochHour.utf8))

        // The data phase: payloads of fuzzer-chosen lengths, with fuzzer-chosen padding.
        var encoder = FrameEncoder(keys: DirectionKeys(keyMaterial: server.keyMaterial[72..<144]))
        var frames: [UInt8] = []
        var payloads: [[UInt8]] = []
        while payloads.count < 8, let header = take(3).nilIfShort(3) {
            let length = (Int(header[0]) << 8 | Int(header[1])) % (Obfs4Framing.maximumPayloadLength + 1)
            let paddingLength = min(Int(header[2]) * 6, Obfs4Framing.maximumPayloadLength - length)
            let payload = take(length)
            try! encoder.appendFrame(type: Obfs4Framing.packetTypePayload, payload: payload[...], paddingLength: paddingLength, to: &frames)
            if !payload.isEmpty { payloads.append(payload) }
        }
        var stream = reply + frames
        let flipped = flip & 0x10 != 0 && !frames.isEmpty
        if flipped {
            let position = reply.count + Int(flip & 0x0F) * 37 % frames.count
            stream[position] ^= 1 << (flip & 7)
        }

        var reader = ClientHandshakeReader(handshake: client)
        var decoder: FrameDecoder?
        var fed = 0
        var received: [[UInt8]] = []
        var failure: TransportError?
        for read in reads(stream, sizes: sizes) {
            fed += read.count
            if decoder == nil {
                let verdict = Verdict { () throws(TransportError) in try reader.feed(read) }
                switch verdict {
                case .waiting:
                    precondition(fed < reply.count, "a complete reply got no verdict")
                    continue
                case .failed(let code):
                    preconditionFailure("a real server reply failed: \(code)")
                case .done(let keys, let remainder):
                    precondition(fed >= reply.count, "the handshake completed before the MAC arrived")
                    precondition(keys == server.keyMaterial, "client and server keys differ")
                    precondition(remainder == Array(stream[reply.count..<fed]), "the bytes after the MAC were not handed on intact")
                    var fresh = FrameDecoder(keys: DirectionKeys(keyMaterial: keys[72..<144]))
                    fresh.append(remainder)
                    decoder = fresh
                }
            } else {
                decoder!.append(read)
            }
            do throws(TransportError) {
                while let packet = try decoder!.nextPacket() {
                    if !packet.payload.isEmpty { received.append(packet.payload) }
                }
            } catch {
                failure = error
                break
            }
        }
        precondition(decoder != nil, "a real server reply never completed")
        if flipped {
            precondition(payloads.starts(with: received), "a flipped bit produced a payload that was never sent")
            // A flipped length bit may announce a longer frame than follows: at the end of the
            // stream that is a truncated frame (the connection reports it), never data.
            precondition(failure != nil || decoder!.hasPartialFrame, "a flipped bit went unnoticed")
        } else {
            precondition(failure == nil, "well-formed frames failed: \(failure!.code)")
            precondition(received == payloads, "the data phase did not deliver what the server sent")
            precondition(!decoder!.hasPartialFrame, "bytes left over after the last frame")
        }
    }
}

private extension Array {
    func nilIfShort(_ count: Int) -> [Element]? { self.count >= count ? self : nil }
}
