import PosternTestSupport
import Foundation
import Testing

/// Issue 16: external transports as plugins, with Debian's obfs4proxy as a managed client that
/// Postern starts itself, against the test bed's obfs4 bridge (obfs4proxy on the server side).
enum PluginProcesses {
    /// Children of `parent` by the kernel's process name (at most 15 characters: "snowflake-clien").
    static func children(of parent: Int32, named name: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return stat[stat.index(after: open)..<close] == name && fields.count > 2 && Int32(fields[1]) == parent
        }
    }

    static func isGone(_ pid: Int32) -> Bool {
        // Gone, or a zombie waiting for a parent that is itself gone (init reaps it).
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(after: close)...].split(separator: " ").first == "Z"
    }

    static func waitUntilGone(_ pids: [Int32], timeout: Double) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if pids.allSatisfy(isGone) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return pids.allSatisfy(isGone)
    }
}

extension TestBedSuite {
    /// `postern run` with obfs4proxy as the obfs4 plugin (--replace-builtin) under block-tor:
    /// bootstraps, fetches a page, and the plugin is a child of postern that ends with it, also when
    /// postern is killed with SIGKILL.
    @Test func posternRunThroughObfs4proxyPluginUnderBlockTor() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("plugin-run")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["transport", "plugin", "add", "--replace-builtin", "obfs4",
                                                                "/usr/bin/obfs4proxy", "--config-dir", config.path])
        try #require(add.status == 0, "plugin add: \(add.stderr)")

        for ending in ["interrupt", "sigkill"] {
            let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39611", "--transport", "obfs4",
                                          "--bridge", bed["TB_BRIDGE_OBFS4"], "--tor-options-file", bed["TB_CLIENT_TORRC"]])
            defer { run.terminate() }
            let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39611", timeout: 90)
            #expect(ready?.contains("route: bridges") == true, "output: \(run.output)")
            let plugins = PluginProcesses.children(of: run.processIdentifier, named: "obfs4proxy")
            #expect(plugins.count == 1, "postern started obfs4proxy as its obfs4 client: \(plugins)")
            #expect(run.output.contains("note: obfs4 bridges go through the external plugin obfs4 (/usr/bin/obfs4proxy)"))
            let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39611")
            #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
            if ending == "interrupt" {
                #expect(run.interruptAndWait() == 0)
                // A clean stop stops and reaps the plugin before postern exits.
                #expect(plugins.allSatisfy(PluginProcesses.isGone), "postern exited before its plugin")
            } else {
                run.killAndWait()
            }
            let gone = try await PluginProcesses.waitUntilGone(plugins, timeout: 10)
            #expect(gone, "obfs4proxy outlived postern (\(ending))")
            for secret in TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"]) {
                #expect(!run.output.contains(secret), "bridge data in the output")
            }
        }
    }

    /// `postern ab obfs4 plugin:obfs4`: our obfs4 and obfs4proxy-as-plugin in one run, same bridge.
    @Test func abComparesOurObfs4WithObfs4proxyAsPlugin() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("plugin-ab")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path, bed["TB_BRIDGE_OBFS4"]])
        try #require(add.status == 0, "bridges add: \(add.stderr)")
        let plugin = try await ProcessRunner.run(ProcessRunner.postern, ["transport", "plugin", "add", "obfs4", "/usr/bin/obfs4proxy",
                                                                   "--config-dir", config.path])
        try #require(plugin.status == 0, "plugin add: \(plugin.stderr)")

        let run = try await ProcessRunner.run(ProcessRunner.postern, [
            "ab", "obfs4", "plugin:obfs4", "--trials", "3", "--parallel", "2", "--seed", "16", "--trial-timeout", "90",
            "--probe-url", bed["TB_BLOB_URL"], "--probe-bytes", "262144",
            "--tor-options-file", bed["TB_CLIENT_TORRC"], "--json", "--config-dir", config.path])
        try #require(run.status == 0, "postern ab failed: \(run.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(json["routes"] as? [String] == ["obfs4", "plugin:obfs4"])
        let trials = try #require(json["trials"] as? [[String: Any]])
        #expect(trials.filter { $0["route"] as? String == "obfs4" }.count == 3)
        #expect(trials.filter { $0["route"] as? String == "plugin:obfs4" }.count == 3)
        let summaries = try #require(json["summaries"] as? [[String: Any]])
        for route in ["obfs4", "plugin:obfs4"] {
            let summary = summaries.first { $0["route"] as? String == route } ?? [:]
            #expect(summary["successes"] as? Int == 3, "\(route) gets through every time: \(summary)")
            let bootstrap = summary["bootstrap"] as? [String: Any] ?? [:]
            #expect(bootstrap["count"] as? Int == 3 && bootstrap["median"] as? Double != nil, "\(route) has results: \(summary)")
            let throughput = summary["throughput"] as? [String: Any] ?? [:]
            #expect(throughput["median"] as? Double != nil, "\(route) has a probe throughput: \(summary)")
        }
        for trial in trials {
            #expect(trial["succeeded"] as? Bool == true, "trial \(trial["index"] ?? "?") (\(trial["route"] ?? "?")): \(trial["failure"] ?? "")")
            #expect(trial["bootstrapSeconds"] as? Double != nil)
            #expect(trial["probeFirstByteSeconds"] as? Double != nil, "the probe went through the route")
        }
        // Each child said which implementation served obfs4: the plugin for plugin:obfs4 only.
        let directory = URL(fileURLWithPath: try #require(json["directory"] as? String))
        for trial in trials {
            let events = try #require(trial["eventsFile"] as? String)
            let childLog = directory.appendingPathComponent(events).deletingLastPathComponent().appendingPathComponent("child.log")
            let log = try String(contentsOf: childLog, encoding: .utf8)
            let viaPlugin = log.contains("obfs4 bridges go through the external plugin obfs4 (/usr/bin/obfs4proxy)")
            #expect(viaPlugin == (trial["route"] as? String == "plugin:obfs4"), "trial \(trial["index"] ?? "?"): \(log.prefix(500))")
        }
        // The two routes were compared with each other.
        let comparisons = try #require(json["comparisons"] as? [[String: Any]])
        #expect(comparisons.contains { $0["first"] as? String == "obfs4" && $0["second"] as? String == "plugin:obfs4" }, "\(comparisons)")
        #expect(run.stderr.contains("plugin:obfs4"), "the table names the plugin route")
    }

    /// `postern bridges test` reports a bridge through the plugin: a SOCKS dial through obfs4proxy
    /// to the bridge, next to the same bridge through our own obfs4.
    @Test func bridgesTestReportsPluginBridges() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let config = TestBed.temporaryDirectory("plugin-health")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "add", "--config-dir", config.path, bed["TB_BRIDGE_OBFS4"]])
        try #require(add.status == 0, "bridges add: \(add.stderr)")
        let plugin = try await ProcessRunner.run(ProcessRunner.postern, ["transport", "plugin", "add", "obfs4", "/usr/bin/obfs4proxy",
                                                                   "--config-dir", config.path])
        try #require(plugin.status == 0, "plugin add: \(plugin.stderr)")

        func test(_ extra: [String]) throws -> [String: Any] {
            let result = try ProcessRunner.runBlocking(ProcessRunner.postern, ["bridges", "test", "--json", "--config-dir", config.path] + extra)
            #expect(result.status == 0, "bridges test \(extra): \(result.stdout) \(result.stderr)")
            for secret in TestBed.bridgeSecrets(bed["TB_BRIDGE_OBFS4"]) {
                #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret), "bridge data in the report")
            }
            let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let bridges = try #require(report["bridges"] as? [[String: Any]])
            try #require(bridges.count == 1)
            return try #require(bridges[0]["handshake"] as? [String: Any])
        }
        let own = try test([])
        #expect(own["result"] as? String == "ok")
        #expect((own["detail"] as? String)?.contains("handshake completed") == true, "\(own)")
        let viaPlugin = try test(["--via-plugins"])
        #expect(viaPlugin["result"] as? String == "ok", "\(viaPlugin)")
        #expect((viaPlugin["detail"] as? String)?.contains("through plugin obfs4 (/usr/bin/obfs4proxy)") == true, "\(viaPlugin)")

        // A plugin that is not there: the bridge is reported dead with the plugin named, not a crash.
        let broken = try await ProcessRunner.run(ProcessRunner.postern, ["transport", "plugin", "add", "--replace-builtin", "obfs4",
                                                                   "/bin/true", "--config-dir", config.path])
        try #require(broken.status == 0)
        let result = try await ProcessRunner.run(ProcessRunner.postern, ["bridges", "test", "--json", "--config-dir", config.path])
        #expect(result.status == 1)
        #expect(result.stdout.contains("plugin obfs4 (/bin/true)"), "\(result.stdout)")
        #expect(result.stdout.contains("exited before CMETHODS DONE"), "\(result.stdout)")
    }
}

