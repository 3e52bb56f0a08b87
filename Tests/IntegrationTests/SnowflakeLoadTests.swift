import PosternTestSupport
import Foundation
import Synchronization
import Testing
import TransportBase

/// An echo server on a loopback address of its own, on a port of the test bed's service range
/// (8000-8999: clients choose exits by the port summary of their microdescriptors).
final class LoadEchoServer: Sendable {
    let listener: LoopbackListener
    private let task: Task<Void, Never>

    init(address: [UInt8], port: UInt16) throws {
        let listener = try LoopbackListener(loopbackAddress: try TransportEndpoint(ipv4: address, port: port))
        self.listener = listener
        task = Task {
            await withDiscardingTaskGroup { group in
                while let socket = try? await listener.accept() {
                    group.addTask {
                        while let chunk = try? await socket.read(maximumCount: 65536), !chunk.isEmpty {
                            guard (try? await socket.write(chunk)) != nil else { break }
                        }
                        socket.close()
                    }
                }
            }
        }
    }

    func stop() {
        listener.close()
        task.cancel()
    }
}

/// SOCKS5 (no authentication) CONNECT to an IPv4 endpoint.
func socks5Connect(proxyPort: UInt16, to target: TransportEndpoint) async throws -> TCPSocket {
    let socket = try await TCPSocket.connect(to: try TransportEndpoint(ipv4: [127, 0, 0, 1], port: proxyPort), timeout: .seconds(10))
    func readExactly(_ count: Int) async throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            let chunk = try await socket.read(maximumCount: count - out.count)
            if chunk.isEmpty { throw CancellationError() }
            out += chunk
        }
        return out
    }
    try await socket.write([5, 1, 0])
    guard try await readExactly(2) == [5, 0] else { throw CancellationError() }
    try await socket.write([5, 1, 0, 1] + target.addressBytes + [UInt8(target.port >> 8), UInt8(target.port & 0xff)])
    let reply = try await readExactly(10)
    guard reply[1] == 0 else { throw CancellationError() }
    return socket
}

extension TestBedSuite {
    /// Issue #9's snowflake load item: 50 SOCKS streams at once through `postern run` and one
    /// snowflake session, each echoing stream-specific bytes for 60 s and checking every byte
    /// that comes back; postern's peak RSS (VmHWM) is reported.
    @Test func fiftyConcurrentStreamsThroughSnowflakeForSixtySeconds() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!bridge.isEmpty, "the test bed's snowflake stack is not up")
        let config = TestBed.temporaryDirectory("snowflake-load")
        defer { try? FileManager.default.removeItem(at: config) }
        let echo = try LoadEchoServer(address: [127, 0, 4, 78], port: 8078)
        defer { echo.stop() }

        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39744", "--transport", "snowflake",
                                      "--bridge", bridge, "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39744", timeout: 120)
        try #require(ready != nil, "output: \(run.output)")

        let streams = 50
        let duration: Duration = .seconds(60)
        let target = echo.listener.endpoint
        let started = ContinuousClock.now
        // A stalled session must fail the test, not hang it: past the bound, postern is killed
        // and every stream sees its connection end.
        let postern = run.processIdentifier
        let watchdog = Task {
            try await Task.sleep(for: duration + .seconds(40))
            kill(postern, SIGKILL)
        }
        defer { watchdog.cancel() }
        let results = await withTaskGroup(of: (verified: Int, failure: String?).self) { group in
            for index in 0..<streams {
                group.addTask {
                    var verified = 0
                    do {
                        let socket = try await socks5Connect(proxyPort: 39744, to: target)
                        defer { socket.close() }
                        var round: UInt32 = 0
                        while ContinuousClock.now - started < duration {
                            // 4 KiB that differ per stream and per round.
                            let chunk = (0..<4096).map { UInt8(truncatingIfNeeded: UInt32($0) &* 31 &+ UInt32(index) &* 131 &+ round &* 7) }
                            try await socket.write(chunk)
                            var back: [UInt8] = []
                            while back.count < chunk.count {
                                let piece = try await socket.read(maximumCount: chunk.count - back.count)
                                if piece.isEmpty { return (verified, "stream \(index): closed after \(verified) bytes") }
                                back += piece
                            }
                            guard back == chunk else { return (verified, "stream \(index): wrong bytes in round \(round)") }
                            verified += chunk.count
                            round &+= 1
                        }
                        return (verified, nil)
                    } catch {
                        return (verified, "stream \(index): \(error) after \(verified) bytes")
                    }
                }
            }
            var all: [(verified: Int, failure: String?)] = []
            for await result in group { all.append(result) }
            return all
        }
        let elapsed = ContinuousClock.now - started
        let status = (try? String(contentsOfFile: "/proc/\(run.processIdentifier)/status", encoding: .utf8)) ?? ""
        let peakKiB = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            .flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        let total = results.reduce(0) { $0 + $1.verified }
        let failures = results.compactMap(\.failure)
        print("snowflake load: \(streams) streams for \(elapsed): \(total >> 10) KiB echoed and verified (\(String(format: "%.2f", Double(total) / 1_000_000 / Double(elapsed.components.seconds))) MB/s each way), fewest per stream \((results.map(\.verified).min() ?? 0) >> 10) KiB; postern peak RSS \(peakKiB >> 10) MiB")
        let torLog = (try? String(contentsOf: config.appendingPathComponent("state/tor/tor.log"), encoding: .utf8)) ?? ""
        #expect(failures.isEmpty, "\(failures.prefix(5))\npostern: \(run.output.suffix(1500))\ntor.log: \(torLog.suffix(1500))")
        #expect(results.count == streams && results.allSatisfy { $0.verified > 0 }, "every stream carried verified bytes")
        #expect(peakKiB > 0 && peakKiB < 1 << 20, "peak RSS \(peakKiB) KiB (bound 1 GiB)")
        #expect(run.isRunning, "postern kept running")
        #expect(run.interruptAndWait() == 0)
    }
}
