import PosternTestSupport
import Foundation
import Testing

/// Issue 9: load through obfs4, and the faults a user's machine or bridge will see.

/// The echo service the load test talks to through the exits: any 127.x address, a port the exits
/// allow (TB_SERVICE_PORTS, 8000-8999).
private let echoHost = "127.0.4.9", echoPort = 8709

extension TestBedSuite {
    /// 200 concurrent SOCKS streams for 60 s through `postern run` and the test bed's obfs4 bridge
    /// (under block-tor, so nothing else gets through) to an echo service behind the exits. Every
    /// stream sends bytes from its own seeded generator and checks each echoed byte; the echo
    /// service's byte count must equal the client's. The run's RSS is sampled throughout.
    ///
    /// The RSS bound: the run idles at roughly 40-60 MiB (tor's consensus and descriptors, the Swift
    /// runtime). Under this load tor queues at most a circuit window (1000 cells of 514 bytes,
    /// ~0.5 MiB) per circuit and a stream window (500 cells, ~0.25 MiB) per stream, i.e. about 50 MiB
    /// for 200 streams, plus our obfs4 framing's buffers for the one bridge connection. Peak RSS
    /// above the idle figure + 128 MiB, or a second half of the run that grows by more than 48 MiB
    /// (memory that grows with the bytes moved, not with the streams), is a leak or an unbounded queue.
    @Test func obfs4CarriesTwoHundredVerifiedStreamsForAMinuteWithBoundedMemory() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("obfs4-load")
        defer { try? FileManager.default.removeItem(at: config) }
        let echo = try PeerProcess(script: "echo_peer.py", arguments: [echoHost, "\(echoPort)"])
        defer { echo.stop() }
        _ = try await echo.port()

        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39143", "--transport", "obfs4",
                                      "--bridge", bed["TB_BRIDGE_OBFS4"], "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39143", timeout: 60)
        try #require(ready?.contains("route: bridges") == true, "output: \(run.output)")
        let pid = run.processIdentifier
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39143")
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        let idleKiB = try #require(ProcView.statusKiB(pid, "VmRSS"))

        let streams = 200, seconds = 60, chunk = 8192
        let started = ContinuousClock.now
        let load = try PeerProcess(script: "socks_load.py",
                                   arguments: ["127.0.0.1:39143", "\(echoHost):\(echoPort)", "\(streams)", "\(seconds)", "\(chunk)"])
        defer { load.stop() }
        var samples: [(seconds: Double, kib: Int)] = []
        var resultLine: String?
        while resultLine == nil, ContinuousClock.now - started < .seconds(seconds + 120) {
            if let kib = ProcView.statusKiB(pid, "VmRSS") { samples.append(((ContinuousClock.now - started).inSeconds, kib)) }
            resultLine = load.output.first { $0.hasPrefix("RESULT ") }
            try await Task.sleep(for: .milliseconds(500))
        }
        let text = try #require(resultLine, "the load client never finished; output: \(load.output)")
        let result = try JSONDecoder().decode(LoadResult.self, from: Data(text.dropFirst("RESULT ".count).utf8))
        let peakKiB = max(ProcView.statusKiB(pid, "VmHWM") ?? 0, samples.map(\.kib).max() ?? 0)
        #expect(run.isRunning, "postern run survived the load; output: \(run.output)")

        #expect(result.connected == streams, "streams connected: \(result.connected) of \(streams); errors: \(result.errors)")
        #expect(result.verified == streams, "streams verified to the end: \(result.verified) of \(streams); errors: \(result.errors)")
        #expect(result.error_count == 0, "errors: \(result.errors)")
        #expect(result.bytes_min >= chunk, "every stream completed at least one verified round (min \(result.bytes_min) bytes)")
        // The echo service saw every stream close, and echoed exactly what the clients verified.
        var closed: [Int] = []
        for _ in 0..<100 {
            closed = echo.output.filter { $0.hasPrefix("CLOSED ") }.compactMap { Int($0.dropFirst("CLOSED ".count)) }
            if closed.filter({ $0 > 0 }).count >= streams { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        // A stream tor retried at another exit may leave an empty connection behind: count those apart.
        let carrying = closed.filter { $0 > 0 }
        #expect(carrying.count == streams, "connections that carried bytes at the echo service: \(carrying.count) (\(closed.count) in all)")
        #expect(closed.reduce(0, +) == result.bytes_total, "echoed \(closed.reduce(0, +)) bytes, verified \(result.bytes_total)")

        let bound = idleKiB + 128 * 1024
        #expect(peakKiB < bound, "peak RSS \(peakKiB / 1024) MiB, idle \(idleKiB / 1024) MiB")
        let loadSamples = samples.filter { $0.seconds <= Double(seconds) + result.connect_max_seconds + 5 }
        let half = loadSamples.filter { $0.seconds <= Double(seconds) / 2 }.map(\.kib).max() ?? 0
        let end = loadSamples.map(\.kib).max() ?? 0
        #expect(end - half < 48 * 1024, "RSS grew by \((end - half) / 1024) MiB in the second half of the load")
        let complaints = run.output.split(separator: "\n").filter { $0.hasPrefix("transport:") || $0.contains("error") }
        #expect(complaints.isEmpty, "no errors from the run: \(complaints)")
        print("load obfs4: \(streams) streams × \(seconds) s, \(result.verified) verified, \(result.error_count) errors, "
              + "\(String(format: "%.1f", Double(result.bytes_total) / 1_048_576)) MiB echoed and verified "
              + "(per stream \(result.bytes_min / 1024)–\(result.bytes_max / 1024) KiB), slowest SOCKS connect \(result.connect_max_seconds) s; "
              + "RSS idle \(idleKiB / 1024) MiB, at half-time \(half / 1024) MiB, peak \(peakKiB / 1024) MiB (bound \(bound / 1024) MiB)")
        #expect(run.interruptAndWait() == 0, "output: \(run.output)")
    }
}

