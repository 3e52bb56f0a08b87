import PosternCrypto
import Synchronization
import TransportBase

/// An established obfs4 session over a TCP socket: frames what is written, unframes what is read.
///
/// One reader and one writer may run concurrently; the two directions share no mutable state
/// except the length/IAT distributions, which the server's seed packet replaces.
final class Obfs4Connection: ForwardingConnection, @unchecked Sendable {
    private struct WriterState {
        var encoder: FrameEncoder
        var lengthDistribution: WeightedDistribution
        var iatDistribution: WeightedDistribution
    }

    /// The reader's side. Frames are opened where they were received, in `received`'s storage:
    /// `start..<end` are received bytes the decoder has not consumed (at most one partial frame
    /// once the complete ones are opened). `pending` holds payload bytes a `read` could not return
    /// because they exceeded its maximum.
    private struct ReaderState {
        var decoder: FrameDecoder
        var start = 0
        var end = 0
        var pending: [UInt8] = []
        var pendingStart = 0
    }

    /// The receive buffer: one partial frame carried over plus one read of `receiveSize` (larger
    /// only when the handshake left more than that behind). Only the reader touches its bytes, so
    /// its storage may be handed to the socket across a suspension.
    private final class ReceiveBuffer: @unchecked Sendable {
        let storage: UnsafeMutableBufferPointer<UInt8>

        init(capacity: Int) { storage = .allocate(capacity: capacity) }

        deinit { storage.deallocate() }
    }

    private static let headerLength = Obfs4Framing.frameOverhead + Obfs4Framing.packetHeaderLength  // 21
    private static let maximumIATDelay = 100   // × 100 µs

    private let socket: TCPSocket
    private let iatMode: Obfs4IATMode
    private let writer: Mutex<WriterState>
    private let reader: Mutex<ReaderState>
    private let received: ReceiveBuffer

    init(socket: TCPSocket, keyMaterial: [UInt8], remainder: [UInt8], iatMode: Obfs4IATMode) {
        precondition(keyMaterial.count == 144)
        self.socket = socket
        self.iatMode = iatMode
        let seed = SecureRandom.bytes(Obfs4Framing.seedLength)
        writer = Mutex(WriterState(
            encoder: FrameEncoder(keys: DirectionKeys(keyMaterial: keyMaterial[0..<72])),
            lengthDistribution: WeightedDistribution(seed: seed, minimum: 0, maximum: Obfs4Framing.maximumSegmentLength),
            iatDistribution: WeightedDistribution(seed: Digest.sha256(seed).prefix(24), minimum: 0, maximum: Self.maximumIATDelay)))
        received = ReceiveBuffer(capacity: max(Self.receiveSize + Obfs4Framing.maximumSegmentLength, remainder.count))
        _ = received.storage.initialize(from: remainder)
        reader = Mutex(ReaderState(decoder: FrameDecoder(keys: DirectionKeys(keyMaterial: keyMaterial[72..<144])), end: remainder.count))
    }

    // MARK: Reading

    func read(maximumCount: Int) async throws -> [UInt8] {
        precondition(maximumCount > 0)
        while true {
            let (ready, seeds) = try reader.withLock { state throws(TransportError) -> ([UInt8], [[UInt8]]) in
                if state.pendingStart < state.pending.count {
                    return (Self.takePending(&state, maximumCount: maximumCount), [])
                }
                // Payloads are copied once, from the receive buffer into `pending`.
                var pending: [UInt8] = []
                var seeds: [[UInt8]] = []
                try Self.openReceived(&state, in: received) { payload in
                    pending.append(contentsOf: payload)
                } seed: { seeds.append($0) }
                state.pending = pending
                state.pendingStart = 0
                return (Self.takePending(&state, maximumCount: maximumCount), seeds)
            }
            for seed in seeds { reseed(seed) }
            if !ready.isEmpty { return ready }
            guard try await receive() else { return [] }
        }
    }

