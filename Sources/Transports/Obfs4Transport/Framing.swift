// obfs4 data-phase wire format (spec §8), after the handshake. Both directions use the same format
// with their own keys: the client sends with OKM[0:72) and receives with OKM[72:144).
//
//   frame     = obfsLen(2, big-endian) | box
//   box       = XSalsa20-Poly1305 secretbox, tag first: tag(16) | ciphertext(len(packet))
//   obfsLen   = len(box) XOR mask         len(box) = len(packet) + 16, valid range 16…1446
//   nonce     = noncePrefix(16) | counter(8, big-endian); counter starts at 1, +1 per frame, never wraps
//   mask      = big-endian uint16 of the first 2 bytes of the next SipHash-2-4 DRBG block; the DRBG
//               hashes ALL previous states (see SipHashDRBG) and advances exactly once per frame
//   packet    = type(1) | payloadLen(2, big-endian) | payload(payloadLen) | padding(rest)
//   type 0    = payload (payloadLen 0: pure padding); type 1 = PRNG seed (24-byte payload); others ignored
//
// Sizes: a whole frame is at most 1448 bytes (MaximumSegmentLength), so a packet is at most 1430 bytes
// and carries at most 1427 payload bytes. Per-direction key material (72 bytes):
// key[0:32) | noncePrefix[32:48) | sipKey[48:64) | sipIV[64:72).
//
// The rule for this decoder, as for every decoder of network input in Postern: no byte from the
// peer may trap, hang or grow memory without a stated cap. The peer's numbers are the masked frame
// length (XOR with our DRBG in UInt16, then range-checked to 16…1446 before anything is buffered
// for it: an impossible length is `obfs4FrameLength`) and the payload length (checked against the
// packet it sits in: `obfs4PacketFormat`). The nonce counter is ours and refuses to wrap
// (`obfs4CounterExhausted`). The decoder holds at most one frame plus one read.

import TransportBase
import PosternSystem

extension TransportError.Code {
    public static let obfs4FrameLength = Self(rawValue: "obfs4-invalid-frame-length")
    public static let obfs4FrameAuthentication = Self(rawValue: "obfs4-frame-authentication-failed")
    public static let obfs4PacketFormat = Self(rawValue: "obfs4-invalid-packet")
    public static let obfs4TruncatedFrame = Self(rawValue: "obfs4-truncated-frame")
    public static let obfs4CounterExhausted = Self(rawValue: "obfs4-nonce-counter-exhausted")
}

package enum Obfs4Framing {
    static let maximumSegmentLength = 1448
    static let lengthFieldLength = 2
    package static let tagLength = 16
    package static let frameOverhead = lengthFieldLength + tagLength
    package static let maximumPacketLength = maximumSegmentLength - frameOverhead      // 1430
    package static let packetHeaderLength = 3
    package static let maximumPayloadLength = maximumPacketLength - packetHeaderLength // 1427
    static let minimumBoxLength = tagLength
    static let maximumBoxLength = maximumSegmentLength - lengthFieldLength     // 1446
    static let keyMaterialLength = 72
    static let seedLength = 24

    package static let packetTypePayload: UInt8 = 0
    static let packetTypePRNGSeed: UInt8 = 1
}

/// One direction's keys, cut from 72 bytes of key material.
package struct DirectionKeys: Sendable {
    let secretboxKey: [UInt8]
    let noncePrefix: [UInt8]
    let lengthMaskSeed: [UInt8]

    package init(keyMaterial: some Collection<UInt8>) {
        let bytes = Array(keyMaterial)
        precondition(bytes.count == Obfs4Framing.keyMaterialLength)
        secretboxKey = Array(bytes[0..<32])
        noncePrefix = Array(bytes[32..<48])
        lengthMaskSeed = Array(bytes[48..<72])
    }
}

/// The 24-byte secretbox nonce, noncePrefix | counter(8, big-endian), kept in one buffer whose
/// counter bytes are rewritten per frame (no allocation per frame).
private struct FrameNonce {
    private var bytes: [UInt8]

