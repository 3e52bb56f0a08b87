import CSodium
import Glibc
import Obfs4Transport
import PosternCrypto

/// The per-frame cost of our framing against libsodium's secretbox alone on the same bytes, in one
/// process (`postern-bench obfs4` and `frames`). The framing types are Obfs4Transport's `package` API:
/// this package's benchmark sees them, users of the library do not.
///
/// Both sides handle `bytes` of payload as full frames (1427 payload bytes each), in 64 KiB writes
/// like the relay's: "cipher" is crypto_secretbox_easy / _open_easy over each 1430-byte packet with
/// a fresh nonce and nothing else; "framing" is FrameEncoder (header, length mask, in-place seal)
/// and FrameDecoder as Obfs4Connection drives it (the wire copied into a receive buffer, standing in
/// for recv; length check, in-place open, payloads as views of that buffer, which the connection
/// hands to tor's socket in one gathering write). `frames` lets the caller state per-frame costs.
enum Obfs4FrameBenchmark {
    struct Result: Sendable {
        var bytes: Int
        var frames: Int
        var cipherSealSeconds: Double
        var cipherOpenSeconds: Double
        var framingSealSeconds: Double
        var framingOpenSeconds: Double
    }

    private static func threadCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    static func run(bytes: Int) throws(FrameBenchmarkError) -> Result {
        guard LibSodium.isReady else { throw FrameBenchmarkError(description: "libsodium failed to initialise") }
        let writeSize = 65536
        let chunk = [UInt8]((0..<writeSize).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 13) })
        let writes = max(1, bytes / writeSize)
        let keyMaterial = (0..<72).map { UInt8($0) }
        var result = Result(bytes: writes * writeSize, frames: 0, cipherSealSeconds: 0, cipherOpenSeconds: 0,
                            framingSealSeconds: 0, framingOpenSeconds: 0)

        // Cipher alone: one packet-sized secretbox per frame into a preallocated buffer, then each
        // box opened again (so every open decrypts, as on the wire).
        let payload = Obfs4Framing.maximumPayloadLength
        let packet = Obfs4Framing.maximumPacketLength
        let framesPerWrite = (writeSize + payload - 1) / payload
        result.frames = writes * framesPerWrite
        var boxes = [UInt8](repeating: 0, count: framesPerWrite * (packet + Obfs4Framing.tagLength))
        var plain = [UInt8](repeating: 0, count: packet)
        let key = Array(keyMaterial[0..<32])
        var nonce = [UInt8](repeating: 7, count: 24)
        var counter: UInt64 = 0
        var failures = 0
        for _ in 0..<writes {
            let first = counter
            var started = threadCPUSeconds()
            boxes.withUnsafeMutableBufferPointer { out in
                plain.withUnsafeBufferPointer { p in
                    for frame in 0..<framesPerWrite {
                        counter += 1
                        nonce.withUnsafeMutableBytes { $0.storeBytes(of: counter.bigEndian, toByteOffset: 16, as: UInt64.self) }
                        _ = crypto_secretbox_easy(out.baseAddress! + frame * (packet + 16), p.baseAddress!, UInt64(packet), nonce, key)
                    }
                }
            }
            result.cipherSealSeconds += threadCPUSeconds() - started
            counter = first
            started = threadCPUSeconds()
            boxes.withUnsafeBufferPointer { input in
                plain.withUnsafeMutableBufferPointer { p in
                    for frame in 0..<framesPerWrite {
                        counter += 1
                        nonce.withUnsafeMutableBytes { $0.storeBytes(of: counter.bigEndian, toByteOffset: 16, as: UInt64.self) }
                        if crypto_secretbox_open_easy(p.baseAddress!, input.baseAddress! + frame * (packet + 16), UInt64(packet + 16), nonce, key) != 0 {
                            failures += 1
                        }
                    }
                }
            }
            result.cipherOpenSeconds += threadCPUSeconds() - started
        }
        guard failures == 0 else { throw FrameBenchmarkError(description: "\(failures) boxes failed to open") }

        // Our framing, driven as Obfs4Connection drives it: 64 KiB writes framed into one burst;
        // the wire read back in 64 KiB chunks that do not line up with frames.
        var encoder = FrameEncoder(keys: DirectionKeys(keyMaterial: keyMaterial))
        var decoder = FrameDecoder(keys: DirectionKeys(keyMaterial: keyMaterial))
        var received = 0
        let receiveBuffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: writeSize + 1448)
        defer { receiveBuffer.deallocate() }
        var start = 0
        var end = 0
        for _ in 0..<writes {
            var started = threadCPUSeconds()
            var output: [UInt8] = []
            output.reserveCapacity(writeSize + framesPerWrite * (Obfs4Framing.frameOverhead + Obfs4Framing.packetHeaderLength))
            var offset = 0
            while offset < writeSize {
                let end = min(offset + payload, writeSize)
                do {
                    try encoder.appendFrame(type: Obfs4Framing.packetTypePayload, payload: chunk[offset..<end], paddingLength: 0, to: &output)
                } catch { throw FrameBenchmarkError(description: "\(error)") }
                offset = end
            }
            result.framingSealSeconds += threadCPUSeconds() - started
            var pieces = [Array(output[0..<writeSize]), Array(output[writeSize...])]
            output = []
            started = threadCPUSeconds()
            while !pieces.isEmpty {
                let carried = end - start
                receiveBuffer.baseAddress!.update(from: receiveBuffer.baseAddress! + start, count: carried)
                start = 0
                end = carried
                let piece = pieces.removeFirst()
                _ = UnsafeMutableBufferPointer(rebasing: receiveBuffer[end...]).initialize(from: piece)
                end += piece.count
                var views: [UnsafeBufferPointer<UInt8>] = []
                do {
                    start += try decoder.openFrames(in: UnsafeMutableBufferPointer(rebasing: receiveBuffer[start..<end])) { _, payload in
                        views.append(payload)
                    }
                } catch { throw FrameBenchmarkError(description: "\(error)") }
                received += views.reduce(0) { $0 + $1.count }
            }
            result.framingOpenSeconds += threadCPUSeconds() - started
        }
        guard received == result.bytes else {
            throw FrameBenchmarkError(description: "decoded \(received) of \(result.bytes) bytes")
        }
        return result
    }
}

struct FrameBenchmarkError: Error, CustomStringConvertible { let description: String }
