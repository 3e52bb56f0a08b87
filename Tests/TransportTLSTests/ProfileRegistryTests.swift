import Foundation
import PosternTestSupport
import PosternLinkSpec
import Testing
import TransportBase
import TransportTLS

/// Every ClientHello name a bridge line can carry maps to a profile, and every profile those names
/// reach completes a handshake with openssl s_server.
@Suite(.serialized) struct ProfileRegistryTests {
    /// lyrebird's common/utlsutil names (webtunnel's `utls=`), which include snowflake's
    /// `utls-imitate=` list (SnowflakeArgumentRules.utlsNames), plus `hellogolang` and `none`.
    static let bridgeLineNames = [
        "hellogolang", "none", "hellorandomized", "hellorandomizedalpn", "hellorandomizednoalpn",
        "hellofirefox_auto", "hellofirefox_55", "hellofirefox_56", "hellofirefox_63", "hellofirefox_65", "hellofirefox_99",
        "hellofirefox_102", "hellofirefox_105",
        "hellochrome_auto", "hellochrome_58", "hellochrome_62", "hellochrome_70", "hellochrome_72", "hellochrome_83", "hellochrome_87",
        "hellochrome_96", "hellochrome_100", "hellochrome_102",
        "helloios_auto", "helloios_11_1", "helloios_12_1", "helloios_13", "helloios_14", "helloandroid_11",
        "helloedge_auto", "helloedge_85", "helloedge_106", "hellosafari_auto", "hellosafari_16_0",
        "hello360_auto", "hello360_7_5", "hello360_11_0", "helloqq_auto", "helloqq_11_1",
    ]

    @Test func everyBridgeLineNameResolvesCaseInsensitivelyToItsFamilysProfile() throws {
        for name in Self.bridgeLineNames {
            let choice = try BrowserTLSProfile.choice(forName: name)
            #expect(try BrowserTLSProfile.named(name.uppercased()) == choice.profile, "\(name)")
            #expect(choice.requestedName == name)
            switch name {
            case "hellorandomized": #expect(choice.profile == .randomized && choice.substitution == nil)
            case "hellorandomizedalpn": #expect(choice.profile == .randomizedALPN && choice.substitution == nil)
            case "hellorandomizednoalpn": #expect(choice.profile == .randomizedNoALPN && choice.substitution == nil)
            case "hellofirefox_auto": #expect(choice.profile == .firefoxESR && choice.substitution == nil)
            case _ where name.hasPrefix("hellofirefox_"):
                #expect(choice.profile == .firefoxESR, "\(name)")
                #expect(choice.substitution?.contains("Firefox ESR 153") == true, "\(name): \(String(describing: choice.substitution))")
            default:
                // Chrome, Safari, iOS, Edge, Android, 360, QQ and Go: Firefox ESR, saying why.
                #expect(choice.profile == .firefoxESR, "\(name)")
                #expect(choice.substitution?.contains("Firefox ESR") == true, "\(name): \(String(describing: choice.substitution))")
            }
        }
        #expect(try BrowserTLSProfile.named("HelloChrome_Auto") == .firefoxESR)
        #expect(try BrowserTLSProfile.named("HelloRandomizedALPN") == .randomizedALPN)
        // Versions uTLS added after these lists, as the bridge-line check accepts them.
        #expect(try BrowserTLSProfile.named("hellochrome_131") == .firefoxESR)
        #expect(try BrowserTLSProfile.named("hellofirefox_120") == .firefoxESR)
        for profile in BrowserTLSProfile.all {
            #expect(try BrowserTLSProfile.named(profile.name) == profile)
        }
    }

