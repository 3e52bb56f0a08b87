import PosternTestSupport
import Foundation
import Testing
import TransportBase

/// A running `postern pt-client` offering snowflake, and SOCKS sessions to it with pt-spec
/// arguments (RFC 1929 user name), as tor opens them.
private struct ManagedSnowflakeClient {
    let run: RunningPostern
    let port: UInt16

    static func start(state: URL) async throws -> ManagedSnowflakeClient {
        let run = try RunningPostern(["pt-client"], environment: [
            "TOR_PT_MANAGED_TRANSPORT_VER": "1", "TOR_PT_CLIENT_TRANSPORTS": "snowflake",
            "TOR_PT_STATE_LOCATION": state.path,
        ])
        let line = try #require(try await run.waitForLine(containing: "CMETHOD snowflake socks5", timeout: 30), "output: \(run.output)")
        let port = try #require(line.split(separator: ":").last.flatMap { UInt16($0.prefix { $0.isNumber }) })
        return ManagedSnowflakeClient(run: run, port: port)
    }

    /// SOCKS5 with the bridge arguments as the user name (password a single NUL, as tor sends
    /// short arguments), CONNECT to the snowflake placeholder address.
    func open(arguments: String) async throws -> TCPSocket {
        let socket = try await TCPSocket.connect(to: try TransportEndpoint(ipv4: [127, 0, 0, 1], port: port), timeout: .seconds(10))
        func readExactly(_ count: Int) async throws -> [UInt8] {
            var out: [UInt8] = []
            while out.count < count {
                let chunk = try await socket.read(maximumCount: count - out.count)
                if chunk.isEmpty { throw CancellationError() }
                out += chunk
            }
            return out
        }
        let user = Array(arguments.utf8)
        try #require(user.count <= 255)
        try await socket.write([5, 1, 2])
        #expect(try await readExactly(2) == [5, 2])
        try await socket.write([1, UInt8(user.count)] + user + [1, 0])
        #expect(try await readExactly(2) == [1, 0])
        try await socket.write([5, 1, 0, 1, 192, 0, 2, 3, 0, 1])
        let reply = try await readExactly(10)
        #expect(reply[1] == 0, "SOCKS reply \(reply[1])")
        return socket
    }

    var pid: Int32 { run.processIdentifier }
    var logLines: [String] { run.output.split(separator: "\n").filter { $0.hasPrefix("LOG ") }.map(String.init) }
}

/// Reads until `want` bytes, EOF or `timeout` (the socket is then closed).
private func readReply(_ socket: TCPSocket, want: Int, timeout: Duration) async -> [UInt8] {
    let watchdog = Task {
        try? await Task.sleep(for: timeout)
        socket.close()
    }
    defer { watchdog.cancel() }
    var reply: [UInt8] = []
    while reply.count < want {
        guard let chunk = try? await socket.read(maximumCount: 65536), !chunk.isEmpty else { break }
        reply += chunk
    }
    return reply
}

private func isServerHello(_ reply: [UInt8]) -> Bool {
    reply.count > 5 && reply[0] == 0x16 && reply[1] == 0x03 && reply[5] == 0x02
}

/// Waits until a LOG line contains `text`; the line, or nil after `timeout`.
private func waitForLog(_ client: ManagedSnowflakeClient, _ text: String, timeout: Duration) async -> String? {
    let started = ContinuousClock.now
    while ContinuousClock.now - started < timeout {
        if let line = client.logLines.first(where: { $0.contains(text) }) { return line }
        try? await Task.sleep(for: .milliseconds(200))
    }
    return nil
}

/// The snowflake bridge line's fingerprint= and ice= values.
private func bridgeArgument(_ line: String, _ key: String) -> String {
    line.split(separator: " ").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) } ?? ""
}

/// Bytes of resident memory, from /proc/PID/status.
private func residentMiB(_ pid: Int32, _ key: String = "VmRSS") -> Int {
    (ProcView.statusKiB(pid, key) ?? Int.max / 1024) / 1024
}

/// The resident-memory bound the hostile peers must not push `postern pt-client` past: its
/// baseline (~30 MiB) plus the stated caps of every session open at once (broker bodies 100 KB,
/// KCP 2.8 MB, smux 1 MiB, data channel 8 MiB per session), with room for the allocator.
private let residentLimitMiB = 160

