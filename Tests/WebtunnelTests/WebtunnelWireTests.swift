import Foundation
import Testing
import TransportBase
import TransportTLS
@testable import WebtunnelTransport

/// The upgrade request and the 101 answer (UpgradeFraming.swift), and the arguments.
struct WebtunnelWireTests {
    private func options(_ pairs: KeyValuePairs<String, String>) throws -> WebtunnelOptions {
        try WebtunnelOptions(arguments: TransportArguments(pairs))
    }

    @Test func requestIsGoRequestWriteByteForByte() throws {
        let o = try options(["url": "https://example.org/secret-path?q=1#frag", "ver": "0.0.1"])
        let bytes = UpgradeRequest.bytes(requestTarget: o.requestTarget, host: o.serverName)
        let expected = "GET /secret-path HTTP/1.1\r\nHost: example.org\r\nUser-Agent: Go-http-client/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
        #expect(bytes == Array(expected.utf8))
    }

    @Test func servernameIsBothSNIAndHostHeader() throws {
        let o = try options(["url": "https://203.0.113.7:8443/a/b%2Fc", "servername": "cdn.example.net"])
        #expect(o.serverName == "cdn.example.net")
        #expect(o.urlHost == "203.0.113.7")
        #expect(o.port == 8443)
        #expect(o.requestTarget == "/a/b%2Fc", "an escaped path is written verbatim")
        #expect(!o.serverNameIsIPLiteral)
        let request = String(decoding: UpgradeRequest.bytes(requestTarget: o.requestTarget, host: o.serverName), as: UTF8.self)
        #expect(request.contains("\r\nHost: cdn.example.net\r\n"), "Host has no port, as Go's url.Hostname()")
    }

    @Test func urlForms() throws {
        #expect(try options(["url": "https://example.org"]).requestTarget == "/")
        #expect(try options(["url": "https://example.org/"]).requestTarget == "/")
        #expect(try options(["url": "HTTPS://example.org/x"]).scheme == .https)
        #expect(try options(["url": "https://example.org/x"]).port == 443)
        let plain = try options(["url": "http://example.org/x"])
        #expect(plain.scheme == .http && plain.port == 80)
        let v6 = try options(["url": "https://[2001:db8::5]/p"])
        #expect(v6.urlHost == "2001:db8::5" && v6.serverNameIsIPLiteral)
        #expect(try options(["url": "https://example.org/p"]).tls.profile == .randomizedNoALPN)
        #expect(try options(["url": "https://example.org/p", "utls": ""]).tls.profile == .randomizedNoALPN)
        #expect(try options(["url": "https://example.org/p", "utls": "none"]).tls.profile == .firefoxESR)
        #expect(try options(["url": "https://example.org/p", "utls": "HelloRandomizedALPN"]).tls.profile == .randomizedALPN)
        let chrome = try options(["url": "https://example.org/p", "utls": "HelloChrome_Auto"]).tls
        #expect(chrome.requestedName == "hellochrome_auto" && chrome.profile == .firefoxESR && chrome.substitution != nil)
        #expect(try options(["url": "https://example.org/p", "addr": "1.2.3.4:443", "ver": "anything"]).urlHost == "example.org")
    }

    @Test(arguments: [
        ([:], "url"),
        (["url": "ftp://example.org/secretpathvalue"], "url"),
        (["url": "example.org/secretpathvalue"], "url"),
        (["url": "https://user:pw@example.org/secretpathvalue"], "url"),
        (["url": "https://example.org:0/secretpathvalue"], "url"),
        (["url": "https://example.org:70000/secretpathvalue"], "url"),
        (["url": "https://exa mple.org/secretpathvalue"], "url"),
        (["url": "https:///secretpathvalue"], "url"),
        (["url": "https://[2001:db8::5/secretpathvalue"], "url"),
        (["url": "https://example.org/secret path value"], "url"),
        (["url": "https://example.org/secretpathvalue%zz"], "url"),
        (["url": "https://example.org//secretpathvalue"], "url"),
        (["url": "https://example.org/secretpathvalue", "servername": "bad name"], "servername"),
        (["url": "https://example.org/secretpathvalue", "servername": ""], "servername"),
        (["url": "https://example.org/secretpathvalue", "utls": "HelloNotAThing"], "utls"),
    ] as [([String: String], String)])
    func badArgumentsAreTypedErrorsNamingTheKey(_ pairs: [String: String], key: String) {
        let arguments = TransportArguments(pairs.sorted { $0.key < $1.key }.map { TransportArguments.Pair(key: $0.key, value: $0.value) })
        do {
            _ = try WebtunnelOptions(arguments: arguments)
            Issue.record("accepted \(pairs)")
        } catch {
            #expect(error.code == .invalidArguments && error.kind == .invalidInput)
            #expect(error.message.contains("argument \(key)"), "\(error.message)")
            #expect(!error.message.contains("secretpathvalue"), "the url is the bridge's secret: \(error.message)")
        }
    }

    // MARK: the 101 answer

    private func parse(_ text: String) throws(TransportError) -> [UInt8]? { try UpgradeResponse.parse(Array(text.utf8)) }

    @Test func acceptsTheReferenceServersAndNginxsAnswers() throws {
        #expect(try parse("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n") == [])
        let nginx = "HTTP/1.1 101 Switching Protocols\r\nServer: nginx/1.22.1\r\nDate: Tue, 01 Dec 2026 08:21:18 GMT\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
        #expect(try parse(nginx) == [])
        #expect(try parse("HTTP/1.1 101 Switching Protocols\nupgrade:WebSocket \nCONNECTION: \tUpgrade\n\n") == [], "bare LF, any case, trimmed values")
    }

