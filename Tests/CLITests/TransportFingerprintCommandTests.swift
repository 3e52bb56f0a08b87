import Foundation
import PosternTestSupport
import Testing

/// `postern transport fingerprint`, run as a user runs it: the JA3/JA4 of each route's hello and
/// of a named profile, in text and JSON, with nothing of a bridge's secrets in the output.
@Suite struct TransportFingerprintCommandTests {
    typealias Sandbox = SettingsCommandTests.Sandbox

    // Distinctive secrets, so a leak can be searched for.
    static let webtunnelFingerprint = "0A1B2C3D4E5F60718293A4B5C6D7E8F901234567"
    static let webtunnelHost = "wt-secret-host.example.org"
    static let webtunnelPath = "Qw9sEcReTpAtH"
    static let snowflakeFingerprint = "7E6D5C4B3A29180F7E6D5C4B3A29180F7E6D5C4B"
    static let brokerHost = "broker-secret.example.net"
    static let frontHost = "front-secret.example.com"
    static let cacheHost = "amp-secret.example"
    static let lines = [
        "webtunnel [2001:db8::7]:443 \(webtunnelFingerprint) url=https://\(webtunnelHost)/\(webtunnelPath) ver=0.0.1",
        "webtunnel [2001:db8::8]:443 \(webtunnelFingerprint) url=https://\(webtunnelHost)/\(webtunnelPath)2 utls=HelloChrome_Auto",
        "snowflake 192.0.2.3:80 \(snowflakeFingerprint) fingerprint=\(snowflakeFingerprint) url=https://\(brokerHost)/ fronts=\(frontHost) utls-imitate=hellofirefox_auto",
        "snowflake 192.0.2.5:80 \(snowflakeFingerprint) fingerprint=\(snowflakeFingerprint) url=https://\(brokerHost)/ ampcache=https://\(cacheHost)/ utls-imitate=hellorandomizednoalpn",
    ]
    static let secrets = [webtunnelFingerprint, webtunnelHost, webtunnelPath, snowflakeFingerprint, brokerHost, frontHost, cacheHost, "2001:db8::7", "192.0.2.3", "192.0.2.5"]