extension TestBedSuite {
    /// Issue #12's hostile brokers (Tests/Support/snowflake-testbed/hostile-broker.py) against one
    /// `postern pt-client`: each session ends with a typed error that names the broker or proxy
    /// (never an address), the process stays up and under the memory bound, and a session with
    /// the real broker works at the same time and afterwards.
    @Test(.timeLimit(.minutes(4))) func ptClientSurvivesHostileBrokers() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!bridge.isEmpty, "the test bed's snowflake stack is not up")
        let hostile = bed["TB_SNOWFLAKE_HOSTILE_BROKER_URL"]
        try #require(!hostile.isEmpty, "the test bed has no hostile broker")
        let fingerprint = bridgeArgument(bridge, "fingerprint"), ice = bridgeArgument(bridge, "ice")
        let state = TestBed.temporaryDirectory("hostile-broker")
        defer { try? FileManager.default.removeItem(at: state) }
        let client = try await ManagedSnowflakeClient.start(state: state)
        defer { client.run.terminate() }

        let cases: [(mode: String, expected: String)] = [
            ("chunk-overflow", "the broker's response is larger than 100000 bytes"),
            ("endless-headers", "the broker sent a malformed HTTP response: the header section is too large"),
            ("huge-body", "the broker's response is larger than"),
            ("huge-chunked", "the broker's response is larger than"),
            ("huge-eof", "the broker's response is larger than"),
            ("slow-drip", "the broker did not finish its HTTP response in time"),
            ("invalid-json", "the broker's poll response is not valid JSON"),
            ("hostile-sdp", "ICE candidates, more than 32"),
            ("garbage-sdp", "the proxy's answer has a malformed fingerprint"),
            ("silent-proxy", "ICE with the snowflake proxy did not connect"),
        ]
        let started = ContinuousClock.now
        let replies = try await withThrowingTaskGroup(of: (String, [UInt8]).self) { group in
            for (mode, _) in cases {
                group.addTask {
                    let socket = try await client.open(arguments: "url=\(hostile)\(mode)/;fingerprint=\(fingerprint);ice=\(ice)")
                    try await socket.write(tlsClientHello())
                    return (mode, await readReply(socket, want: 100, timeout: .seconds(90)))
                }
            }
            // A session with the real broker while the hostile ones run.
            group.addTask {
                let socket = try await client.open(arguments: "url=\(bed["TB_SNOWFLAKE_BROKER_URL"]);fingerprint=\(fingerprint);ice=\(ice)")
                try await socket.write(tlsClientHello())
                defer { socket.close() }
                return ("good", await readReply(socket, want: 100, timeout: .seconds(90)))
            }
            var replies: [String: [UInt8]] = [:]
            for try await (mode, reply) in group { replies[mode] = reply }
            return replies
        }
        print("hostile brokers: all sessions over in \(ContinuousClock.now - started); pt-client VmRSS \(residentMiB(client.pid)) MiB, VmHWM \(residentMiB(client.pid, "VmHWM")) MiB")
        #expect(isServerHello(replies["good"] ?? []), "the session with the real broker works beside the hostile ones")
        for (mode, expected) in cases {
            #expect(replies[mode]?.isEmpty == true, "\(mode): the session ended without data")
            #expect(await waitForLog(client, expected, timeout: .seconds(5)) != nil, "\(mode): no LOG line with '\(expected)'")
        }
        #expect(client.logLines.filter { $0.contains("the broker's response is larger than") }.count >= 4)
        // The slow drip met the exchange deadline (30 s), not the per-read timeout it never hit.
        #expect(ContinuousClock.now - started < .seconds(80))
        #expect(client.run.isRunning, "pt-client is alive")
        #expect(residentMiB(client.pid, "VmHWM") < residentLimitMiB, "peak RSS under \(residentLimitMiB) MiB after 100 MB bodies")
        let hostileHost = String(hostile.dropFirst("http://".count).prefix { $0 != ":" })
        for line in client.logLines {
            #expect(!line.contains(hostileHost), "a LOG line names the broker's address: \(line)")
        }
        // And the next session after all of them works too.
        let socket = try await client.open(arguments: "url=\(bed["TB_SNOWFLAKE_BROKER_URL"]);fingerprint=\(fingerprint);ice=\(ice)")
        defer { socket.close() }
        try await socket.write(tlsClientHello())
        #expect(isServerHello(await readReply(socket, want: 100, timeout: .seconds(90))), "a session after the hostile ones works")
    }

    /// Issue #12's server-side injector (the test server with -hostile, reached through Debian's
    /// snowflake-proxy): forged KCP ACK timestamps (which killed the process), segments outside the
    /// window, smux frames for unknown streams leave the session working; a malformed KCP segment
    /// costs only the carrier (the session moves to another proxy); an smux frame of another
    /// version ends it with a typed error; the process
    /// stays up, under the memory bound, and the next session works.
    @Test(.timeLimit(.minutes(6))) func ptClientSurvivesAHostileSnowflakeServer() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!bridge.isEmpty, "the test bed's snowflake stack is not up")
        var modes: [String: String] = [:]
        for entry in bed["TB_SNOWFLAKE_HOSTILE_SERVER_MODES"].split(separator: " ") {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { modes[parts[0]] = parts[1] }
        }
        try #require(modes.count == 6, "the test bed has no hostile server modes")
        let broker = bed["TB_SNOWFLAKE_BROKER_URL"], ice = bridgeArgument(bridge, "ice")
        let state = TestBed.temporaryDirectory("hostile-server")
        defer { try? FileManager.default.removeItem(at: state) }
        let client = try await ManagedSnowflakeClient.start(state: state)
        defer { client.run.terminate() }

        // One at a time: each holds one of the test bed's two proxies while it lasts.
        for mode in ["forged-ack", "out-of-window-flood", "smux-unknown-stream"] {
            let socket = try await client.open(arguments: "url=\(broker);fingerprint=\(try #require(modes[mode]));ice=\(ice)")
            try await socket.write(tlsClientHello())
            let reply = await readReply(socket, want: 100, timeout: .seconds(90))
            socket.close()
            #expect(isServerHello(reply), "\(mode): the session survives and carries tor's ServerHello")
            #expect(client.run.isRunning, "\(mode): pt-client is alive")
            print("hostile server \(mode): pt-client VmRSS \(residentMiB(client.pid)) MiB, VmHWM \(residentMiB(client.pid, "VmHWM")) MiB")
        }

        // A malformed KCP segment costs the carrier, not the session: the client drops it, makes a
        // new rendezvous (another proxy) with the same ClientID, and tor's bytes go on.
        let serverLog = URL(fileURLWithPath: bed.directory).appendingPathComponent("logs/snowflake-hostile-server.out")
        let logStart = fileSize(serverLog)
        let garbage = try await client.open(arguments: "url=\(broker);fingerprint=\(try #require(modes["kcp-garbage"]));ice=\(ice)")
        try await garbage.write(tlsClientHello())
        let garbageReply = await readReply(garbage, want: 100, timeout: .seconds(90))
        garbage.close()
        #expect(isServerHello(garbageReply), "kcp-garbage: the session carries on over a new carrier")
        let carriers = ((try? String(contentsOf: serverLog, encoding: .utf8)) ?? "").utf8.dropFirst(logStart)
            .split(separator: UInt8(ascii: "\n")).filter { String(decoding: $0, as: UTF8.self).contains("websocket carrier for ClientID") && !String(decoding: $0, as: UTF8.self).hasSuffix("closed") }
        #expect(carriers.count >= 2, "kcp-garbage: a second carrier came after the malformed segment")

        let badVersion = try await client.open(arguments: "url=\(broker);fingerprint=\(try #require(modes["smux-bad-version"]));ice=\(ice)")
        try await badVersion.write(tlsClientHello())
        #expect(await readReply(badVersion, want: 100, timeout: .seconds(90)).isEmpty, "smux-bad-version: nothing reaches tor")
        badVersion.close()
        #expect(await waitForLog(client, "sent an smux frame of version 9", timeout: .seconds(30)) != nil,
                "smux-bad-version: the session ends naming the server; LOG: \(client.logLines.filter { !$0.contains("SEVERITY=debug") })")

        // Not here: the injector's smux-window-flood. Whether it reaches the 1 MiB cap within a
        // test's patience depends on the loopback sockets' buffers (they absorb ~10 MB first) and
        // on the path's throughput, which on a loaded machine was too low (it passed and failed in
        // turn); the cap is shown by HostileInputTests.dataBeyondTheGrantedWindowIsRefused and
        // SmuxSessionFuzzer.
        #expect(client.run.isRunning, "pt-client is alive")
        #expect(residentMiB(client.pid, "VmHWM") < residentLimitMiB, "peak RSS under \(residentLimitMiB) MiB")
        print("hostile server: pt-client peak VmHWM \(residentMiB(client.pid, "VmHWM")) MiB")
        for line in client.logLines {
            #expect(!line.contains("127.0.5.3") && !line.contains("0000000000000000000000000000000000000"),
                    "a LOG line names the server's address or fingerprint: \(line)")
        }

        let good = try await client.open(arguments: "url=\(broker);fingerprint=\(bridgeArgument(bridge, "fingerprint"));ice=\(ice)")
        defer { good.close() }
        try await good.write(tlsClientHello())
        #expect(isServerHello(await readReply(good, want: 100, timeout: .seconds(90))), "a session to the real server works afterwards")
    }
}
