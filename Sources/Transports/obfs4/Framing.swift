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

extension TransportError.Code {
    public static let obfs4FrameLength = Self(rawValue: "obfs4-invalid-frame-length")
    public static let obfs4FrameAuthentication = Self(rawValue: "obfs4-frame-authentication-failed")
    public static let obfs4PacketFormat = Self(rawValue: "obfs4-invalid-packet")
    public static let obfs4TruncatedFrame = Self(rawValue: "obfs4-truncated-frame")
    public static let obfs4CounterExhausted = Self(rawValue: "obfs4-nonce-counter-exhausted")
}

enum Obfs4Framing {
    static let maximumSegmentLength = 1448
    static let lengthFieldLength = 2
    static let tagLength = 16
    static let frameOverhead = lengthFieldLength + tagLength
    static let maximumPacketLength = maximumSegmentLength - frameOverhead      // 1430
    static let packetHeaderLength = 3
    static let maximumPayloadLength = maximumPacketLength - packetHeaderLength // 1427
    static let minimumBoxLength = tagLength
    static let maximumBoxLength = maximumSegmentLength - lengthFieldLength     // 1446
    static let keyMaterialLength = 72
    static let seedLength = 24

    static let packetTypePayload: UInt8 = 0
    static let packetTypePRNGSeed: UInt8 = 1
}

/// One direction's keys, cut from 72 bytes of key material.
struct DirectionKeys: Sendable {
    let secretboxKey: [UInt8]
    let noncePrefix: [UInt8]
    let lengthMaskSeed: [UInt8]

    init(keyMaterial: some Collection<UInt8>) {
        let bytes = Array(keyMaterial)
        precondition(bytes.count == Obfs4Framing.keyMaterialLength)
        secretboxKey = Array(bytes[0..<32])
        noncePrefix = Array(bytes[32..<48])
        lengthMaskSeed = Array(bytes[48..<72])
    }
}

private func makeNonce(prefix: [UInt8], counter: UInt64) -> [UInt8] {
    var nonce = prefix
    nonce.reserveCapacity(24)
    for shift in stride(from: 56, through: 0, by: -8) { nonce.append(UInt8(truncatingIfNeeded: counter >> UInt64(shift))) }
    return nonce
}

/// Seals packets into frames.
struct FrameEncoder: Sendable {
    private let keys: DirectionKeys
    private var counter: UInt64 = 1
    private var lengthMask: SipHashDRBG
    private var packet = [UInt8](repeating: 0, count: Obfs4Framing.maximumPacketLength)

    init(keys: DirectionKeys) {
        self.keys = keys
        self.lengthMask = SipHashDRBG(seed: keys.lengthMaskSeed)
    }

    /// Appends one frame carrying `payload` (≤ 1427 bytes) and `paddingLength` zero bytes to `output`.
    mutating func appendFrame(type: UInt8, payload: ArraySlice<UInt8>, paddingLength: Int,
                              to output: inout [UInt8]) throws(TransportError) {
        let packetLength = Obfs4Framing.packetHeaderLength + payload.count + paddingLength
        precondition(paddingLength >= 0 && packetLength <= Obfs4Framing.maximumPacketLength, "packet too long")
        guard counter != 0 else {
            throw TransportError(code: .obfs4CounterExhausted, kind: .protocolViolation, message: "frame counter exhausted")
        }
        packet[0] = type
        packet[1] = UInt8(truncatingIfNeeded: payload.count >> 8)
        packet[2] = UInt8(truncatingIfNeeded: payload.count)
        var index = 3
        for byte in payload { packet[index] = byte; index += 1 }
        for padding in index..<packetLength { packet[padding] = 0 }

        try sealPacket(packetLength: packetLength, to: &output)
    }

    /// Seals arbitrary packet bytes (possibly malformed) as one frame; used by the fuzz harness.
    mutating func appendRawPacket(_ bytes: ArraySlice<UInt8>, to output: inout [UInt8]) throws(TransportError) {
        precondition(bytes.count <= Obfs4Framing.maximumPacketLength, "packet too long")
        guard counter != 0 else {
            throw TransportError(code: .obfs4CounterExhausted, kind: .protocolViolation, message: "frame counter exhausted")
        }
        var index = 0
        for byte in bytes { packet[index] = byte; index += 1 }
        try sealPacket(packetLength: bytes.count, to: &output)
    }