/// socks_load.py's RESULT line.
private struct LoadResult: Decodable {
    let streams: Int
    let connected: Int
    let verified: Int
    let bytes_total: Int
    let bytes_min: Int
    let bytes_max: Int
    let connect_max_seconds: Double
    let elapsed_seconds: Double
    let error_count: Int
    let errors: [String]
}

extension TestBedSuite {
    /// The obfs4 server of the bridge (the test bed's obfs4proxy, managed by the bridge's tor) is
    /// killed mid-session. The bridge's tor restarts it (tor relaunches a managed proxy that exits),
    /// on the same address with the same keys. The `postern run` connected through it must recover
    /// on its own: same process, a new connection to the bridge, new fetches succeed. The test bed
    /// is left as found (its obfs4proxy running under the bridge, in the network's group).
    @Test func obfs4ServerKilledMidSessionRunRecoversWithoutRestart() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("obfs4-server-fault")
        defer { try? FileManager.default.removeItem(at: config) }
        let bridgeTor = try #require(bed.recordedPID("bridge-obfs4"), "the test bed's obfs4 bridge PID")
        let bridgeAddress = bed["TB_OBFS4_ADDR"], bridgePort = Int(bed["TB_OBFS4_PORT"]) ?? 0
        let server = try #require(Self.obfs4Server(of: bridgeTor, listeningOn: bridgeAddress, bridgePort),
                                  "obfs4proxy listening under the bridge's tor")

        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39144", "--transport", "obfs4",
                                      "--bridge", bed["TB_BRIDGE_OBFS4"], "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        try #require(try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39144", timeout: 60) != nil, "output: \(run.output)")
        let pid = run.processIdentifier
        let first = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39144")
        #expect(first.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(first.stderr)")
        let toBridge = { ProcView.tcpSockets(of: pid, state: "01").filter { $0.remoteAddress == bridgeAddress && $0.remotePort == bridgePort } }
        let before = Set(toBridge().map(\.localPort))
        #expect(!before.isEmpty, "the run holds a connection to the obfs4 bridge")

        let killedAt = ContinuousClock.now
        kill(server, SIGKILL)
        var restarted: Int32?
        while restarted == nil, ContinuousClock.now - killedAt < .seconds(30) {
            try await Task.sleep(for: .milliseconds(100))
            if let candidate = Self.obfs4Server(of: bridgeTor, listeningOn: bridgeAddress, bridgePort), candidate != server {
                restarted = candidate
            }
        }
        let serverBack = ContinuousClock.now - killedAt
        let newServer = try #require(restarted, "the bridge's tor did not restart its obfs4proxy within 30 s: the test bed is broken now")

        // Fetch until a page comes back, each try bounded; the run must not need a restart.
        var recovered: Duration?
        var attempts = 0, lastError = ""
        while recovered == nil, ContinuousClock.now - killedAt < .seconds(90) {
            attempts += 1
            let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39144", timeout: 20)
            if page.stdout.contains(bed["TB_HTTP_MARKER"]) { recovered = ContinuousClock.now - killedAt } else { lastError = page.stderr }
            if recovered == nil { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(recovered != nil, "no page within 90 s of the kill (\(attempts) tries, last: \(lastError)); output: \(run.output)")
        #expect(run.isRunning && run.processIdentifier == pid, "the same postern run served before and after")
        let after = Set(toBridge().map(\.localPort))
        #expect(!after.isEmpty && after.isDisjoint(with: before), "a new connection to the bridge (before \(before), after \(after))")
        let blob = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c",
            "curl -s --max-time 60 --socks5-hostname 127.0.0.1:39144 '\(bed["TB_BLOB_URL"])' | sha256sum"])
        #expect(blob.stdout.hasPrefix(bed["TB_BLOB_SHA256"]), "4 MiB intact through the restarted server")
        print("obfs4 server fault: obfs4proxy \(server) killed; the bridge's tor restarted it as \(newServer) after \(serverBack); "
              + "postern run served a page again \(recovered.map { "\($0)" } ?? "never") after the kill (\(attempts) fetch tries), same PID, "
              + "bridge connection \(before.sorted()) → \(after.sorted())")
        #expect(run.interruptAndWait() == 0, "output: \(run.output)")

        // The bed as found: an obfs4proxy of the network group serving the bridge, every process alive.
        let gid = ProcView.processes().first { $0.pid == newServer }?.gid
        #expect(gid == UInt32(bed["TB_NETWORK_GID"]), "the new obfs4proxy is in the network's group (\(gid.map(String.init) ?? "gone"))")
        #expect(try bed.statusCode() == 0, "scripts/testbed status after the fault")
    }

    /// The obfs4proxy child of the bridge's tor that listens on the bridge's obfs4 address.
    private static func obfs4Server(of bridgeTor: Int32, listeningOn address: String, _ port: Int) -> Int32? {
        ProcView.processes().first { process in
            process.parent == bridgeTor && process.name == "obfs4proxy"
                && ProcView.tcpSockets(of: process.pid, state: "0A").contains { $0.localAddress == address && $0.localPort == port }
        }?.pid
    }

    /// `postern run` killed with SIGKILL (a crash, the OOM killer), once while bootstrapping and once
    /// while serving a download: the next start with the same config and state directories and
    /// the same SOCKS port is clean — no stale listener or child left behind, `postern status`
    /// not fooled by the stale status file, tor's stale lock file no obstacle — and it bootstraps
    /// and serves.
    @Test func runKilledWithSIGKILLStartsCleanNextTime() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("sigkill")
        defer { try? FileManager.default.removeItem(at: config) }
        let arguments = ["run", "--config-dir", config.path, "--socks", "39145", "--transport", "obfs4",
                         "--bridge", bed["TB_BRIDGE_OBFS4"], "--tor-options-file", bed["TB_CLIENT_TORRC"]]
        let statusFile = config.appendingPathComponent("state/run-status.json")
        let torLock = config.appendingPathComponent("state/tor/lock")

        // 1. Killed while bootstrapping (once tor has started and the PT listener is up).
        let early = try RunningPostern(arguments)
        defer { early.terminate() }
        try #require(await waitForListener(port: 39145, of: early.processIdentifier, timeout: 30), "output: \(early.output)")
        let earlyListeners = Set(ProcView.tcpSockets(of: early.processIdentifier, state: "0A").map(\.localPort))
        let earlyChildren = ProcView.children(of: early.processIdentifier)
        #expect(!early.output.contains("ready:"), "killed before it was ready: \(early.output)")
        early.killAndWait()
        #expect(early.terminationStatus == SIGKILL)
        try Self.expectNothingLeftBehind(listeners: earlyListeners, children: earlyChildren, config: config)

        // 2. Killed while serving: ready, then a download in flight.
        let serving = try RunningPostern(arguments)
        defer { serving.terminate() }
        let servingStarted = ContinuousClock.now
        try #require(try await serving.waitForLine(containing: "ready: socks5 127.0.0.1:39145", timeout: 60) != nil,
                     "start after a kill while bootstrapping; output: \(serving.output)")
        let afterEarlyKill = ContinuousClock.now - servingStarted
        // 64 KiB/s: the 4 MiB blob takes 64 s, so the kill below lands mid-download (unthrottled it
        // once arrived whole between the first byte and the kill; at 256 KiB/s, 16 s, it did too
        // on a machine loaded 20 times over, where this test's polling waited that long).
        let download = try BackgroundFetch(url: bed["TB_BLOB_URL"], socks: "127.0.0.1:39145", timeout: 90, limitRate: "64k")
        for _ in 0..<1500 where download.received == 0 && download.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        let servingListeners = Set(ProcView.tcpSockets(of: serving.processIdentifier, state: "0A").map(\.localPort))
        #expect(servingListeners.count >= 2, "SOCKS and the obfs4 PT listener: \(servingListeners)")
        let servingChildren = ProcView.children(of: serving.processIdentifier)
        serving.killAndWait()
        // What was sent before the kill may still sit in curl's socket: let it drain at once
        // rather than at 64 KiB/s (2.4 MB took 37 s), then curl meets the cut connection.
        download.stopLimiting()
        let cut = await download.result()
        #expect(cut.status != 0 && download.received < Int(bed["TB_BLOB_SIZE"]) ?? 0,
                "the download was in flight when the run was killed (curl \(cut.status), \(download.received) bytes)")
        #expect(FileManager.default.fileExists(atPath: statusFile.path), "the killed run left its status file (stale)")
        #expect(FileManager.default.fileExists(atPath: torLock.path), "the killed run left tor's lock file (stale)")
        try Self.expectNothingLeftBehind(listeners: servingListeners, children: servingChildren, config: config)

        // 3. The next start is clean: bootstraps, serves, stops.
        let next = try RunningPostern(arguments)
        defer { next.terminate() }
        let nextStarted = ContinuousClock.now
        try #require(try await next.waitForLine(containing: "ready: socks5 127.0.0.1:39145", timeout: 60) != nil,
                     "start after a kill while serving; output: \(next.output)")
        let afterServingKill = ContinuousClock.now - nextStarted
        let status = try await ProcessRunner.run(ProcessRunner.postern, ["status", "--json", "--config-dir", config.path])
        #expect(status.status == 0 && status.stdout.contains("\"pid\":\(next.processIdentifier)"), "status: \(status.stdout)")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39145")
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        let complaints = (early.output + serving.output + next.output).split(separator: "\n")
            .filter { $0.contains("error") || $0.contains("lock") || $0.contains("in use") }
        #expect(complaints.isEmpty, "\(complaints)")
        print("SIGKILL: after a kill while bootstrapping, ready in \(afterEarlyKill); after a kill while serving "
              + "(download cut at \(download.received) bytes), ready in \(afterServingKill); "
              + "listeners of the killed runs \(earlyListeners.sorted()) and \(servingListeners.sorted()) all gone, no child left")
        #expect(next.interruptAndWait() == 0, "output: \(next.output)")
    }

    /// After a SIGKILL: nobody listens on the dead run's ports, none of its children survive, and
    /// `postern status` says nothing runs although the status file is still there.
    private static func expectNothingLeftBehind(listeners: Set<Int>, children: [Int32], config: URL) throws {
        let listening = ProcView.sockets("tcp").filter { $0.state == "0A" && listeners.contains($0.localPort) }
        #expect(listening.isEmpty, "stale listeners on \(listening.map(\.localPort))")
        let survivors = children.filter(ProcView.isAlive)
        #expect(survivors.isEmpty, "children of the killed run still alive: \(survivors)")
        let status = try ProcessRunner.runBlocking(ProcessRunner.postern, ["status", "--config-dir", config.path])
        #expect(status.status == 1 && status.stdout.contains("not running"), "status after the kill: \(status.stdout)")
    }
}