    private func rows(_ text: String) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
    }

    private static func isJA4(_ value: Any?) -> Bool {
        guard let text = value as? String else { return false }
        let parts = text.split(separator: "_")
        return parts.count == 3 && parts[0].count == 10 && parts[1].count == 12 && parts[2].count == 12
    }

    @Test func routesShowTheirProfileAndJA4InJSONAndTextWithoutSecrets() async throws {
        let sandbox = Sandbox()
        let added = try await sandbox.run(["bridges", "add", "-"], stdin: Self.lines.joined(separator: "\n") + "\n")
        #expect(added.status == 0, "\(added.stderr)")

        let json = try await sandbox.run("transport", "fingerprint", "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let all = try rows(json.stdout)
        let stored = all.filter { !(($0["bridge"] as? String) ?? "").hasPrefix("builtin-") }
        #expect(stored.count == 4, "\(json.stdout)")
        let byProfile = Dictionary(grouping: stored) { ($0["requestedProfile"] as? String) ?? "-" }

        let plain = try #require(byProfile["-"]?.first)
        #expect(plain["transport"] as? String == "webtunnel")
        #expect(plain["profile"] as? String == "randomized-noalpn")
        #expect(plain["randomized"] as? Bool == true)
        #expect((plain["applicationProtocols"] as? [String])?.isEmpty == true)
        #expect(Self.isJA4(plain["ja4"]), "\(String(describing: plain["ja4"]))")
        #expect((plain["ja4"] as? String)?.hasPrefix("t13d") == true)
        #expect((plain["ja4"] as? String)?.dropFirst(8).hasPrefix("00") == true, "no ALPN: \(String(describing: plain["ja4"]))")

        let chrome = try #require(byProfile["hellochrome_auto"]?.first)
        #expect(chrome["profile"] as? String == "firefox-esr")
        #expect((chrome["substitution"] as? String)?.contains("Chrome") == true)
        #expect(chrome["ja4"] as? String == "t13d1616h1_86a278354501_0c27189014cf")

        let snowflake = try #require(byProfile["hellofirefox_auto"]?.first)
        #expect(snowflake["transport"] as? String == "snowflake")
        #expect(snowflake["connection"] as? String == "broker through a front")
        #expect(snowflake["profile"] as? String == "firefox-esr")
        #expect(snowflake["substitution"] is NSNull || snowflake["substitution"] == nil)
        // The broker offers Firefox's h2,http/1.1 (it speaks HTTP/2 when the server picks it).
        #expect(snowflake["ja4"] as? String == "t13d1616h2_86a278354501_0c27189014cf")
        #expect(Self.isJA4(snowflake["ja4"]) && (snowflake["ja3"] as? String)?.count == 32)

        let amp = try #require(byProfile["hellorandomizednoalpn"]?.first)
        #expect(amp["connection"] as? String == "AMP cache")
        #expect(amp["profile"] as? String == "randomized-noalpn")
        #expect((amp["ja4"] as? String)?.hasPrefix("t13d") == true && (amp["applicationProtocols"] as? [String])?.isEmpty == true)

        // The built-in snowflake lines ask for hellorandomizedalpn, as Tor Browser's do.
        let builtins = all.filter { (($0["bridge"] as? String) ?? "").hasPrefix("builtin-snowflake-") }
        #expect(!builtins.isEmpty)
        #expect(builtins.allSatisfy { $0["profile"] as? String == "randomized-alpn" && ($0["applicationProtocols"] as? [String]) == ["h2", "http/1.1"] })

        let text = try await sandbox.run("transport", "fingerprint")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("JA4") && text.stdout.contains("JA3"))
        #expect(text.stdout.contains("t13d1616h1_86a278354501_0c27189014cf"))
        #expect(text.stdout.contains("hellochrome_auto -> firefox-esr"))
        #expect(text.stdout.contains("randomized-noalpn (one draw)"))
        for output in [json.stdout, text.stdout, json.stderr, text.stderr] {
            for secret in Self.secrets {
                #expect(!output.contains(secret), "output leaks \(secret)")
            }
        }
    }

    /// A transport an external plugin serves sends the plugin's hello: the rows say so and show none.
    @Test func aTransportAPluginServesIsNamedNotFingerprinted() async throws {
        let sandbox = Sandbox()
        #expect(try await sandbox.run(["bridges", "add", "-"], stdin: Self.lines.joined(separator: "\n") + "\n").status == 0)
        let plugin = try await sandbox.run("transport", "plugin", "add", "--replace-builtin", "snowflake", "/usr/bin/snowflake-client")
        #expect(plugin.status == 0, "\(plugin.stderr)")
        let json = try await sandbox.run("transport", "fingerprint", "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let all = try rows(json.stdout)
        let snowflake = all.filter { $0["transport"] as? String == "snowflake" }
        #expect(!snowflake.isEmpty)
        #expect(snowflake.allSatisfy { $0["plugin"] as? String == "/usr/bin/snowflake-client" && $0["ja4"] == nil && $0["profile"] == nil })
        let webtunnel = all.filter { $0["transport"] as? String == "webtunnel" }
        #expect(webtunnel.count == 2 && webtunnel.allSatisfy { Self.isJA4($0["ja4"]) && $0["plugin"] == nil })
        let text = try await sandbox.run("transport", "fingerprint")
        #expect(text.stdout.contains("the plugin's own (/usr/bin/snowflake-client)"), "\(text.stdout)")
    }

    @Test func aNamedProfileShowsItsHello() async throws {
        let sandbox = Sandbox()
        let firefox = try await sandbox.run("transport", "fingerprint", "--profile", "firefox-esr")
        #expect(firefox.status == 0, "\(firefox.stderr)")
        #expect(firefox.stdout.contains("t13d1616h2_86a278354501_0c27189014cf"), "\(firefox.stdout)")

        let randomized = try await sandbox.run("transport", "fingerprint", "--profile", "HelloRandomizedALPN", "--json")
        #expect(randomized.status == 0, "\(randomized.stderr)")
        let row = try #require(try rows(randomized.stdout).first)
        #expect(row["profile"] as? String == "randomized-alpn")
        #expect(row["randomized"] as? Bool == true)
        #expect(row["applicationProtocols"] as? [String] == ["h2", "http/1.1"])
        #expect(Self.isJA4(row["ja4"]) && (row["ja4"] as? String)?.contains("h2_") == true)
    }

    @Test func usageErrorsExit64() async throws {
        let sandbox = Sandbox()
        let unknown = try await sandbox.run("transport", "fingerprint", "--profile", "hellonetscape_4")
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("'hellonetscape_4'"), "\(unknown.stderr)")
        #expect(try await sandbox.run("transport", "fingerprint", "extra").status == 64)
        #expect(try await sandbox.run("transport", "fingerprint", "--profile").status == 64)
        let help = try await sandbox.run("transport", "fingerprint", "--help")
        #expect(help.status == 0 && help.stdout.contains("--profile NAME"))
    }
}