    /// Seals `packet[0..<packetLength]` and appends length | box.
    private mutating func sealPacket(packetLength: Int, to output: inout [UInt8]) throws(TransportError) {
        let nonce = makeNonce(prefix: keys.noncePrefix, counter: counter)
        counter &+= 1
        let boxLength = packetLength + Obfs4Framing.tagLength
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: Obfs4Framing.lengthFieldLength + boxLength))
        output.withUnsafeMutableBufferPointer { out in
            packet.withUnsafeBufferPointer { plain in
                nonce.withUnsafeBufferPointer { n in
                    keys.secretboxKey.withUnsafeBufferPointer { k in
                        Sodium.secretboxSeal(output: out.baseAddress! + start + 2,
                                             plaintext: UnsafeBufferPointer(rebasing: plain[0..<packetLength]),
                                             nonce: n.baseAddress!, key: k.baseAddress!)
                    }
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

struct DecodedPacket: Sendable, Equatable {
    let type: UInt8
    let payload: [UInt8]
}

/// Turns a byte stream back into packets. Any failure is final: the connection must be dropped.
struct FrameDecoder: Sendable {
    private let keys: DirectionKeys
    private var counter: UInt64 = 1
    private var lengthMask: SipHashDRBG
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// The unmasked box length of the frame being waited for (the mask is consumed once per frame).
    private var pendingBoxLength: Int?
    private var plaintext = [UInt8](repeating: 0, count: Obfs4Framing.maximumPacketLength)
    private var failure: TransportError?

    init(keys: DirectionKeys) {
        self.keys = keys
        self.lengthMask = SipHashDRBG(seed: keys.lengthMaskSeed)
    }

    mutating func append(_ bytes: some Collection<UInt8>) {
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// True when some bytes of an incomplete frame are buffered (end of stream here is truncation).
    var hasPartialFrame: Bool { pendingBoxLength != nil || readIndex < buffer.count }

    /// The next complete packet, or nil when more bytes are needed.
    mutating func nextPacket() throws(TransportError) -> DecodedPacket? {
        if let failure { throw failure }
        do {
            return try decodeNext()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func decodeNext() throws(TransportError) -> DecodedPacket? {
        let boxLength: Int
        if let pending = pendingBoxLength {
            boxLength = pending
        } else {
            guard buffer.count - readIndex >= Obfs4Framing.lengthFieldLength else { return nil }
            let masked = UInt16(buffer[readIndex]) << 8 | UInt16(buffer[readIndex + 1])
            readIndex += Obfs4Framing.lengthFieldLength
            let length = Int(masked ^ lengthMask.nextLengthMask())
            guard length >= Obfs4Framing.minimumBoxLength && length <= Obfs4Framing.maximumBoxLength else {
                throw TransportError(code: .obfs4FrameLength, kind: .protocolViolation,
                                     message: "frame length \(length) is outside 16…1446")
            }
            pendingBoxLength = length
            boxLength = length
        }
        guard buffer.count - readIndex >= boxLength else { return nil }
        guard counter != 0 else {
            throw TransportError(code: .obfs4CounterExhausted, kind: .protocolViolation, message: "frame counter exhausted")
        }
        let nonce = makeNonce(prefix: keys.noncePrefix, counter: counter)
        let start = readIndex
        let packetLength = boxLength - Obfs4Framing.tagLength
        let opened = buffer.withUnsafeBufferPointer { input in
            plaintext.withUnsafeMutableBufferPointer { output in
                nonce.withUnsafeBufferPointer { n in
                    keys.secretboxKey.withUnsafeBufferPointer { k in
                        Sodium.secretboxOpen(output: output.baseAddress!,
                                             box: UnsafeBufferPointer(rebasing: input[start..<start + boxLength]),
                                             nonce: n.baseAddress!, key: k.baseAddress!)
                    }
                }
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
        let payloadLength = Int(plaintext[1]) << 8 | Int(plaintext[2])
        guard payloadLength <= packetLength - Obfs4Framing.packetHeaderLength else {
            throw TransportError(code: .obfs4PacketFormat, kind: .protocolViolation,
                                 message: "payload length \(payloadLength) exceeds the \(packetLength)-byte packet")
        }
        return DecodedPacket(type: plaintext[0], payload: Array(plaintext[3..<3 + payloadLength]))
    }
}