/// A store file that cannot be read, or does not parse: every command that needs it fails with an
/// error naming the file and the reason, exit status 1, and the file is left exactly as it was.
/// `postern run` gets a tor options file that keeps tor off every network, so even a regression
/// that ignored the store could not dial anything.
@Suite struct StoreFaultTests {
    enum Damage: String, CaseIterable, Sendable {
        /// A directory where the file should be (chmod 000 means nothing to root, which tests run as).
        case directoryInPlace
        case garbageBytes
        case truncatedJSON
    }

    @Test(arguments: Damage.allCases)
    func damagedStoreIsReportedAndLeftAlone(_ damage: Damage) throws {
        let config = TestBed.temporaryDirectory("store-\(damage.rawValue)")
        defer { try? FileManager.default.removeItem(at: config) }
        let store = config.appendingPathComponent("bridges.json")
        let reason: String
        switch damage {
        case .directoryInPlace:
            try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
            try Data("keep me".utf8).write(to: store.appendingPathComponent("inside"))
            reason = "Is a directory"
        case .garbageBytes:
            try Data((0..<512).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }).write(to: store)
            reason = "not a JSON object"
        case .truncatedJSON:
            try Data(#"{"version":1,"bridges":[{"id":"a1","line":"obfs4 127.0.3.2:5100 "#.utf8).write(to: store)
            reason = "not a JSON object"
        }
        let offline = config.appendingPathComponent("offline.torrc")
        try """
        DisableNetwork 1
        TestingTorNetwork 1
        DirAuthority nowhere orport=9 no-v2 v3ident=0000000000000000000000000000000000000000 127.0.0.1:9 0000000000000000000000000000000000000000
        """.write(to: offline, atomically: true, encoding: .utf8)
        let snapshot = try Self.snapshot(config)

        let commands: [[String]] = [
            ["run", "--socks", "39146", "--tor-options-file", offline.path],
            ["bridges", "add", "obfs4 127.0.3.2:5100 0123456789ABCDEF0123456789ABCDEF01234567 cert=AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNA iat-mode=0"],
            ["bridges", "list"],
            ["transport", "use", "obfs4"],
            ["tor", "on"],
        ]
        for command in commands {
            let result = try ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/timeout"),
                                               ["-s", "KILL", "20", ProcessRunner.postern.path] + command + ["--config-dir", config.path])
            let label = command.prefix(2).joined(separator: " ")
            #expect(result.status == 1, "\(label) exits 1, not \(result.status); stderr: \(result.stderr)")
            #expect(result.stderr.contains(store.path), "\(label) names the file: \(result.stderr)")
            #expect(result.stderr.contains(reason), "\(label) says why (\(reason)): \(result.stderr)")
            #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Stack dump"), "\(label) crashed: \(result.stderr)")
            #expect(try Self.snapshot(config) == snapshot, "\(label) changed the store or left files behind")
        }
    }

    /// Every path under `directory` (but the lock file the store creates to serialize writers) with
    /// its bytes, so that any change, addition or removal shows.
    private static func snapshot(_ directory: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        while let path = enumerator?.nextObject() as? String {
            guard path != "bridges.json.lock" else { continue }
            let full = directory.appendingPathComponent(path).path
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory)
            files[path] = isDirectory.boolValue ? Data("<dir>".utf8) : try Data(contentsOf: URL(fileURLWithPath: full))
        }
        return files
    }
}