extension TestBedSuite {
    /// Debian's snowflake-client as an external `snowflake` (--replace-builtin) under
    /// block-tor-and-bridges: `postern run` bootstraps through the bed's broker and snowflake-proxy
    /// with the bridge line's arguments handed to the plugin over SOCKS, and fetches a page.
    @Test func posternRunThroughSnowflakeClientPlugin() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let bridge = bed["TB_BRIDGE_SNOWFLAKE"]
        try #require(!bridge.isEmpty, "the test bed's snowflake stack is not up")
        try bed.setCensor("block-tor-and-bridges")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("plugin-snowflake")
        defer { try? FileManager.default.removeItem(at: config) }
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["transport", "plugin", "add", "--replace-builtin", "snowflake",
                                                                "/usr/bin/snowflake-client", "--config-dir", config.path])
        try #require(add.status == 0, "plugin add: \(add.stderr)")
        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39612", "--transport", "snowflake",
                                      "--bridge", bridge, "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39612", timeout: 150)
        try #require(ready != nil, "output: \(run.output)")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39612", timeout: 90)
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        let plugins = PluginProcesses.children(of: run.processIdentifier, named: "snowflake-clien")
        #expect(plugins.count == 1, "postern started snowflake-client: \(plugins)")
        #expect(run.interruptAndWait() == 0)
        #expect(try await PluginProcesses.waitUntilGone(plugins, timeout: 10), "snowflake-client outlived postern")
        for secret in TestBed.bridgeSecrets(bridge) {
            #expect(!run.output.contains(secret), "bridge data in the output")
        }
    }
}

