import Foundation
import Testing
@testable import PosternTor

/// Replies recorded from tor 0.4.9.11 over the owning control socket, plus malformed ones.
@Suite struct ControlReplyParserTests {
    private func parse(_ lines: [String]) throws -> [ControlReply] {
        var parser = ControlReplyParser()
        var replies: [ControlReply] = []
        for line in lines {
            if let reply = try parser.feed(line) { replies.append(reply) }
        }
        #expect(!parser.isInsideReply)
        return replies
    }

    @Test func singleLineOK() throws {
        let replies = try parse(["250 OK"])
        #expect(replies.count == 1)
        #expect(replies[0].status == 250)
        #expect(replies[0].isSuccess)
        #expect(replies[0].message == "OK")
    }

    @Test func getInfoWithMidAndDataLines() throws {
        let replies = try parse([
            "250-version=0.4.9.11",
            "250+config-text=",
            "SocksPort 127.0.0.1:39050",
            "..leading dot is unstuffed",
            ".",
            "250 OK",
        ])
        #expect(replies.count == 1)
        let lines = replies[0].lines
        #expect(lines.count == 3)
        #expect(lines[0].text == "version=0.4.9.11")
        #expect(lines[1].data == ["SocksPort 127.0.0.1:39050", ".leading dot is unstuffed"])
        #expect(lines[2].text == "OK")
    }

    @Test func asynchronousEventBetweenReplies() throws {
        let replies = try parse([
            "650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=5 TAG=conn SUMMARY=\"Connecting to a relay\"",
            "250 OK",
        ])
        #expect(replies.count == 2)
        #expect(replies[0].isAsynchronousEvent)
        #expect(!replies[1].isAsynchronousEvent)
    }

    @Test func errorReplyIsNotSuccess() throws {
        let replies = try parse(["552 Unrecognized option: Unknown option 'Bogus'.  Failing."])
        #expect(replies[0].status == 552)
        #expect(!replies[0].isSuccess)
    }

    @Test(arguments: ["", "25", "2500K", "abc OK", "250*OK", "25x OK"])
    func malformedLinesAreRejected(_ line: String) {
        var parser = ControlReplyParser()
        #expect(throws: TorCoreError.self) { _ = try parser.feed(line) }
    }

    /// Caps (issue 12): one line over 1 MiB, or a reply over 16 MiB in total (a data block that
    /// never ends), is a typed error, not an ever-growing reply; the parser is usable afterwards.
    @Test func oversizeLinesAndRepliesAreRejected() throws {
        var parser = ControlReplyParser()
        let long = "250-" + String(repeating: "x", count: ControlReplyParser.maximumLineBytes)
        #expect(throws: TorCoreError.self) { _ = try parser.feed(long) }
        #expect(!parser.isInsideReply)
        _ = try parser.feed("250+ns/all=")
        let line = String(repeating: "r", count: 64 * 1024)
        var failed = false
        for _ in 0..<(ControlReplyParser.maximumReplyBytes / line.utf8.count + 2) {
            do { _ = try parser.feed(line) } catch { failed = true; break }
        }
        #expect(failed, "a data block over 16 MiB was accepted")
        #expect(!parser.isInsideReply)
        #expect(try parser.feed("250 OK")?.isSuccess == true)
    }

    @Test func statusChangeInsideOneReplyIsRejected() throws {
        var parser = ControlReplyParser()
        _ = try parser.feed("250-first")
        #expect(throws: TorCoreError.self) { _ = try parser.feed("550 second") }
        // The parser recovers for the next reply.
        #expect(try parser.feed("250 OK")?.status == 250)
    }

    @Test func quotingEscapesSpecialCharacters() {
        #expect(ControlSyntax.quoted(#"a "b" \c"#) == #""a \"b\" \\c""#)
        #expect(ControlSyntax.quoted("x\ny") == #""x\ny""#)
    }

