import PosternTestSupport
import Foundation
import Testing

/// The settings commands (bridges, transport, tor, relays, config) run as a user runs them: the
/// built binary, each test with its own settings directory.
@Suite struct SettingsCommandTests {
    // Test lines: documentation addresses, random fingerprints and certs. Each secret part is
    // distinctive so that a leak into output can be found by searching for it.
    static let address1 = "192.0.2.41:443"
    static let fingerprint1 = "75D2B513BA3CF4D1210FC35B4D61C7A6BFAECF3B"
    static let cert1 = "tUKKU8cSnvHFdeytUFPi9+Cqaw3fWpvmyFyHQMPmWQ9zUjINSTdG9sMySEqtoAuAQEF9YA"
    static let line1 = "obfs4 \(address1) \(fingerprint1) cert=\(cert1) iat-mode=0"

    static let address2 = "198.51.100.77:9443"
    static let fingerprint2 = "4055D774FDDBDD7FB9650EA0C2BB562E548798D4"
    static let cert2 = "iJcIjaAJReMl/ZtJebM/Jt2yYa7PhqUQ2CAT/5X61vSwXyG5u2n/8xxgXC93HwCtWnHqkg"
    static let line2 = "obfs4 \(address2) \(fingerprint2) cert=\(cert2) iat-mode=1"

    static let address3 = "203.0.113.9:9001"
    static let fingerprint3 = "F151739702B4B709A2C1F2BFC8520993D20BCC78"
    static let line3 = "\(address3) \(fingerprint3)"

    static let secrets = [address1, fingerprint1, cert1, address2, fingerprint2, cert2, address3, fingerprint3,
                          "192.0.2.41", "198.51.100.77", "203.0.113.9"]

    /// A private settings directory and a way to run `postern` against it.
    struct Sandbox: ~Copyable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-settings-\(UUID())")
        var storeFile: URL { directory.appendingPathComponent("bridges.json") }

        deinit { try? FileManager.default.removeItem(at: directory) }

        func run(_ arguments: String..., stdin: String? = nil) async throws -> ProcessResult {
            try await run(arguments, stdin: stdin)
        }

        func run(_ arguments: [String], stdin: String? = nil) async throws -> ProcessResult {
            try await ProcessRunner.run(ProcessRunner.postern, arguments + ["--config-dir", directory.path], stdin: stdin)
        }

        /// `bridges list --json`, parsed.
        func listedBridges(unsafe: Bool = false) async throws -> [[String: Any]] {
            let result = try await run(["bridges", "list", "--json"] + (unsafe ? ["--unsafe-logging"] : []))
            #expect(result.status == 0, "\(result.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            return try #require(object["bridges"] as? [[String: Any]])
        }