extension TestBedSuite {
    /// Built-in bridges of a transport Postern lacks (meek_lite) go through a configured plugin: with
    /// a plugin that dies at once, `postern run --transport meek_lite` names the plugin and why in its
    /// output within seconds, keeps running (fail closed: nothing else is tried), and leaves nothing.
    @Test func builtinMeekBridgesUseTheConfiguredPluginAndABrokenOneIsNamed() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        let config = TestBed.temporaryDirectory("plugin-meek")
        defer { try? FileManager.default.removeItem(at: config) }
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        let marker = "meek-plugin-\(UInt32.random(in: 0...UInt32.max))"
        let script = config.appendingPathComponent("\(marker).sh")
        try "#!/bin/sh\necho 'this is not a managed transport'\nexit 2\n".write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        let builtins = config.appendingPathComponent("builtins.txt")
        try "meek_lite 192.0.2.20:80 url=https://meek.example.invalid/ front=front.example.invalid\n"
            .write(to: builtins, atomically: true, encoding: .utf8)
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["transport", "plugin", "add", "meek_lite", script.path,
                                                                "--config-dir", config.path])
        try #require(add.status == 0, "plugin add: \(add.stderr)")

        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39613", "--transport", "meek_lite",
                                      "--builtin-bridges", builtins.path, "--tor-options-file", bed["TB_CLIENT_TORRC"]])
        defer { run.terminate() }
        let named = try await run.waitForLine(containing: "its first line is not pt-spec", timeout: 60)
        #expect(named?.contains("transport: meek_lite dial-failed: plugin meek_lite (\(script.path)) did not start with VERSION 1") == true,
                "output: \(run.output)")
        #expect(run.output.contains("built-in"), "the built-in meek_lite bridges were used: \(run.output)")
        #expect(!run.output.contains("not available in this build"))
        #expect(run.isRunning)
        #expect(run.interruptAndWait() == 0)
        let left = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/pgrep"), ["-f", marker])
        #expect(left.stdout.isEmpty, "left running: \(left.stdout)")
    }
}

extension TestBedSuite {
    /// Connection assist (`--transport auto`) under block-tor: direct fails, then the built-in obfs4
    /// route goes through obfs4proxy as the obfs4 plugin (--replace-builtin) and gets through.
    @Test func connectionAssistUsesAPluginRouteLikeItsOwn() async throws {
        let bed = try #require(TestBed.shared, "run through `make test`, which starts the test bed")
        try bed.setCensor("block-tor")
        defer { try? bed.setCensor("none") }
        let config = TestBed.temporaryDirectory("plugin-assist")
        defer { try? FileManager.default.removeItem(at: config) }
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        let builtins = config.appendingPathComponent("builtin-bridges.txt")
        try "\(bed["TB_BRIDGE_OBFS4"])\n".write(to: builtins, atomically: true, encoding: .utf8)
        let add = try await ProcessRunner.run(ProcessRunner.postern, ["transport", "plugin", "add", "--replace-builtin", "obfs4",
                                                                "/usr/bin/obfs4proxy", "--config-dir", config.path])
        try #require(add.status == 0, "plugin add: \(add.stderr)")

        let run = try RunningPostern(["run", "--config-dir", config.path, "--socks", "39614", "--transport", "auto",
                                      "--builtin-bridges", builtins.path, "--tor-options-file", bed["TB_CLIENT_TORRC"],
                                      "--route-timeout", "direct=6/6"])
        defer { run.terminate() }
        let ready = try await run.waitForLine(containing: "ready: socks5 127.0.0.1:39614", timeout: 90)
        try #require(ready != nil, "output: \(run.output)")
        #expect(run.output.contains("trying bridges (obfs4, built-in)"), "output: \(run.output)")
        let plugins = PluginProcesses.children(of: run.processIdentifier, named: "obfs4proxy")
        #expect(plugins.count == 1, "the obfs4 route ran through obfs4proxy: \(run.output)")
        let page = try TestBed.fetch(bed.pageURL, socks: "127.0.0.1:39614")
        #expect(page.stdout.contains(bed["TB_HTTP_MARKER"]), "curl: \(page.stderr)")
        #expect(run.interruptAndWait() == 0)
        #expect(plugins.allSatisfy(PluginProcesses.isGone), "postern exited before its plugin")
    }
}