    @Test func bytesAfterTheHeadersBelongToTheTunnel() throws {
        let answer = Array("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n".utf8) + [0x16, 0x03, 0x01, 0x00, 0x0D, 0x0A]
        #expect(try UpgradeResponse.parse(answer) == [0x16, 0x03, 0x01, 0x00, 0x0D, 0x0A])
    }

    @Test func incompleteAnswersWait() throws {
        let full = "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
        for cut in 0..<(full.utf8.count - 1) {
            #expect(try UpgradeResponse.parse(Array(full.utf8.prefix(cut))) == nil, "cut at \(cut)")
        }
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", TransportError.Code.webtunnelUpgradeRefused, "200"),
        ("HTTP/1.1 404 Not Found\r\n\r\n", .webtunnelUpgradeRefused, "404"),
        ("HTTP/1.1 101 switching protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n", .webtunnelUpgradeRefused, "101"),
        ("HTTP/1.1 101 Switching Protocols \r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n", .webtunnelUpgradeRefused, "101"),
        ("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n\r\n", .webtunnelUpgradeRefused, "Upgrade"),
        ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", .webtunnelUpgradeRefused, "Connection"),
        ("HTTP/1.1 101 Switching Protocols\r\nConnection: keep-alive, upgrade\r\nUpgrade: websocket\r\n\r\n", .webtunnelUpgradeRefused, "Connection"),
        ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", .webtunnelUpgradeRefused, "Upgrade"),
        ("SSH-2.0-OpenSSH_9.2 Debian\r\n\r\n", .webtunnelMalformedResponse, "HTTP/x.y"),
        ("HTTP/1.1\r\n\r\n", .webtunnelMalformedResponse, "space"),
        ("HTTP/1.1 1x1 Switching Protocols\r\n\r\n", .webtunnelMalformedResponse, "status code"),
        ("HTTP/1.1 101 Switching Protocols\r\nno colon here\r\n\r\n", .webtunnelMalformedResponse, "':'"),
        ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n folded: yes\r\nConnection: upgrade\r\n\r\n", .webtunnelMalformedResponse, "token"),
        ("\r\n\r\n", .webtunnelMalformedResponse, "empty"),
    ] as [(String, TransportError.Code, String)])
    func badAnswersAreTypedErrors(_ answer: String, code: TransportError.Code, mentions: String) {
        do {
            _ = try parse(answer)
            Issue.record("accepted \(answer.debugDescription)")
        } catch {
            #expect(error.code == code, "\(answer.debugDescription): \(error)")
            #expect(error.kind == .protocolViolation)
            #expect(error.message.contains(mentions), "\(error.message)")
        }
    }

    @Test func headerBlockIsCapped() {
        let endless = Array("HTTP/1.1 101 Switching Protocols\r\nX-Pad: ".utf8) + [UInt8](repeating: 0x61, count: UpgradeResponse.maximumHeaderBytes)
        #expect(throws: TransportError.self) { try UpgradeResponse.parse(endless) }
        do { _ = try UpgradeResponse.parse(endless) } catch { #expect(error.code == .webtunnelResponseTooLarge) }
        let manyLines = "HTTP/1.1 101 Switching Protocols\r\n" + String(repeating: "A: b\r\n", count: UpgradeResponse.maximumHeaderLines + 1) + "\r\n"
        do { _ = try parse(manyLines); Issue.record("accepted 101 header lines") } catch { #expect(error.code == .webtunnelResponseTooLarge) }
    }

    /// No byte sequence traps: random and mutated answers only ever return or throw.
    @Test func arbitraryBytesNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        let seed = Array("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n".utf8)
        for round in 0..<5000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                bytes = seed
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = [0x0A, 0x0D, 0x3A, 0x20, 0x00, 0xFF].randomElement(using: &generator)!
                }
            }
            _ = try? UpgradeResponse.parse(bytes)
        }
    }

    // MARK: addresses

    @Test func resolvedAddressesAreFilteredAsLyrebirdDoes() throws {
        func endpoint(_ text: String) throws -> TransportEndpoint { try TransportEndpoint(parsing: text) }
        let all = try ["127.0.0.1:443", "10.1.2.3:443", "172.16.0.1:443", "172.31.255.255:443", "192.168.1.1:443",
                       "169.254.0.9:443", "224.0.0.1:443", "0.0.0.0:443", "[::1]:443", "[::]:443", "[fe80::1]:443",
                       "[fd00::1]:443", "[ff02::1]:443", "[::ffff:10.0.0.1]:443",
                       "172.32.0.1:443", "203.0.113.5:443", "198.51.100.10:443", "[2001:db8::7]:443", "[::ffff:203.0.113.9]:443",
                       "203.0.113.5:443"].map(endpoint)
        let kept = AddressResolution.filter(all).map(\.description)
        #expect(kept == ["172.32.0.1:443", "203.0.113.5:443", "198.51.100.10:443", "[2001:db8::7]:443", "203.0.113.9:443"])
    }

    @Test func loopbackHostIsRefused() async {
        do {
            _ = try await AddressResolution.resolve(host: "127.0.0.1", port: 443, timeout: .seconds(5))
            Issue.record("a loopback url host was accepted")
        } catch {
            #expect(error.code == .webtunnelNoUsableAddress)
        }
    }
}