    /// Writes the payloads of the frames received so far to `socket` straight from the receive
    /// buffer (one gathering write, no copy), reading more first when there are none.
    func forward(to socket: TCPSocket) async throws -> Int {
        while true {
            let (payloads, leftover, seeds) = try reader.withLock { state throws(TransportError) -> ([UnsafeRawBufferPointer], [UInt8], [[UInt8]]) in
                if state.pendingStart < state.pending.count {
                    return ([], Self.takePending(&state, maximumCount: state.pending.count), [])
                }
                var payloads: [UnsafeRawBufferPointer] = []
                var seeds: [[UInt8]] = []
                try Self.openReceived(&state, in: received) { payload in
                    if !payload.isEmpty { payloads.append(UnsafeRawBufferPointer(payload)) }
                } seed: { seeds.append($0) }
                return (payloads, [], seeds)
            }
            for seed in seeds { reseed(seed) }
            if !leftover.isEmpty {
                try await socket.write(leftover)
                return leftover.count
            }
            if !payloads.isEmpty {
                // The views stay valid: only `receive`, which this reader calls next, moves bytes.
                try await socket.write(gathering: payloads)
                return payloads.reduce(0) { $0 + $1.count }
            }
            guard try await receive() else { return 0 }
        }
    }

    /// Opens every complete frame in the receive buffer, in place, passing each payload packet's
    /// payload (a view of the buffer) and each seed packet's seed on.
    private static func openReceived(_ state: inout ReaderState, in received: ReceiveBuffer,
                                     payload: (UnsafeBufferPointer<UInt8>) -> Void,
                                     seed: ([UInt8]) -> Void) throws(TransportError) {
        let region = UnsafeMutableBufferPointer(rebasing: received.storage[state.start..<state.end])
        state.start += try state.decoder.openFrames(in: region) { type, bytes in
            switch type {
            case Obfs4Framing.packetTypePayload:
                payload(bytes)
            case Obfs4Framing.packetTypePRNGSeed where bytes.count == Obfs4Framing.seedLength:
                seed(Array(bytes))
            default:
                break   // authenticated but unknown: ignore (spec §8.3)
            }
        }
    }

    private static let receiveSize = 65536

