import Foundation
import Glibc
import Testing
import TransportWire
@testable import SnowflakeTransport

/// A real tor client bootstraps through our KCP/smux session and fetches the test bed's 4 MiB blob:
/// tor → SOCKS5 listener (this file, a stand-in until TransportBase's PT listener lands) → our
/// SnowflakeSession → WebSocket → the test bed's snowflake server (upstream Turbo Tunnel, kcp-go,
/// smux) → the vanilla bridge. WebRTC is not involved yet: the WebSocket replaces the proxy.
@Suite(.serialized) struct TorOverSessionTests {
    @Test(.timeLimit(.minutes(3))) func torBootstrapsAndFetchesTheBlobThroughOurSession() async throws {
        let bed = try SnowflakeTestBed.require()
        let relay = try #require(URL(string: bed["TB_SNOWFLAKE_RELAY_URL"]))
        let listener = try SOCKSSessionListener(relay: relay)
        defer { listener.stop() }
        let result = try await runTorAndFetchBlob(bed: bed, transportPort: listener.port)
        #expect(listener.sessionsStarted >= 1)
        #expect(result.blobOK)
        // Timings for the report (not asserted: speed belongs in benchmarks).
        print("snowflake session: tor bootstrapped in \(result.bootstrap), 4 MiB blob in \(result.fetch)")
    }

    /// After bootstrap every carrier is dropped; the sessions redial with the same ClientID and
    /// KCP conversation, tor's connection survives, and the blob still arrives intact.
    @Test(.timeLimit(.minutes(3))) func sessionsSurviveALostCarrier() async throws {
        let bed = try SnowflakeTestBed.require()
        let relay = try #require(URL(string: bed["TB_SNOWFLAKE_RELAY_URL"]))
        let listener = try SOCKSSessionListener(relay: relay)
        defer { listener.stop() }
        let result = try await runTorAndFetchBlob(bed: bed, transportPort: listener.port) {
            await listener.abandonAllCarriers()
        }
        #expect(result.blobOK)
        #expect(await listener.mostCarriersUsed() >= 2)
        #expect(listener.sessionsStarted == 1, "tor kept its one connection: the session, not tor, recovered")
    }
}

/// Runs a plain tor client of the test bed whose snowflake bridge goes through the SOCKS5 listener
/// on `transportPort`, waits for "Bootstrapped 100%" (90 s at most), fetches the 4 MiB blob through
/// it and checks size and sha256.
func runTorAndFetchBlob(bed: SnowflakeTestBed, transportPort: UInt16,
                        afterBootstrap: @Sendable () async -> Void = {}) async throws
    -> (bootstrap: Duration, fetch: Duration, blobOK: Bool) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-sf-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                            attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(at: directory) }
    let socksPort = 19_180 + Int.random(in: 0..<400)
    let torrc = try String(contentsOfFile: bed["TB_CLIENT_TORRC"], encoding: .utf8) + """
        DataDirectory \(directory.path)
        Log notice file \(directory.path)/notice.log
        SocksPort 127.0.0.1:\(socksPort)
        GeoIPFile ""
        GeoIPv6File ""
        UseBridges 1
        ClientTransportPlugin snowflake socks5 127.0.0.1:\(transportPort)
        __OwningControllerProcess \(getpid())
        Bridge \(bed["TB_BRIDGE_SNOWFLAKE"])

        """
    try torrc.write(to: directory.appendingPathComponent("torrc"), atomically: true, encoding: .utf8)
    let tor = Process()
    tor.executableURL = URL(fileURLWithPath: "/usr/sbin/tor")
    tor.arguments = ["--defaults-torrc", "/dev/null", "-f", directory.appendingPathComponent("torrc").path]
    tor.standardOutput = FileHandle.nullDevice
    tor.standardError = FileHandle.nullDevice
    try tor.run()
    // SIGKILL: the child inherits the test process's blocked signal mask, so SIGTERM would wait.
    defer {
        kill(tor.processIdentifier, SIGKILL)
        tor.waitUntilExit()
    }

    let started = ContinuousClock.now
    var bootstrapped = false
    while ContinuousClock.now - started < .seconds(90) {
        let log = (try? String(contentsOfFile: directory.appendingPathComponent("notice.log").path, encoding: .utf8)) ?? ""
        if log.contains("Bootstrapped 100%") { bootstrapped = true; break }
        try await Task.sleep(for: .milliseconds(200))
    }
    let bootTime = ContinuousClock.now - started
    try #require(bootstrapped, "tor did not bootstrap through the snowflake transport within 90 s")
    await afterBootstrap()

    let blob = directory.appendingPathComponent("blob.bin")
    let fetchStart = ContinuousClock.now
    let curl = Process()
    curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    curl.arguments = ["--silent", "--show-error", "--fail", "--max-time", "90", "--socks5-hostname",
                      "127.0.0.1:\(socksPort)", "--output", blob.path, bed["TB_BLOB_URL"]]
    try curl.run()
    // Never block the cooperative pool (two threads here): the session runs on it.
    while curl.isRunning { try await Task.sleep(for: .milliseconds(100)) }
    let fetchTime = ContinuousClock.now - fetchStart
    guard curl.terminationStatus == 0, let data = try? Data(contentsOf: blob), data.count == Int(bed["TB_BLOB_SIZE"]) else {
        return (bootTime, fetchTime, false)
    }
    let sum = Process()
    sum.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    sum.arguments = [blob.path]
    let pipe = Pipe()
    sum.standardOutput = pipe
    try sum.run()
    while sum.isRunning { try await Task.sleep(for: .milliseconds(50)) }
    let digest = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(64)
    return (bootTime, fetchTime, String(digest) == bed["TB_BLOB_SHA256"])
}