    /// The registry and the bridge-line check (PosternLinkSpec) agree on what a name is.
    @Test func registryAcceptsWhatTheBridgeLineCheckAcceptsAndNothingElse() throws {
        // hellogolang is in lyrebird's map as "no uTLS", which its parser refuses on a webtunnel
        // line; the registry takes it for snowflake's reference name of Go's own hello.
        for name in Self.bridgeLineNames.filter({ $0 != "hellogolang" }) + ["HelloChrome_131", "helloios_99_9"] {
            #expect(BridgeArgumentSyntax.isLyrebirdUTLSName(name, allowEmpty: false), "\(name)")
            #expect(throws: Never.self) { try BrowserTLSProfile.named(name) }
        }
        for word in ["hellonetscape_4", "hellochrome_", "chrome", "hellochrome_auto!", "hello firefox", "hellorandom", "custom"] {
            #expect(!BridgeArgumentSyntax.isLyrebirdUTLSName(word, allowEmpty: false), "\(word)")
            do throws(TransportError) {
                _ = try BrowserTLSProfile.named(word)
                Issue.record("\(word) resolved")
            } catch {
                #expect(error.code == .unknownTLSProfile)
                #expect(error.kind == .invalidInput)
                #expect(error.message.contains("'\(word)'"), "\(error.message)")
            }
        }
        #expect(throws: TransportError.self) { try BrowserTLSProfile.named("") }
        // Control characters in a name are shown, not passed through.
        do throws(TransportError) {
            _ = try BrowserTLSProfile.named("bad\u{1b}[2Jname")
            Issue.record("resolved")
        } catch {
            #expect(!error.message.contains("\u{1b}"))
        }
    }

    @Test func eachTransportsDefaultIsWhatItsReferenceLinesAskFor() throws {
        #expect(BrowserTLSProfile.defaultForSnowflake == .randomizedALPN)
        #expect(BrowserTLSProfile.defaultForWebtunnel == .randomizedNoALPN)
        let snowflake = try BrowserTLSProfile.forSnowflake(utlsImitate: nil)
        #expect(snowflake.profile == .randomizedALPN && snowflake.requestedName == nil)
        #expect(try BrowserTLSProfile.forSnowflake(utlsImitate: "hellofirefox_auto").profile == .firefoxESR)
        #expect(try BrowserTLSProfile.forWebtunnel(utls: nil).profile == .randomizedNoALPN)
        #expect(try BrowserTLSProfile.forWebtunnel(utls: "").profile == .randomizedNoALPN)
        #expect(try BrowserTLSProfile.forWebtunnel(utls: "none").profile == .firefoxESR)
        #expect(try BrowserTLSProfile.forWebtunnel(utls: "HelloRandomizedALPN").profile == .randomizedALPN)
    }

    /// Each profile a name reaches, over a real handshake and a request: by name with SNI, and by IP.
    /// Full handshakes only (no resumption), since the JA4 checked is a first hello's.
    @Test func everyNamedProfileCompletesAHandshake() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates: certificates, arguments: ["-www"])
        defer { server.stop() }
        let port = try await server.port()
        for name in Self.bridgeLineNames + BrowserTLSProfile.all.map(\.name) {
            let profile = try BrowserTLSProfile.named(name)
            for serverName in [TestCertificates.serverName, "127.0.0.1"] {
                let (stream, recording) = try await handshake(port: port, BrowserTLSConfiguration(
                    serverName: serverName, applicationProtocols: ["http/1.1"], profile: profile, caFile: certificates.caFile,
                    handshakeTimeout: .seconds(30), resumesSessions: false))
                defer { stream.close() }
                try await stream.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
                let page = String(decoding: try await readAll(stream), as: UTF8.self)
                #expect(page.hasPrefix("HTTP/1.0 200 ok"), "\(name) to \(serverName)")
                let hello = try ClientHelloFingerprint(records: try #require(recording.written.first))
                #expect(hello.hasServerName == (serverName != "127.0.0.1"), "\(name)")
                if profile == .firefoxESR {
                    #expect(hello.ja4 == (serverName == "127.0.0.1" ? "t13i1615h1_86a278354501_0c27189014cf" : "t13d1616h1_86a278354501_0c27189014cf"),
                            "\(name): \(hello.ja4)")
                }
            }
        }
    }

    /// The hello made in memory is the one a connection sends.
    @Test func inMemoryHelloIsTheWireHello() async throws {
        for (serverName, ja4) in [("www.example.com", "t13d1616h2_86a278354501_0c27189014cf"), ("192.0.2.1", "t13i1615h2_86a278354501_0c27189014cf")] {
            let hello = try ClientHelloFingerprint(presentedBy: BrowserTLSConfiguration(serverName: serverName))
            #expect(hello.ja4 == ja4)
            #expect(hello.cipherSuites.count == 16)
        }
        let noName = try ClientHelloFingerprint(presentedBy: BrowserTLSConfiguration(serverName: "www.example.com", sendsServerName: false))
        #expect(noName.ja4 == "t13i1615h2_86a278354501_0c27189014cf")
    }
}