    init(prefix: [UInt8]) {
        precondition(prefix.count == 16)
        bytes = prefix + [UInt8](repeating: 0, count: 8)
    }

    /// Calls `body` with the nonce for `counter`.
    mutating func with<Result>(counter: UInt64, _ body: (UnsafePointer<UInt8>) -> Result) -> Result {
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: counter.bigEndian, toByteOffset: 16, as: UInt64.self)
            return body(raw.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
    }
}

/// Seals packets into frames, in place in the caller's output buffer: the packet is written where
/// the ciphertext goes and sealed over itself (libsodium's secretbox allows the exact in-place
/// layout, ciphertext pointer == plaintext pointer), so each payload byte is copied once.
package struct FrameEncoder: Sendable {
    private let keys: DirectionKeys
    private var counter: UInt64 = 1
    private var lengthMask: SipHashDRBG
    private var nonce: FrameNonce
    /// Length field and tag, zero until the frame is sealed.
    private static let placeholder = [UInt8](repeating: 0, count: Obfs4Framing.frameOverhead)

    package init(keys: DirectionKeys) {
        self.keys = keys
        self.lengthMask = SipHashDRBG(seed: keys.lengthMaskSeed)
        self.nonce = FrameNonce(prefix: keys.noncePrefix)
    }

    /// Appends one frame carrying `payload` (≤ 1427 bytes) and `paddingLength` zero bytes to `output`.
    package mutating func appendFrame(type: UInt8, payload: ArraySlice<UInt8>, paddingLength: Int,
                                      to output: inout [UInt8]) throws(TransportError) {
        let packetLength = Obfs4Framing.packetHeaderLength + payload.count + paddingLength
        precondition(paddingLength >= 0 && packetLength <= Obfs4Framing.maximumPacketLength, "packet too long")
        guard counter != 0 else {
            throw TransportError(code: .obfs4CounterExhausted, kind: .protocolViolation, message: "frame counter exhausted")
        }
        let start = output.count
        output.append(contentsOf: Self.placeholder)
        output.append(type)
        output.append(UInt8(truncatingIfNeeded: payload.count >> 8))
        output.append(UInt8(truncatingIfNeeded: payload.count))
        output.append(contentsOf: payload)
        if paddingLength > 0 { output.append(contentsOf: repeatElement(0, count: paddingLength)) }
        sealInPlace(frameStart: start, packetLength: packetLength, in: &output)
    }

    /// Seals arbitrary packet bytes (possibly malformed) as one frame: how the `Obfs4FrameFuzzer`
    /// harness (Fuzz/Obfs4Harnesses) puts malformed packets behind a valid tag.
    package mutating func appendRawPacket(_ bytes: ArraySlice<UInt8>, to output: inout [UInt8]) throws(TransportError) {
        precondition(bytes.count <= Obfs4Framing.maximumPacketLength, "packet too long")
        guard counter != 0 else {
            throw TransportError(code: .obfs4CounterExhausted, kind: .protocolViolation, message: "frame counter exhausted")
        }
        let start = output.count
        output.append(contentsOf: Self.placeholder)
        output.append(contentsOf: bytes)
        sealInPlace(frameStart: start, packetLength: bytes.count, in: &output)
    }

    /// Seals the packet at `output[frameStart + 18 ..< + packetLength]` over itself, writes the tag
    /// before it and the masked length before that.
    private mutating func sealInPlace(frameStart start: Int, packetLength: Int, in output: inout [UInt8]) {
        let frameCounter = counter
        counter &+= 1
        let boxLength = packetLength + Obfs4Framing.tagLength
        output.withUnsafeMutableBufferPointer { out in
            nonce.with(counter: frameCounter) { n in
                keys.secretboxKey.withUnsafeBufferPointer { k in
                    Sodium.secretboxSealInPlace(box: UnsafeMutableBufferPointer(rebasing: out[start + 2..<start + 2 + boxLength]),
                                                nonce: n, key: k.baseAddress!)
                }
            }
        }
        let maskedLength = UInt16(boxLength) ^ lengthMask.nextLengthMask()
        output[start] = UInt8(maskedLength >> 8)
        output[start + 1] = UInt8(truncatingIfNeeded: maskedLength)
    }

    /// Convenience for tests: one frame as its own array.
    mutating func frame(type: UInt8, payload: [UInt8], paddingLength: Int = 0) throws(TransportError) -> [UInt8] {
        var output: [UInt8] = []
        try appendFrame(type: type, payload: payload[...], paddingLength: paddingLength, to: &output)
        return output
    }
}