    /// Moves the unconsumed partial frame to the front of the receive buffer and receives into
    /// the rest (at least `receiveSize` bytes of room). False at end of stream.
    private func receive() async throws -> Bool {
        let (free, freeCount) = reader.withLock { state -> (Int, Int) in
            let carried = state.end - state.start
            if state.start > 0 {
                if carried > 0 {   // overlapping ranges are allowed
                    received.storage.baseAddress!.update(from: received.storage.baseAddress! + state.start, count: carried)
                }
                state.start = 0
                state.end = carried
            }
            return (state.end, received.storage.count - state.end)
        }
        precondition(freeCount > 0, "the receive buffer holds more than one partial frame")
        let count = try await socket.read(into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: received.storage[free...])))
        if count == 0 {
            if reader.withLock({ $0.decoder.hasPartialFrame || $0.start < $0.end }) {
                throw TransportError(code: .obfs4TruncatedFrame, kind: .protocolViolation,
                                     message: "the server closed the connection in the middle of a frame")
            }
            return false
        }
        reader.withLock { $0.end += count }
        return true
    }

    private static func takePending(_ state: inout ReaderState, maximumCount: Int) -> [UInt8] {
        let available = state.pending.count - state.pendingStart
        if available == 0 { return [] }
        if state.pendingStart == 0 && available <= maximumCount {
            defer { state.pending = [] }
            return state.pending
        }
        let count = min(available, maximumCount)
        let out = Array(state.pending[state.pendingStart..<state.pendingStart + count])
        state.pendingStart += count
        if state.pendingStart == state.pending.count { state.pending = []; state.pendingStart = 0 }
        return out
    }

    /// The server's seed packet replaces both distributions (spec §8.3).
    private func reseed(_ seed: [UInt8]) {
        let length = WeightedDistribution(seed: seed, minimum: 0, maximum: Obfs4Framing.maximumSegmentLength)
        let iat = WeightedDistribution(seed: Digest.sha256(seed).prefix(24), minimum: 0, maximum: Self.maximumIATDelay)
        writer.withLock {
            $0.lengthDistribution = length
            $0.iatDistribution = iat
        }
    }

    // MARK: Writing

    func write(_ bytes: [UInt8]) async throws {
        if bytes.isEmpty { return }
        switch iatMode {
        case .none:
            let burst = try writer.withLock { state throws(TransportError) -> [UInt8] in
                var burst = try Self.frames(for: bytes, state: &state)
                try Self.padBurst(&burst, target: state.lengthDistribution.sample(), state: &state)
                return burst
            }
            try await socket.write(burst)
        case .enabled:
            let burst = try writer.withLock { state throws(TransportError) -> [UInt8] in
                var burst = try Self.frames(for: bytes, state: &state)
                try Self.padBurst(&burst, target: state.lengthDistribution.sample(), state: &state)
                return burst
            }
            var offset = 0
            while offset < burst.count {
                let end = min(offset + Obfs4Framing.maximumSegmentLength, burst.count)
                try await socket.write(Array(burst[offset..<end]))
                offset = end
                try await sleepInterArrival()
            }
        default:
            try await writeParanoid(bytes)
        }
    }

    /// iat-mode 2: every write has a freshly sampled size, padded up when too little is buffered.
    private func writeParanoid(_ bytes: [UInt8]) async throws {
        var buffered = try writer.withLock { state throws(TransportError) in try Self.frames(for: bytes, state: &state) }
        var offset = 0
        while offset < buffered.count {
            let chunk = try writer.withLock { state throws(TransportError) -> [UInt8]? in
                let target = Self.paranoidWriteSize(drawn: state.lengthDistribution.sample())
                if buffered.count - offset < target {
                    var tail = Array(buffered[offset...])
                    try Self.padBurst(&tail, target: target, state: &state)
                    buffered = tail
                    offset = 0
                    // Padding that needed two frames overshoots: draw again (as lyrebird does).
                    if buffered.count != target { return nil }
                }
                let end = offset + target
                defer { offset = end }
                return Array(buffered[offset..<end])
            }
            guard let chunk else { continue }
            try await socket.write(chunk)
            try await sleepInterArrival()
        }
    }

    /// The size of one iat-mode 2 write for a value drawn from the length distribution.
    ///
    /// Lengths here count modulo a segment, as they do for `padBurst` (a target of 0 pads a burst
    /// to a whole number of segments), so a drawn 0 is a full segment. Taken literally it would be
    /// an empty write: no progress, and the server's seed chooses the distribution, so a seed whose
    /// only value is 0 would keep `writeParanoid` looping forever (without a pause when the IAT
    /// distribution is {0} too).
    static func paranoidWriteSize(drawn: Int) -> Int {
        drawn == 0 ? Obfs4Framing.maximumSegmentLength : drawn
    }

    private func sleepInterArrival() async throws {
        let units = writer.withLock { $0.iatDistribution.sample() }
        if units > 0 { try await Task.sleep(for: .microseconds(units * 100)) }
    }

    private static func frames(for bytes: [UInt8], state: inout WriterState) throws(TransportError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + (bytes.count / Obfs4Framing.maximumPayloadLength + 2) * headerLength + 2 * Obfs4Framing.maximumSegmentLength)
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + Obfs4Framing.maximumPayloadLength, bytes.count)
            try state.encoder.appendFrame(type: Obfs4Framing.packetTypePayload, payload: bytes[offset..<end], paddingLength: 0, to: &output)
            offset = end
        }
        return output
    }

    /// Pads a burst so its length is `target` modulo 1448 (spec §9; mirrors lyrebird's padBurst).
    private static func padBurst(_ burst: inout [UInt8], target: Int, state: inout WriterState) throws(TransportError) {
        let segment = Obfs4Framing.maximumSegmentLength
        let tail = burst.count % segment
        let padLength = target >= tail ? target - tail : segment - tail + target
        if padLength > headerLength {
            try state.encoder.appendFrame(type: Obfs4Framing.packetTypePayload, payload: [], paddingLength: padLength - headerLength, to: &burst)
        } else if padLength > 0 {
            try state.encoder.appendFrame(type: Obfs4Framing.packetTypePayload, payload: [], paddingLength: Obfs4Framing.maximumPayloadLength, to: &burst)
            try state.encoder.appendFrame(type: Obfs4Framing.packetTypePayload, payload: [], paddingLength: padLength, to: &burst)
        }
    }

    func closeWrite() async { await socket.closeWrite() }

    func close() { socket.close() }
}
