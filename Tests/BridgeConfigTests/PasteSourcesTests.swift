import Foundation
import Testing
@testable import BridgeConfig

/// Pastes as they arrive from where people get bridges: a mail client that wrapped the lines, a
/// messenger that put invisible characters in, the HTML source of a page or a message.
@Suite("Pastes from mail, messengers and web pages")
struct PasteSourcesTests {
    static let obfs4A = "obfs4 192.0.2.60:443 3E2F4C1A5B6D7E8F9A0B1C2D3E4F5A6B7C8D9E0F cert=\(Sample.cert) iat-mode=0"
    static let obfs4B = "obfs4 192.0.2.61:9001 0123456789ABCDEF0123456789ABCDEF01234567 cert=\(Sample.cert) iat-mode=1"
    static let webtunnel = "webtunnel [2001:db8::61]:443 89ABCDEF0123456789ABCDEF0123456789ABCDEF url=https://example.org/4f2a9c7e1b3d5f60 ver=0.0.1"
    static let snowflake = "snowflake 192.0.2.62:80 url=https://broker.example.net/ fronts=cdn.example.com"
    static let meek = "meek_lite 192.0.2.63:80 url=https://meek.example.net/ front=www.example.com"
    /// The shape of the built-in snowflake lines: valid once url= is read, with fronts= and a long
    /// ice= after it.
    static let longSnowflake = "snowflake 192.0.2.67:80 2B280B23E1107BB62ABFC40DDCC8824814F80A72 fingerprint=2B280B23E1107BB62ABFC40DDCC8824814F80A72 url=https://broker.example.net/ fronts=cdn.example.com,www.example.org ice=stun:stun.example.net:3478,stun:stun2.example.net:3478,stun:stun3.example.org:3478,stun:stun4.example.org:443 utls-imitate=hellorandomizedalpn"

    @Test func angleBracketsInAValueAreInvalidForEveryTransport() throws {
        for line in [Self.obfs4A, Self.webtunnel, Self.snowflake, Self.meek, "mytransport 192.0.2.66:443 key=value"] {
            for damaged in [line + "</p></body></html>", line + " note=<b>", line.replacingOccurrences(of: "=", with: "=<")] {
                for rules in [posternRules, .syntaxOnly] {
                    do {
                        _ = try BridgeLine.parse(damaged, rules: rules)
                        Issue.record("accepted: \(damaged)")
                    } catch {
                        #expect(error.code == .badArgument && error.message.contains("< or >"), "\(damaged)")
                        #expect(!error.message.contains("192.0.2") && !error.message.contains("example"))
                    }
                }
            }
        }
    }
}