        func write(_ text: String, named name: String) throws -> URL {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent(name)
            try Data(text.utf8).write(to: file)
            return file
        }
    }

    static func expectNoSecrets(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for secret in secrets {
            #expect(!text.contains(secret), "output leaks \(secret): \(text)", sourceLocation: sourceLocation)
        }
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// "stored as 3fa91c" → "3fa91c", in order.
    static func storedIDs(_ output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "stored as ") else { return nil }
            return String(line[range.upperBound...].prefix(6))
        }
    }

    // MARK: bridges add / import

    @Test func addFromArgumentsReportsIDsAndListsScrubbed() async throws {
        let sandbox = Sandbox()
        let added = try await sandbox.run("bridges", "add", Self.line1, Self.line2)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("line 1: stored as "))
        #expect(added.stdout.contains("line 2: stored as "))
        #expect(added.stdout.hasSuffix("stored 2 bridges\n"))
        Self.expectNoSecrets(added.stdout + added.stderr)

        let ids = Self.storedIDs(added.stdout)
        let listed = try await sandbox.listedBridges()
        #expect(listed.map { $0["id"] as? String } == ids)
        #expect(listed.allSatisfy { $0["enabled"] as? Bool == true && $0["transport"] as? String == "obfs4" })
        #expect(listed.first?["line"] as? String == "obfs4 [scrubbed] [scrubbed] cert=[scrubbed] iat-mode=0")

        let text = try await sandbox.run("bridges", "list")
        #expect(text.status == 0)
        #expect(text.stdout.contains("ID"))
        #expect(text.stdout.contains("\(ids[0])  on     obfs4"))
        Self.expectNoSecrets(text.stdout)
        let json = try await sandbox.run("bridges", "list", "--json")
        Self.expectNoSecrets(json.stdout)

        // --unsafe-logging shows the full lines.
        let unsafe = try await sandbox.listedBridges(unsafe: true)
        #expect(unsafe.map { $0["line"] as? String } == [Self.line1, Self.line2])
        let unsafeText = try await sandbox.run("bridges", "list", "--unsafe-logging")
        #expect(unsafeText.stdout.contains(Self.line1))
    }

    @Test func addFromStandardInputAndFromFile() async throws {
        let sandbox = Sandbox()
        let fromStdin = try await sandbox.run("bridges", "add", "-", stdin: Self.line1 + "\n")
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        #expect(fromStdin.stdout.contains("line 1: stored as "))

        let file = try sandbox.write("# my bridges\n\n\(Self.line2)\r\n", named: "paste.txt")
        let fromFile = try await sandbox.run("bridges", "add", "--file", file.path)
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        #expect(fromFile.stdout.contains("line 3: stored as "))

        let again = try await sandbox.run("bridges", "add", Self.line1)
        #expect(again.status == 0)
        #expect(again.stdout.contains("line 1: already stored as \(Self.storedIDs(fromStdin.stdout)[0])"))
        #expect(again.stdout.contains("stored 0 bridges; 1 already stored"))
        #expect(try await sandbox.listedBridges(unsafe: true).map { $0["line"] as? String } == [Self.line1, Self.line2])

        let missing = try await sandbox.run("bridges", "add", "--file", sandbox.directory.appendingPathComponent("nope.txt").path)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot read"))
        #expect(missing.stderr.contains("No such file"))
    }

    @Test func importTorrcFragment() async throws {
        let sandbox = Sandbox()
        let fragment = """
        UseBridges 1
        ClientTransportPlugin obfs4 exec /usr/bin/obfs4proxy
        # a comment
        Bridge \(Self.line1)
        bridge \(Self.line3)   # trailing comment
        """
        let file = try sandbox.write(fragment, named: "torrc")
        let result = try await sandbox.run("bridges", "import", file.path)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("line 1: note: UseBridges is ignored"))
        #expect(result.stdout.contains("line 2: plugin obfs4 not stored (never silently); to use it, run: postern transport plugin add obfs4 /usr/bin/obfs4proxy"))
        #expect(result.stdout.contains("line 4: stored as "))
        #expect(result.stdout.contains("line 5: stored as "))
        #expect(result.stdout.hasSuffix("stored 2 bridges; 1 plugin offered, not stored\n"))
        Self.expectNoSecrets(result.stdout)
        let listed = try await sandbox.listedBridges(unsafe: true)
        #expect(listed.map { $0["line"] as? String } == [Self.line1, Self.line3])
        #expect(listed.map { $0["transport"] as? String } == ["obfs4", "vanilla"])
    }

    @Test func importJSONArrayFromStandardInput() async throws {
        let sandbox = Sandbox()
        let array = #"["\#(Self.line1)", "\#(Self.line2)", "obfs4 192.0.2.50:443"]"#
        let result = try await sandbox.run("bridges", "import", "-", stdin: array)
        #expect(result.status == 1)
        #expect(result.stdout.contains("entry 1: stored as "))
        #expect(result.stdout.contains("entry 2: stored as "))
        #expect(result.stdout.contains("entry 3: rejected: "))
        #expect(result.stdout.contains("cert"))
        #expect(result.stdout.hasSuffix("stored 2 bridges; 1 line rejected\n"))
        #expect(try await sandbox.listedBridges(unsafe: true).map { $0["line"] as? String } == [Self.line1, Self.line2])
    }

    @Test func rejectedLinesNameLineWordAndReasonAndExit1() async throws {
        let sandbox = Sandbox()
        let badCert = "obfs4 \(Self.address2) \(Self.fingerprint2) cert=tooshort iat-mode=0"
        let paste = "\(Self.line1)\n\n\(badCert)\nobfs4 \(Self.address1)x\n"
        let result = try await sandbox.run("bridges", "add", "-", stdin: paste)
        #expect(result.status == 1)
        #expect(result.stdout.contains("line 1: stored as "))
        #expect(result.stdout.contains("line 3: rejected: word 4 (cert): an obfs4 cert is 70 characters of base64"))
        #expect(result.stdout.contains("line 4: rejected: word 2 (address): "))
        #expect(result.stdout.hasSuffix("stored 1 bridge; 2 lines rejected\n"))
        Self.expectNoSecrets(result.stdout + result.stderr)
        #expect(!result.stdout.contains("tooshort"))
        #expect(try await sandbox.listedBridges().count == 1, "the valid line is stored although others were rejected")

        // The same, as JSON: codes, line and word numbers.
        let json = try Self.json(try await sandbox.run("bridges", "add", "-", "--json", "--dry-run", stdin: paste).stdout)
        let items = try #require(json["items"] as? [[String: Any]])
        let rejected = items.filter { $0["status"] as? String == "rejected" }
        #expect(rejected.map { $0["line"] as? Int } == [3, 4])
        #expect(rejected.map { $0["word"] as? Int } == [4, 2])
        #expect(rejected.first?["code"] as? String == "bad-cert")
        #expect(items.first?["status"] as? String == "already-stored")

        // With --unsafe-logging the message shows the offending word.
        let unsafe = try await sandbox.run("bridges", "add", "-", "--dry-run", "--unsafe-logging", stdin: paste)
        #expect(unsafe.stdout.contains(#"word 4 (cert "cert=tooshort")"#))
    }

    @Test func dryRunStoresNothing() async throws {
        let sandbox = Sandbox()
        let first = try await sandbox.run("bridges", "add", Self.line1, "--dry-run")
        #expect(first.status == 0)
        #expect(first.stdout.contains("line 1: would be stored"))
        #expect(first.stdout.contains("dry run, nothing stored: 1 bridge would be stored"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.storeFile.path), "a dry run must not create the store")

        #expect(try await sandbox.run("bridges", "add", Self.line1).status == 0)
        let before = try Data(contentsOf: sandbox.storeFile)
        let second = try await sandbox.run("bridges", "import", "-", "--dry-run", stdin: "\(Self.line1)\n\(Self.line2)\nobfs4 nonsense\n")
        #expect(second.status == 1)
        #expect(second.stdout.contains("line 1: already stored as "))
        #expect(second.stdout.contains("line 2: would be stored"))
        #expect(second.stdout.contains("dry run, nothing stored: 1 bridge would be stored; 1 already stored; 1 line rejected"))
        #expect(try Data(contentsOf: sandbox.storeFile) == before)
    }

    @Test func allOrNothingStoresNothingWhenALineIsRejected() async throws {
        let sandbox = Sandbox()
        let result = try await sandbox.run("bridges", "add", Self.line1, "obfs4 192.0.2.1:443 cert=x", "--all-or-nothing")
        #expect(result.status == 1)
        #expect(result.stdout.contains("line 1: not stored: another line was rejected and --all-or-nothing was given"))
        #expect(result.stdout.contains("line 2: rejected: "))
        #expect(result.stdout.hasSuffix("stored nothing (--all-or-nothing); 1 line rejected\n"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.storeFile.path))

        let clean = try await sandbox.run("bridges", "add", Self.line1, Self.line2, "--all-or-nothing")
        #expect(clean.status == 0)
        #expect(try await sandbox.listedBridges().count == 2)
    }

    @Test func reAddingWithNewArgumentsUpdatesAndKeepsIDAndState() async throws {
        let sandbox = Sandbox()
        let id = try #require(Self.storedIDs(try await sandbox.run("bridges", "add", Self.line1).stdout).first)
        _ = try await sandbox.run("bridges", "disable", id)
        let newLine = "obfs4 \(Self.address1) \(Self.fingerprint1) cert=\(Self.cert2) iat-mode=2"
        let result = try await sandbox.run("bridges", "add", newLine)
        #expect(result.status == 0)
        #expect(result.stdout.contains("line 1: updated \(id) (same bridge, new arguments; ID and on/off state kept)"))
        #expect(result.stdout.hasSuffix("stored 0 bridges; updated 1\n"))
        let listed = try await sandbox.listedBridges(unsafe: true)
        #expect(listed.map { $0["id"] as? String } == [id])
        #expect(listed.first?["line"] as? String == newLine)
        #expect(listed.first?["enabled"] as? Bool == false)
    }

    @Test func aFullBridgeListIsReportedPerLine() async throws {
        let sandbox = Sandbox()
        let lines = (1...64).map { "obfs4 192.0.2.\($0):443 \(Self.fingerprint1) cert=\(Self.cert1) iat-mode=0" }
        let filled = try await sandbox.run("bridges", "add", "-", stdin: lines.joined(separator: "\n"))
        #expect(filled.status == 0)
        #expect(filled.stdout.hasSuffix("stored 64 bridges\n"))

        // All-or-nothing: the full list makes the second line fail, so the first is not stored either.
        let before = try Data(contentsOf: sandbox.storeFile)
        let extra = ["obfs4 198.51.100.1:443 \(Self.fingerprint2) cert=\(Self.cert2) iat-mode=0", Self.line2]
        let aborted = try await sandbox.run(["bridges", "add", "--all-or-nothing"] + extra)
        #expect(aborted.status == 1)
        #expect(aborted.stdout.contains("line 1: not stored: the bridge list is full (64 bridges); remove some before adding more"))
        #expect(aborted.stdout.contains("line 2: not stored: "))
        #expect(aborted.stdout.hasSuffix("stored nothing (--all-or-nothing); 2 lines could not be stored\n"))
        #expect(try Data(contentsOf: sandbox.storeFile) == before)

        let id = try #require(try await sandbox.listedBridges().first?["id"] as? String)
        _ = try await sandbox.run("bridges", "remove", id)
        let partly = try await sandbox.run(["bridges", "add"] + extra)
        #expect(partly.status == 1)
        #expect(partly.stdout.contains("line 1: stored as "))
        #expect(partly.stdout.contains("line 2: not stored: the bridge list is full"))
        #expect(partly.stdout.hasSuffix("stored 1 bridge; 1 line could not be stored\n"))
        #expect(try await sandbox.listedBridges().count == 64)
    }

    @Test func aLineSplitIntoArgumentsIsAUsageError() async throws {
        let sandbox = Sandbox()
        let words = Self.line1.split(separator: " ").map(String.init)
        let result = try await sandbox.run(["bridges", "add"] + words)
        #expect(result.status == 64)
        #expect(result.stderr.contains("'obfs4' is not a whole bridge line"))
        #expect(result.stderr.contains("quotes"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.storeFile.path))
    }

    @Test func emptyPasteFails() async throws {
        let sandbox = Sandbox()
        let result = try await sandbox.run("bridges", "import", "-", stdin: "# nothing here\n\n")
        #expect(result.status == 1)
        #expect(result.stdout.contains("no bridge lines found in standard input"))
    }

    // MARK: enable, disable, remove

    @Test func enableDisableAndRemoveByID() async throws {
        let sandbox = Sandbox()
        let ids = Self.storedIDs(try await sandbox.run("bridges", "add", Self.line1, Self.line2, Self.line3).stdout)
        try #require(ids.count == 3)

        let disabled = try await sandbox.run("bridges", "disable", ids[0], ids[2])
        #expect(disabled.status == 0, "\(disabled.stderr)")
        #expect(disabled.stdout == "\(ids[0]) (obfs4) is now off\n\(ids[2]) (vanilla) is now off\n")
        #expect(try await sandbox.listedBridges().map { $0["enabled"] as? Bool } == [false, true, false])

        let again = try await sandbox.run("bridges", "disable", ids[0])
        #expect(again.stdout.contains("was already off"))

        let enabled = try await sandbox.run("bridges", "enable", ids[2])
        #expect(enabled.status == 0)
        #expect(try await sandbox.listedBridges().map { $0["enabled"] as? Bool } == [false, true, true])

        // One unknown ID among several: nothing changes, exit 1, the ID is named.
        let unknownID = ids.contains("abcdef") ? "fedcba" : "abcdef"
        let unknown = try await sandbox.run("bridges", "enable", ids[0], unknownID)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("there is no bridge with the ID \(unknownID)"))
        #expect(unknown.stderr.contains("nothing was changed"))
        #expect(try await sandbox.listedBridges().map { $0["enabled"] as? Bool } == [false, true, true])

        let malformed = try await sandbox.run("bridges", "remove", "xyz")
        #expect(malformed.status == 64)
        #expect(malformed.stderr.contains("'xyz' is not a bridge ID"))

        let removed = try await sandbox.run("bridges", "remove", ids[1])
        #expect(removed.status == 0)
        #expect(removed.stdout == "removed \(ids[1]) (obfs4)\n")
        #expect(try await sandbox.listedBridges().map { $0["id"] as? String } == [ids[0], ids[2]])

        let gone = try await sandbox.run("bridges", "remove", ids[1])
        #expect(gone.status == 1)
        #expect(gone.stderr.contains("there is no bridge with the ID \(ids[1])"))
    }

    // MARK: export and built-ins

    @Test func exportPrintsFullLinesThatImportReadsBack() async throws {
        let sandbox = Sandbox()
        let ids = Self.storedIDs(try await sandbox.run("bridges", "add", Self.line1, Self.line2, Self.line3).stdout)
        _ = try await sandbox.run("bridges", "disable", ids[1])

        let torrc = try await sandbox.run("bridges", "export")
        #expect(torrc.status == 0)
        #expect(torrc.stdout == "UseBridges 1\nBridge \(Self.line1)\nBridge \(Self.line2)\nBridge \(Self.line3)\n")

        let json = try await sandbox.run("bridges", "export", "--format", "json", "--enabled-only")
        #expect(json.status == 0)
        let lines = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String])
        #expect(lines == [Self.line1, Self.line3])

        let chosen = try await sandbox.run("bridges", "export", ids[1], "--format=json")
        #expect(try JSONSerialization.jsonObject(with: Data(chosen.stdout.utf8)) as? [String] == [Self.line2])

        // Round trip into a fresh store, both formats.
        for exported in [torrc.stdout, json.stdout] {
            let other = Sandbox()
            let imported = try await other.run("bridges", "import", "-", stdin: exported)
            #expect(imported.status == 0, "\(imported.stdout)")
            let expected = exported == torrc.stdout ? [Self.line1, Self.line2, Self.line3] : [Self.line1, Self.line3]
            #expect(try await other.listedBridges(unsafe: true).map { $0["line"] as? String } == expected)
        }

        let help = try await sandbox.run("bridges", "export", "--help")
        #expect(help.stdout.contains("prints bridge addresses, fingerprints and certs in the\nclear: that is its purpose"))

        let badFormat = try await sandbox.run("bridges", "export", "--format", "yaml")
        #expect(badFormat.status == 64)
        #expect(badFormat.stderr.contains("unknown format 'yaml' (use torrc, json or qr)"))

        let empty = try await Sandbox().run("bridges", "export")
        #expect(empty.status == 1)
        #expect(empty.stderr.contains("there are no bridges to export"))
    }

    /// `--format qr` draws the same picture as Debian's `qrencode -t UTF8`, and `zbarimg` reads the
    /// JSON array back from it, which `bridges import` accepts.
    @Test func exportAsQRCodeMatchesQrencodeAndDecodes() async throws {
        let qrencode = URL(fileURLWithPath: "/usr/bin/qrencode"), zbarimg = URL(fileURLWithPath: "/usr/bin/zbarimg")
        try #require(FileManager.default.isExecutableFile(atPath: qrencode.path), "apt-get install qrencode")
        try #require(FileManager.default.isExecutableFile(atPath: zbarimg.path), "apt-get install zbar-tools")
        let sandbox = Sandbox()
        _ = try await sandbox.run("bridges", "add", Self.line1, Self.line2, Self.line3)
        let qr = try await sandbox.run("bridges", "export", "--format", "qr")
        #expect(qr.status == 0, "\(qr.stderr)")

        let content = #"["\#(Self.line1)","\#(Self.line2)","\#(Self.line3)"]"#
        let reference = try await ProcessRunner.run(qrencode, ["-t", "UTF8", "-m", "4", "-l", "L", content])
        #expect(reference.status == 0)
        #expect(qr.stdout == reference.stdout)

        // Light modules are drawn: a half block's drawn half is light, its blank half dark.
        var rows: [[Bool]] = []
        for line in qr.stdout.split(separator: "\n") {
            rows.append(line.map { $0 != "\u{2588}" && $0 != "\u{2580}" })
            rows.append(line.map { $0 != "\u{2588}" && $0 != "\u{2584}" })
        }
        let scale = 4
        var image = "P1\n\(rows[0].count * scale) \(rows.count * scale)\n"
        for row in rows {
            let line = row.flatMap { Array(repeating: $0 ? "1" : "0", count: scale) }.joined(separator: " ") + "\n"
            image += String(repeating: line, count: scale)
        }
        let file = try sandbox.write(image, named: "qr.pbm")
        let decoded = try await ProcessRunner.run(zbarimg, ["--raw", "-q", file.path])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(decoded.stdout == content + "\n")

        let other = Sandbox()
        let imported = try await other.run("bridges", "import", "-", stdin: decoded.stdout)
        #expect(imported.status == 0, "\(imported.stdout)")
        #expect(try await other.listedBridges(unsafe: true).map { $0["line"] as? String } == [Self.line1, Self.line2, Self.line3])
    }

    @Test func tooManyBridgesForOneQRCodeFail() async throws {
        let sandbox = Sandbox()
        let lines = (1...30).map { "obfs4 192.0.2.\($0):443 \(Self.fingerprint1) cert=\(Self.cert1) iat-mode=0" }
        #expect(try await sandbox.run("bridges", "add", "-", stdin: lines.joined(separator: "\n")).status == 0)
        let qr = try await sandbox.run("bridges", "export", "--format", "qr")
        #expect(qr.status == 1)
        #expect(qr.stderr.contains("30 bridges do not fit in one QR code"))
        #expect(qr.stderr.contains("export fewer by giving their IDs"))
        #expect(qr.stdout.isEmpty)
    }

    @Test func builtinBridgesAreListedScrubbed() async throws {
        let sandbox = Sandbox()
        let all = try await sandbox.run("bridges", "builtin")
        #expect(all.status == 0)
        #expect(all.stdout.contains("obfs4 [scrubbed] [scrubbed] cert=[scrubbed]"))
        #expect(!all.stdout.contains("192.95.36.142"), "a built-in bridge address is printed without --unsafe-logging")

        let snowflake = try Self.json(try await sandbox.run("bridges", "builtin", "--transport", "snowflake", "--json").stdout)
        let bridges = try #require(snowflake["bridges"] as? [[String: Any]])
        #expect(!bridges.isEmpty)
        #expect(bridges.allSatisfy { $0["transport"] as? String == "snowflake" })
        #expect(snowflake["scrubbed"] as? Bool == true)
        #expect((snowflake["sourceCommit"] as? String)?.count == 40)

        let unsafe = try await sandbox.run("bridges", "builtin", "--transport", "obfs4", "--unsafe-logging")
        #expect(unsafe.stdout.contains("192.95.36.142:443"))

        let none = try await sandbox.run("bridges", "builtin", "--transport", "webtunnel")
        #expect(none.status == 1)
        #expect(none.stderr.contains("there are no built-in bridges for webtunnel"))
        #expect(try await sandbox.run("bridges", "builtin", "--transport", "4x").status == 64)
    }

    // MARK: transport and tor

    @Test func transportShowAndUse() async throws {
        let sandbox = Sandbox()
        let initial = try await sandbox.run("transport")
        #expect(initial.status == 0)
        #expect(initial.stdout.hasPrefix("transport: auto\n"))

        let obfs4 = try await sandbox.run("transport", "use", "OBFS4")
        #expect(obfs4.status == 0, "\(obfs4.stderr)")
        #expect(obfs4.stdout.hasPrefix("transport: obfs4 (was auto)\n"))
        #expect(obfs4.stdout.contains("built-in"), "no own obfs4 bridges: the built-ins are named")
        #expect(obfs4.stderr.isEmpty)

        _ = try await sandbox.run("bridges", "add", Self.line1)
        let shown = try Self.json(try await sandbox.run("transport", "--json").stdout)
        #expect(shown["transport"] as? String == "obfs4")
        #expect(shown["enabledBridges"] as? Int == 1)

        let direct = try await sandbox.run("transport", "use", "direct")
        #expect(direct.stdout.hasPrefix("transport: direct (was obfs4)\n"))

        let unknown = try await sandbox.run("transport", "use", "my_transport")
        #expect(unknown.status == 0)
        #expect(unknown.stderr.contains("warning: my_transport is not a transport Postern knows"))
        #expect(try Self.json(try await sandbox.run("transport", "--json").stdout)["transport"] as? String == "my_transport")

        let invalid = try await sandbox.run("transport", "use", "obfs-4")
        #expect(invalid.status == 64)
        #expect(invalid.stderr.contains("'obfs-4': the transport must be auto, direct or a transport name"))
        #expect(try await sandbox.run("transport", "use").status == 64)
        #expect(try await sandbox.run("transport", "use", "obfs4", "snowflake").status == 64)
        #expect(try await sandbox.run("transport", "obfs4").status == 64, "a name without 'use' is an unknown command")
        #expect(try Self.json(try await sandbox.run("transport", "--json").stdout)["transport"] as? String == "my_transport")
    }

    @Test func torOffSaysWhatItExposes() async throws {
        let sandbox = Sandbox()
        let shown = try await sandbox.run("tor")
        #expect(shown.stdout.hasPrefix("tor: on\n"))

        let off = try await sandbox.run("tor", "off")
        #expect(off.status == 0)
        #expect(off.stdout.hasPrefix("tor: off\n"))
        #expect(off.stdout.contains("goes DIRECT"))
        #expect(off.stdout.contains("relay WebSockets, directory fetches"))
        #expect(off.stdout.contains("see your IP address"))
        #expect(off.stdout.contains("anyone watching your network"))
        #expect(off.stdout.contains("SOCKS listener (127.0.0.1:39050) is not served"))
        #expect(try Self.json(try await sandbox.run("tor", "--json").stdout)["torEnabled"] as? Bool == false)
        #expect(try await sandbox.run("transport").stdout.contains("Tor is off"))

        let on = try await sandbox.run("tor", "on")
        #expect(on.stdout.hasPrefix("tor: on\n"))
        #expect(on.stdout.contains("fail-closed"))
        #expect(try Self.json(try await sandbox.run("tor", "--json").stdout)["torEnabled"] as? Bool == true)
        #expect(try await sandbox.run("tor", "on").stdout.hasPrefix("tor: on (it already was)"))
        #expect(try await sandbox.run("tor", "maybe").status == 64)
    }

    // MARK: relays

    @Test func relaysAddRemoveListWithCap() async throws {
        let sandbox = Sandbox()
        let added = try await sandbox.run("relays", "add", "Relay.Example.org:443/", "wss://abcdefghijklmnop.onion", "ftp://x",
                                    "https://relay.damus.io")
        #expect(added.status == 1)
        #expect(added.stdout.contains("added wss://relay.example.org\n"))
        #expect(added.stdout.contains("added wss://abcdefghijklmnop.onion\n"))
        #expect(added.stdout.contains("not added: ftp://x: that is not a relay address (try wss://host)"))
        #expect(added.stdout.contains("not added: https://relay.damus.io: wss://relay.damus.io is already in the relay list"))
        #expect(added.stdout.hasSuffix("added 2 relays; 2 not added\n"))

        let duplicate = try await sandbox.run("relays", "add", "wss://relay.example.org")
        #expect(duplicate.status == 1)
        #expect(duplicate.stdout.contains("already in the relay list"))

        let more = try await sandbox.run("relays", "add", "r1.example", "r2.example", "r3.example", "r4.example", "r5.example",
                                   "r6.example", "r7.example")
        #expect(more.status == 1)
        #expect(more.stdout.contains("added wss://r6.example\n"))
        #expect(more.stdout.contains("not added: r7.example: you can add up to 8 relays"))

        let listed = try Self.json(try await sandbox.run("relays", "list", "--json").stdout)
        let custom = try #require(listed["custom"] as? [String])
        #expect(custom.count == 8)
        #expect(custom.prefix(2) == ["wss://relay.example.org", "wss://abcdefghijklmnop.onion"])
        #expect((listed["builtin"] as? [String])?.contains("wss://relay.damus.io") == true)
        #expect(listed["maximumCustom"] as? Int == 8)

        let removed = try await sandbox.run("relays", "remove", "RELAY.example.org", "nos.lol", "wss://unknown.example")
        #expect(removed.status == 1)
        #expect(removed.stdout.contains("removed wss://relay.example.org\n"))
        #expect(removed.stdout.contains("not removed: nos.lol: wss://nos.lol is built in and cannot be removed"))
        #expect(removed.stdout.contains("not removed: wss://unknown.example: wss://unknown.example is not in the custom relay list"))

        let text = try await sandbox.run("relays", "list")
        #expect(text.stdout.contains("wss://nos.lol"))
        #expect(text.stdout.contains("4 built-in, 7 custom (up to 8 custom)"))
        #expect(!text.stdout.contains("relay.example.org"))
        #expect(try await sandbox.run("relays", "add").status == 64)
    }

    // MARK: config show, store file

    @Test func configShowScrubbedWithFileAndVersion() async throws {
        let sandbox = Sandbox()
        let fresh = try await sandbox.run("config", "show")
        #expect(fresh.status == 0)
        #expect(fresh.stdout.contains("file: \(sandbox.storeFile.path) (not written yet; defaults shown)"))

        _ = try await sandbox.run("bridges", "add", Self.line1, Self.line3)
        _ = try await sandbox.run("tor", "off")
        _ = try await sandbox.run("relays", "add", "relay.example.org")
        let text = try await sandbox.run("config", "show")
        #expect(text.status == 0)
        #expect(text.stdout.contains("file: \(sandbox.storeFile.path)\n"))
        #expect(text.stdout.contains("schema version: 1\n"))
        #expect(text.stdout.contains("tor: off\n"))
        #expect(text.stdout.contains("transport: auto\n"))
        #expect(text.stdout.contains("bridges: 2 (2 on)\n"))
        #expect(text.stdout.contains("wss://relay.example.org (custom)"))
        Self.expectNoSecrets(text.stdout)

        let json = try await sandbox.run("config", "show", "--json")
        Self.expectNoSecrets(json.stdout)
        let object = try Self.json(json.stdout)
        #expect(object["file"] as? String == sandbox.storeFile.path)
        #expect(object["version"] as? Int == 1)
        #expect(object["torEnabled"] as? Bool == false)
        #expect((object["bridges"] as? [[String: Any]])?.count == 2)
        #expect(object["scrubbed"] as? Bool == true)

        let unsafe = try await sandbox.run("config", "show", "--unsafe-logging")
        #expect(unsafe.stdout.contains(Self.line1))
    }

    @Test func storeFileIsPrivateAfterEveryWritingCommand() async throws {
        let sandbox = Sandbox()
        let commands: [[String]] = [["bridges", "add", Self.line1], ["tor", "off"], ["transport", "use", "snowflake"],
                                    ["relays", "add", "relay.example.org"]]
        for command in commands {
            let result = try await sandbox.run(command)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            let attributes = try FileManager.default.attributesOfItem(atPath: sandbox.storeFile.path)
            let mode = try #require(attributes[.posixPermissions] as? Int)
            #expect(mode & 0o777 == 0o600, "\(command): mode \(String(mode, radix: 8))")
            let directoryMode = try #require(try FileManager.default.attributesOfItem(atPath: sandbox.directory.path)[.posixPermissions] as? Int)
            #expect(directoryMode & 0o777 == 0o700)
        }
    }

    @Test func corruptStoreIsAFailureAndLeftUntouched() async throws {
        let sandbox = Sandbox()
        let file = try sandbox.write("{ not json", named: "bridges.json")
        for command in [["bridges", "list"], ["bridges", "add", Self.line1], ["tor", "off"], ["config", "show"]] {
            let result = try await sandbox.run(command)
            #expect(result.status == 1, "\(command)")
            #expect(result.stderr.contains("is not a valid Postern configuration"))
            Self.expectNoSecrets(result.stderr)
        }
        #expect(try String(contentsOf: file, encoding: .utf8) == "{ not json")
    }

    // MARK: help and usage

    static let newCommands: [[String]] = [
        ["bridges"], ["bridges", "add"], ["bridges", "import"], ["bridges", "list"], ["bridges", "remove"],
        ["bridges", "enable"], ["bridges", "disable"], ["bridges", "export"], ["bridges", "builtin"],
        ["transport"], ["transport", "use"], ["tor"], ["tor", "on"], ["tor", "off"],
        ["relays"], ["relays", "add"], ["relays", "remove"], ["relays", "list"], ["config"], ["config", "show"],
    ]

    @Test(arguments: newCommands)
    func everyCommandAnswersHelpAndRejectsUnknownOptions(_ command: [String]) async throws {
        let sandbox = Sandbox()
        let help = try await sandbox.run(command + ["--help"])
        #expect(help.status == 0, "\(command): \(help.stderr)")
        #expect(help.stdout.contains("Usage: postern \(command.joined(separator: " "))"))
        #expect(help.stderr.isEmpty)

        let bogus = try await sandbox.run(command + ["--bogus"])
        #expect(bogus.status == 64, "\(command)")
        #expect(bogus.stderr.contains("unknown option '--bogus'"))
        #expect(bogus.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: sandbox.storeFile.path))
    }

    @Test func topLevelHelpListsSettingsCommands() async throws {
        let help = try await Sandbox().run("--help")
        for name in ["bridges", "transport", "tor", "relays", "config"] {
            #expect(help.stdout.contains("  \(name) "), "\(name) missing from: \(help.stdout)")
        }
    }

    @Test(arguments: [["bridges", "list", "extra"], ["bridges", "add"], ["bridges", "import"], ["bridges", "import", "a", "b"],
                      ["bridges", "add", "x", "--file", "y"], ["bridges", "enable"], ["config", "show", "x"], ["relays"],
                      ["bridges", "frobnicate"]])
    func settingsUsageErrorsExit64(_ arguments: [String]) async throws {
        let sandbox = Sandbox()
        let result = try await sandbox.run(arguments)
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("postern"))
        #expect(result.stdout.isEmpty)
    }
}