    @Test func keywordArgumentsWithQuotedValues() throws {
        let (positional, keywords) = try ControlSyntax.keywordArguments(
            #"NOTICE BOOTSTRAP PROGRESS=75 TAG=enough_dirinfo SUMMARY="Loaded \"enough\" directory info""#)
        #expect(positional == ["NOTICE", "BOOTSTRAP"])
        #expect(keywords["PROGRESS"] == "75")
        #expect(keywords["SUMMARY"] == #"Loaded "enough" directory info"#)
        #expect(throws: TorCoreError.self) { _ = try ControlSyntax.keywordArguments(#"A X="unterminated"#) }
    }

    @Test func bootstrapPhaseFromEventAndGetInfo() throws {
        let event = try #require(try BootstrapPhase.parse(statusText:
            #"NOTICE BOOTSTRAP PROGRESS=50 TAG=loading_descriptors SUMMARY="Loading relay descriptors""#))
        #expect(event == BootstrapPhase(progress: 50, tag: "loading_descriptors", summary: "Loading relay descriptors"))
        let warning = try #require(try BootstrapPhase.parse(statusText:
            #"WARN BOOTSTRAP PROGRESS=10 TAG=conn_done SUMMARY="Connected to a relay" WARNING="Connection refused" REASON=CONNECTREFUSED COUNT=3 RECOMMENDATION=ignore"#))
        #expect(warning.warning == "Connection refused")
        #expect(try BootstrapPhase.parse(statusText: "NOTICE CIRCUIT_ESTABLISHED") == nil)
        #expect(throws: TorCoreError.self) { _ = try BootstrapPhase.parse(statusText: "NOTICE BOOTSTRAP PROGRESS=101") }
        #expect(throws: TorCoreError.self) { _ = try BootstrapPhase.parse(statusText: "NOTICE BOOTSTRAP TAG=x") }
    }
}

@Suite struct TorConfigurationTests {
    @Test func socksRefusesNonLoopback() throws {
        #expect(throws: TorCoreError.self) { _ = try SocksEndpoint(host: "0.0.0.0", port: 39050) }
        #expect(throws: TorCoreError.self) { _ = try SocksEndpoint(parsing: "192.168.1.2:9050") }
        #expect(throws: TorCoreError.self) { _ = try SocksEndpoint(parsing: "localhost:9050") }
        #expect(try SocksEndpoint(parsing: "39051") == SocksEndpoint(host: "127.0.0.1", port: 39051))
        #expect(try SocksEndpoint(parsing: "127.0.0.5:1080").description == "127.0.0.5:1080")
        #expect(try SocksEndpoint(parsing: "[::1]:1080").description == "[::1]:1080")
        #expect(SocksEndpoint.default.description == "127.0.0.1:39050")
    }

    /// `--socks auto` (or port 0): tor binds a free port itself and GETINFO net/listeners/socks
    /// names it; the endpoint renders as tor's `HOST:auto` and never checks availability.
    @Test func automaticSocksPortParsesAndReadsTheBoundListener() throws {
        let automatic = try SocksEndpoint(parsing: "127.0.0.1:auto")
        #expect(automatic.isAutomatic && automatic.port == 0)
        #expect(automatic.description == "127.0.0.1:auto")
        #expect(try SocksEndpoint(parsing: "auto") == automatic)
        #expect(try SocksEndpoint(parsing: "0") == automatic)
        #expect(try SocksEndpoint(parsing: "[::1]:auto").description == "[::1]:auto")
        #expect(try SocksEndpoint.automatic() == automatic)
        #expect(throws: TorCoreError.self) { _ = try SocksEndpoint(parsing: "0.0.0.0:auto") }
        #expect(throws: TorCoreError.self) { _ = try SocksEndpoint(port: 0) }
        #expect(throws: TorCoreError.self) { _ = try SocksEndpoint(parsing: "127.0.0.1:automatic") }
        try automatic.ensureAvailable()

        let listeners = SocksEndpoint.parseListeners(#""127.0.0.1:40001" "[::1]:9050" "unix:/run/tor/socks" "0.0.0.0:9150""#)
        #expect(listeners == [try SocksEndpoint(port: 40001), try SocksEndpoint(host: "::1", port: 9050)])
        #expect(try automatic.bound(port: 40001) == SocksEndpoint(port: 40001))
        #expect(SocksEndpoint.parseListeners("").isEmpty)
        #expect(SocksEndpoint.parseListeners(#""127.0.0.1:0" "127.0.0.1:99999" "garbage""#).isEmpty)
    }

    @Test func optionLinesParse() throws {
        let options = try TorOption.parseLines("# client of a test network\nTestingTorNetwork 1\n\nDirAuthority a orport=5000 no-v2 127.0.1.1:7000 ABCD\n")
        #expect(options.map(\.key) == ["TestingTorNetwork", "DirAuthority"])
        #expect(options[1].value == "a orport=5000 no-v2 127.0.1.1:7000 ABCD")
        #expect(throws: TorCoreError.self) { _ = try TorOption.parseLines("Bad-Key 1") }
    }

    @Test func commandLineHasNoTorrcAndNoControlPort() {
        let configuration = TorConfiguration(dataDirectory: .init(fileURLWithPath: "/tmp/x"), options: [try! TorOption("UseBridges", "1")])
        let argv = configuration.commandLine(emptyTorrc: .init(fileURLWithPath: "/tmp/x/empty"))
        #expect(argv.first == "tor")
        #expect(argv.contains("--ignore-missing-torrc"))
        let controlPort = argv.firstIndex(of: "ControlPort").map { argv[$0 + 1] }
        #expect(controlPort == "0")
        #expect(argv.suffix(2) == ["UseBridges", "1"])
    }
}

@Suite struct SocksPortInUseTests {
    /// tor would exit before its log opens; the manager says what is wrong instead.
    @Test func startRefusesABusySocksPortWithAClearError() async throws {
        let blocker = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(blocker) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(blocker, $0, length) } } == 0)
        try #require(listen(blocker, 1) == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(blocker, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)

        let manager = TorManager()
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("postern-busy-\(UUID())")
        defer { try? FileManager.default.removeItem(at: data) }
        do {
            try await manager.start(TorConfiguration(dataDirectory: data, socks: try SocksEndpoint(port: port)))
            Issue.record("start succeeded on a busy port")
            await manager.shutdown()
        } catch let error as TorCoreError {
            #expect(error.message.contains("127.0.0.1:\(port) is already in use"), "\(error.message)")
        }
        #expect(await manager.currentStatus.state == .failed)
    }
}