package struct DecodedPacket: Sendable, Equatable {
    package let type: UInt8
    package let payload: [UInt8]

    package init(type: UInt8, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }
}

/// Turns a byte stream back into packets. Any failure is final: the connection must be dropped.
///
/// Boxes are opened in place in the receive buffer (after the tag checks out; libsodium writes
/// nothing when it does not), and a payload is handed out as a view of that buffer. The buffer is
/// either the decoder's own (`append`, then `nextPacket`: the fuzz harnesses and tests) or the
/// caller's (`openFrames`: Obfs4Connection, which receives into it, so the payloads reach tor's
/// socket with no copy at all).
package struct FrameDecoder: Sendable {
    private let keys: DirectionKeys
    private var counter: UInt64 = 1
    private var lengthMask: SipHashDRBG
    private var nonce: FrameNonce
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// The unmasked box length of the frame being waited for (the mask is consumed once per frame).
    private var pendingBoxLength: Int?
    private var failure: TransportError?

    package init(keys: DirectionKeys) {
        self.keys = keys
        self.lengthMask = SipHashDRBG(seed: keys.lengthMaskSeed)
        self.nonce = FrameNonce(prefix: keys.noncePrefix)
    }

    /// Drops consumed bytes before more are added (the buffer holds at most one partial frame plus
    /// what the caller appends between decodes).
    private mutating func compact() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }

    /// Appends a slice (the fuzz harnesses' reads). A concrete type, not `some Collection`: the
    /// harnesses are in another module, where a generic append is not specialised and cost
    /// Obfs4FrameFuzzer a third of its executions (Fuzz/README.md).
    package mutating func append(_ bytes: ArraySlice<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Takes over `bytes` without copying when nothing is buffered (the common case at a frame
    /// boundary), else appends them.
    package mutating func append(_ bytes: consuming [UInt8]) {
        compact()
        if buffer.isEmpty {
            buffer = bytes
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    /// True when some bytes of an incomplete frame are buffered (end of stream here is truncation).
    package var hasPartialFrame: Bool { pendingBoxLength != nil || readIndex < buffer.count }

    /// The next complete packet, or nil when more bytes are needed.
    package mutating func nextPacket() throws(TransportError) -> DecodedPacket? {
        var packet: DecodedPacket?
        guard try nextPacket({ type, payload in packet = DecodedPacket(type: type, payload: Array(payload)) }) else { return nil }
        return packet
    }

    /// Decodes the next complete packet and passes its type and payload to `body` (the payload view
    /// is valid only during the call). False when more bytes are needed.
    package mutating func nextPacket(_ body: (UInt8, UnsafeBufferPointer<UInt8>) -> Void) throws(TransportError) -> Bool {
        if let failure { throw failure }
        do {
            return try decodeNext(body)
        } catch {
            failure = error
            throw error
        }
    }

    /// Opens, in place, the complete frames at the start of `bytes`, a caller-owned buffer holding
    /// the stream from where the previous call stopped (how Obfs4Connection decodes in its receive
    /// buffer). `body` gets each packet's type and payload, a view of `bytes` valid until the caller
    /// reuses them. Returns how many bytes were consumed: whole frames, plus the length field of a
    /// frame whose box has not fully arrived (its unmasked length is kept). The caller passes the
    /// rest again, with more bytes after it. Same checks and failures as `nextPacket`; use either
    /// this or `append`/`nextPacket` on one decoder, not both.
    package mutating func openFrames(in bytes: UnsafeMutableBufferPointer<UInt8>,
                                     _ body: (UInt8, UnsafeBufferPointer<UInt8>) -> Void) throws(TransportError) -> Int {
        if let failure { throw failure }
        var consumed = 0
        do {
            while try decodeNext(in: bytes, readIndex: &consumed, body) {}
        } catch {
            failure = error
            throw error
        }
        return consumed
    }

    private mutating func decodeNext(_ body: (UInt8, UnsafeBufferPointer<UInt8>) -> Void) throws(TransportError) -> Bool {
        // The buffer is moved out for the call (no copy): a mutating method cannot run inside an
        // access to one of its own stored properties.
        var bytes: [UInt8] = []
        swap(&bytes, &buffer)
        defer { swap(&bytes, &buffer) }
        var index = readIndex
        defer { readIndex = index }
        var outcome: Result<Bool, TransportError> = .success(false)
        bytes.withUnsafeMutableBufferPointer { input in
            do throws(TransportError) {
                outcome = .success(try decodeNext(in: input, readIndex: &index, body))
            } catch {
                outcome = .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Decodes one frame of `input` at `readIndex`, advancing it past what was consumed. Every
    /// access to `input` is inside the ranges the guards below establish.
    private mutating func decodeNext(in input: UnsafeMutableBufferPointer<UInt8>, readIndex: inout Int,
                                     _ body: (UInt8, UnsafeBufferPointer<UInt8>) -> Void) throws(TransportError) -> Bool {
        let boxLength: Int
        if let pending = pendingBoxLength {
            boxLength = pending
        } else {
            guard input.count - readIndex >= Obfs4Framing.lengthFieldLength else { return false }
            let masked = UInt16(input[readIndex]) << 8 | UInt16(input[readIndex + 1])
            readIndex += Obfs4Framing.lengthFieldLength
            let length = Int(masked ^ lengthMask.nextLengthMask())
            guard length >= Obfs4Framing.minimumBoxLength && length <= Obfs4Framing.maximumBoxLength else {
                throw TransportError(code: .obfs4FrameLength, kind: .protocolViolation,
                                     message: "frame length \(length) is outside 16…1446")
            }
            pendingBoxLength = length
            boxLength = length
        }
        guard input.count - readIndex >= boxLength else { return false }
        guard counter != 0 else {
            throw TransportError(code: .obfs4CounterExhausted, kind: .protocolViolation, message: "frame counter exhausted")
        }
        let start = readIndex
        let packetLength = boxLength - Obfs4Framing.tagLength
        let frameCounter = counter
        let opened = nonce.with(counter: frameCounter) { n in
            keys.secretboxKey.withUnsafeBufferPointer { k in
                Sodium.secretboxOpenInPlace(box: UnsafeMutableBufferPointer(rebasing: input[start..<start + boxLength]),
                                            nonce: n, key: k.baseAddress!)
            }
        }
        guard opened else {
            throw TransportError(code: .obfs4FrameAuthentication, kind: .protocolViolation,
                                 message: "frame \(counter) failed authentication")
        }
        counter &+= 1
        readIndex += boxLength
        pendingBoxLength = nil
        guard packetLength >= Obfs4Framing.packetHeaderLength else {
            throw TransportError(code: .obfs4PacketFormat, kind: .protocolViolation,
                                 message: "packet of \(packetLength) bytes is shorter than its header")
        }
        let packet = start + Obfs4Framing.tagLength
        let payloadLength = Int(input[packet + 1]) << 8 | Int(input[packet + 2])
        guard payloadLength <= packetLength - Obfs4Framing.packetHeaderLength else {
            throw TransportError(code: .obfs4PacketFormat, kind: .protocolViolation,
                                 message: "payload length \(payloadLength) exceeds the \(packetLength)-byte packet")
        }
        body(input[packet], UnsafeBufferPointer(rebasing: input[packet + 3..<packet + 3 + payloadLength]))
        return true
    }
}
