import Testing
@testable import PosternTor

/// tor's own warnings that name a bridge (tor 0.4.9.11's formats), and lines that must come through.
@Suite struct TorLogScrubberTests {
    private let fingerprint = "C0FFEE00C0FFEE00C0FFEE00C0FFEE00C0FFEE00"
    private let cert = "ssH+9rP8dG2NLJN2XuFw1l3kl3Y3F1dpHdGl1BDSaZ+WZ4DMZTk2fHJk5sO5dJW+9KBNVA"

    private func scrubber() throws -> TorLogScrubber {
        TorLogScrubber(options: [
            try TorOption("Bridge", "obfs4 192.0.2.10:4431 \(fingerprint) cert=\(cert) iat-mode=0"),
            try TorOption("Bridge", "webtunnel [2001:db8::7]:443 \(fingerprint) url=https://front.example.net:8443/s3cr3t-path ver=0.0.1"),
            try TorOption("Bridge", "snowflake 192.0.2.3:80 fingerprint=\(fingerprint) url=https://broker.example.org/ fronts=cdn.example.com,www.example.com ice=stun:stun.example.com:3478 max=3"),
            try TorOption("Bridge", "dnstt 192.0.2.4:1 doh=https://doh.example/dns-query pubkey=0123456789abcdef domain=t.example.com"),
            try TorOption("Bridge", "meek_lite 192.0.2.5:2 url=https://user:pw@192.0.2.5/p?token=abc123 front=x.io"),
            try TorOption("UseBridges", "1"),
        ])
    }

    private func line(_ message: String) -> String { "Dec 05 15:34:32.000 [warn] " + message }

    @Test func torsWarningsThatNameABridgeAreScrubbed() throws {
        let scrubber = try scrubber()
        let cases: [(String, String)] = [
            ("Problem bootstrapping. Stuck at 5% (conn): Connecting to a relay. (Connection refused; CONNECTREFUSED; count 1; recommendation warn; host \(fingerprint) at 192.0.2.10:4431)",
             "Problem bootstrapping. Stuck at 5% (conn): Connecting to a relay. (Connection refused; CONNECTREFUSED; count 1; recommendation warn; host [scrubbed] at [scrubbed])"),
            ("Proxy Client: unable to connect OR connection (handshaking (proxy)) with 192.0.2.3:80 ID=<none> RSA_ID=\(fingerprint) (\"general SOCKS server failure\")",
             "Proxy Client: unable to connect OR connection (handshaking (proxy)) with [scrubbed] ID=<none> [scrubbed] (\"general SOCKS server failure\")"),
            ("Guard Bridge ($\(fingerprint)) is failing more circuits than usual.",
             "Guard [scrubbed] ([scrubbed]) is failing more circuits than usual."),
            ("Received http status code 503 (\"busy\") from server [2001:db8::7]:443 while fetching consensus.",
             "Received http status code 503 (\"busy\") from server [scrubbed] while fetching consensus."),
            ("TLS error while handshaking with 198.51.100.1:9001 ID=Wj1mMsGBsJvSm6/Lz3sGdrtWJlqOyCGajkgyPgN/VzQ RSA_ID=\(fingerprint.lowercased())",
             "TLS error while handshaking with [scrubbed] [scrubbed] [scrubbed]"),
            ("Managed proxy \"/usr/bin/postern\": connecting to https://front.example.net:8443/s3cr3t-path failed, front front.example.net",
             "Managed proxy \"/usr/bin/postern\": connecting to [scrubbed] failed, front [scrubbed]"),
            ("'cert=\(cert)' is not a k=v item.", "'[scrubbed]' is not a k=v item."),
            ("broker cdn.example.com unreachable; resolver doh.example; zone t.example.com; ice stun.example.com",
             "broker [scrubbed] unreachable; resolver [scrubbed]; zone [scrubbed]; ice [scrubbed]"),
            ("Address fe80::1 and 2001:db8:1:2:3:4:5:6 are peers", "Address [scrubbed] and [scrubbed] are peers"),
            // A URL that the word step alone would split at '@' and '?'; a host under six characters.
            ("fetching https://user:pw@192.0.2.5/p?token=abc123 via x.io", "fetching [scrubbed] via [scrubbed]"),
            ("Tried connecting to router at 192.0.2.10:4431, but RSA + ed25519 identity keys were not as expected: wanted \(fingerprint) + no ed25519 key but got \(fingerprint)~Unnamed + Wj1mMsGBsJvSm6/Lz3sGdrtWJlqOyCGajkgyPgN/VzQ.",
             "Tried connecting to router at [scrubbed], but RSA + ed25519 identity keys were not as expected: wanted [scrubbed] + no ed25519 key but got [scrubbed] + [scrubbed]"),  // the word took its full stop
        ]
        for (message, expected) in cases {
            #expect(scrubber.scrub(line(message)) == line(expected))
        }
    }

    @Test func linesWithoutSecretsComeThroughUnchanged() throws {
        let scrubber = try scrubber()
        for message in [
            "Tor 0.4.9.11 opening log file.",
            "You are running Tor as root. You don't need to, and you probably shouldn't.",
            "Your system clock just jumped 120 seconds forward; assuming established circuits no longer work.",
            "Tor was compiled with OpenSSL 3.0.17 and Libevent 2.1.12-stable; skew 15:34:32 is fine",
            "iat-mode=0 max=3 ver=0.0.1 stay, being settings rather than identifiers",
            "Managed proxy at '/tmp/x/postern' failed at launch.",
        ] {
            #expect(scrubber.scrub(line(message)) == line(message))
        }
    }

    @Test func theTimestampSurvivesAndALineWithoutOneIsScrubbedAlike() throws {
        let scrubber = try scrubber()
        #expect(scrubber.scrub("Dec 05 15:34:32.000 [err] at 192.0.2.10:4431") == "Dec 05 15:34:32.000 [err] at [scrubbed]")
        #expect(scrubber.scrub("no prefix 192.0.2.10 here") == "no prefix [scrubbed] here")
        #expect(scrubber.scrub("") == "")
    }

    @Test func bridgesLearnedLaterAreScrubbedToo() throws {
        var scrubber = TorLogScrubber()
        let message = line("connect to bridge.example.org failed")
        #expect(scrubber.scrub(message) == message)
        scrubber.learn([try TorOption("Bridge", "webtunnel 192.0.2.9:443 url=https://bridge.example.org/p")])
        #expect(scrubber.scrub(message) == line("connect to [scrubbed] failed"))
        #expect(scrubber.secrets.first == "https://bridge.example.org/p", "longest first: \(scrubber.secrets)")
    }

    /// Random text around an address or identity: whatever surrounds it, it never comes out.
    @Test func randomTextAroundAnIdentifierNeverLetsItThrough() {
        let scrubber = TorLogScrubber()
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789abcdefABCDEF:.[]$~=+/ -_x\u{1}é()".utf8)
        let identifiers = ["192.0.2.77", "192.0.2.77:443", "[2001:db8::9]:443", "2001:db8::9", fingerprint, "$\(fingerprint)~Nick", cert]
        for _ in 0..<2_000 {
            let noise = { (0..<Int.random(in: 0..<60, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! } }
            let identifier = identifiers.randomElement(using: &generator)!
            let text = String(decoding: noise() + Array(" \(identifier) ".utf8) + noise(), as: UTF8.self)
            let scrubbed = scrubber.scrub(text)
            #expect(!scrubbed.contains(identifier), "\(text) -> \(scrubbed)")
            #expect(scrubbed.contains(TorLogScrubber.placeholder))
        }
    }
}