/// A loopback SOCKS5 listener that runs every accepted connection over a new SnowflakeSession on a
/// WebSocket to `relay`. It ignores the CONNECT target and the PT arguments (as snowflake does),
/// and grants at once.
final class SOCKSSessionListener: @unchecked Sendable {
    typealias CarrierFactory = @Sendable () async throws -> any ByteStream
    let port: UInt16
    private let fd: Int32
    private let makeCarrier: CarrierFactory
    private let counter = NSLock()
    private var started = 0
    private var sessions: [SnowflakeSession] = []
    private var thread: Thread?

    var sessionsStarted: Int { counter.withLock { started } }

    /// Drops every session's current carrier, as if its proxy had gone away.
    func abandonAllCarriers() async {
        for session in counter.withLock({ sessions }) { await session.abandonCarrier() }
    }

    /// The most carriers any one session has used.
    func mostCarriersUsed() async -> Int {
        var most = 0
        for session in counter.withLock({ sessions }) { most = max(most, await session.carriersUsed) }
        return most
    }

    /// Each session over a WebSocket straight to the server at `relay`.
    convenience init(relay: URL) throws {
        try self.init {
            try await WebSocketByteStream.connect(url: relay, connector: PlainTCPConnector(timeoutSeconds: 120))
        }
    }

    init(makeCarrier: @escaping CarrierFactory) throws {
        self.makeCarrier = makeCarrier
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw SnowflakeError(code: .connection, kind: .network, message: "listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        self.thread = thread
        thread.start()
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    private func acceptLoop() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 { return }
            let stream = TCPByteStream.adopting(descriptor: client)
            let makeCarrier = makeCarrier
            let session = SnowflakeSession()
            counter.withLock {
                started += 1
                sessions.append(session)
            }
            Task { await Self.serve(stream, session: session, makeCarrier: makeCarrier) }
        }
    }

    private static func serve(_ client: TCPByteStream, session: SnowflakeSession, makeCarrier: @escaping CarrierFactory) async {
        do {
            var buffer: [UInt8] = []
            func need(_ n: Int) async throws -> [UInt8] {
                while buffer.count < n {
                    let piece = try await client.read(maximumCount: 4096)
                    if piece.isEmpty { throw SnowflakeError(code: .closed, kind: .network, message: "SOCKS client left") }
                    buffer += piece
                }
                let out = Array(buffer.prefix(n))
                buffer.removeFirst(n)
                return out
            }
            let greeting = try await need(2)
            let methods = try await need(Int(greeting[1]))
            if methods.contains(2) {
                try await client.write([5, 2])
                let version = try await need(2)
                _ = try await need(Int(version[1]))
                let passwordLength = try await need(1)
                _ = try await need(Int(passwordLength[0]))
                try await client.write([1, 0])
            } else {
                try await client.write([5, 0])
            }
            let request = try await need(4)
            switch request[3] {
            case 1: _ = try await need(4 + 2)
            case 4: _ = try await need(16 + 2)
            default: _ = try await need(Int(try await need(1)[0]) + 2)
            }
            try await client.write([5, 0, 0, 1, 0, 0, 0, 0, 0, 0])

            try await session.start(dialer: makeCarrier)
            if !buffer.isEmpty { try await session.write(buffer) }
            let upstream = Task {
                while true {
                    let bytes = try await client.read(maximumCount: 64 * 1024)
                    if bytes.isEmpty { try await session.finish(); return }
                    try await session.write(bytes)
                }
            }
            for try await piece in session.incoming {
                try await client.write(piece)
                await session.acknowledgeRead(piece.count)  // smux's window opens as tor reads
            }
            upstream.cancel()
            await session.close()
        } catch {
            // The connection ends; tor retries with a new one.
        }
        client.close()
    }
}
