import PosternLinkSpec
import Testing
@testable import BridgeConfig

/// Valid-looking values used throughout (documentation addresses, made-up keys).
enum Sample {
    static let cert = "AAECAwQFBgcICQoLDA0ODxAREhPnmmF6TXg47PsvuX+k3kiOrk4wS+mRZ2wWxVv1Yq4kJA"  // obfs4.md §1 vector
    static let fingerprint = "0123456789ABCDEF0123456789ABCDEF01234567"
    static let obfs4 = "obfs4 198.51.100.7:443 \(fingerprint) cert=\(cert) iat-mode=0"
}

@Suite("Bridge-line model")
struct BridgeLineTests {
    @Test func obfs4LineParsesIntoItsParts() throws {
        let line = try BridgeLine(validating: "Bridge " + Sample.obfs4)
        #expect(line.transport == .obfs4)
        #expect(line.address == BridgeAddress(host: .ipv4("198.51.100.7"), port: 443))
        #expect(line.fingerprint?.hex == Sample.fingerprint)
        #expect(line.arguments.keys == ["cert", "iat-mode"])
        #expect(line.arguments["iat-mode"] == "0")
        #expect(line.description == Sample.obfs4)
        #expect(line.torrcLine == "Bridge " + Sample.obfs4)
    }

    @Test func specCertVectorDecodesToNodeIDAndPublicKey() throws {
        let bytes = try #require(BridgeArgumentSyntax.decodeBase64(Substring(Sample.cert)))
        #expect(bytes.count == 52)
        #expect(Array(bytes[0..<20]) == Array(0..<20))
        #expect(bytes[20] == 0xe7 && bytes[21] == 0x9a && bytes[50] == 0x24 && bytes[51] == 0x24)
    }

    @Test func certPaddingIsToleratedAndDropped() throws {
        let line = try BridgeLine(validating: "obfs4 198.51.100.7:443 cert=\(Sample.cert)== iat-mode=1")
        #expect(line.arguments["cert"] == Sample.cert)
        #expect(try BridgeLine(validating: line.description) == line)
    }

    @Test(arguments: [
        ("obfs4 198.51.100.7:443 cert=\(Sample.cert.dropLast()) iat-mode=0", BridgeLineError.Code.badCert),
        ("obfs4 198.51.100.7:443 cert=\(Sample.cert.dropLast())! iat-mode=0", .badCert),
        ("obfs4 198.51.100.7:443 cert=\(Sample.cert)", .missingIATMode),
        ("obfs4 198.51.100.7:443 cert=\(Sample.cert) iat-mode=01", .badIATMode),
        ("obfs4 198.51.100.7:443 iat-mode=0", .missingCert),
        ("obfs4 198.51.100.7:443 node-id=\(String(repeating: "a", count: 40)) iat-mode=0", .missingCert),
        ("obfs4 198.51.100.7:443 node-id=\(String(repeating: "a", count: 40)) public-key=\(String(repeating: "g", count: 64)) iat-mode=0", .badPublicKey),
        ("obfs4 198.51.100.7:443 cert=\(Sample.cert) iat-mode=0 cert=\(Sample.cert)", .duplicateArgument),
        ("obfs4 198.51.100.7 \(Sample.fingerprint)0 cert=\(Sample.cert) iat-mode=0", .badFingerprint),
        ("obfs4 [2001:db8::7:443 cert=\(Sample.cert) iat-mode=0", .badAddress),
        ("obfs4 [2001:db8::7]443 cert=\(Sample.cert) iat-mode=0", .badAddress),
        ("obfs4 198.51.100.7:0 cert=\(Sample.cert) iat-mode=0", .badPort),
        ("obfs4 198.51.100.7: cert=\(Sample.cert) iat-mode=0", .badPort),
        ("obfs4 example.org:443 cert=\(Sample.cert) iat-mode=0", .hostNameNotAllowed),
        ("conjure example.org:443", .hostNameNotAllowed),
        ("198.51.100.7:443 \(Sample.fingerprint) x=y", .argumentsWithoutTransport),
        ("9obfs 198.51.100.7:443", .badTransportName),
        ("snowflake 192.0.2.3:80 url=https://broker.example/ max=1.5", .badMax),
        ("snowflake 192.0.2.3:80 url=https://broker.example/ utls-nosni=maybe", .badBoolean),
        ("snowflake 192.0.2.3:80 url=https://broker.example/ fronts=a..b", .badFront),
        ("snowflake 192.0.2.3:80 url=https://broker.example/ fronts=127.0.5", .badFront),
        ("snowflake 192.0.2.3:80 url=https://broker.example/ fronts=127.0.05.4", .badFront),
        ("snowflake 192.0.2.3:80 url=https://broker.example/ ice=stun:", .badICE),
        ("snowflake 192.0.2.3:80 url=https://user@broker.example/", .badURL),
        ("snowflake 192.0.2.3:80 ampcache=https://cdn.example/", .conflictingArguments),
        ("snowflake 192.0.2.3:80 sqscreds=x", .conflictingArguments),
        ("webtunnel [2001:db8::1]:443 url=https://example.org/x servername=bad_name", .badServerName),
        ("meek_lite 192.0.2.20:80 url=https://example.org/ front=-bad.example", .badFront),
        ("meek_lite 192.0.2.20:80 url=https://example.org/ utls=chrome", .badUTLS),
    ])
    func invalidLinesAreRejectedWithTheRightCode(text: String, code: BridgeLineError.Code) {
        #expect {
            try BridgeLine(validating: text)
        } throws: { error in
            (error as? BridgeLineError)?.code == code && (error as? BridgeLineError)?.kind == .invalidInput
        }
    }

    @Test func errorsNameTheWordByPositionAndKind() {
        do {
            _ = try BridgeLine(validating: "Bridge obfs4 198.51.100.7:443 \(Sample.fingerprint) cert=short iat-mode=0")
            Issue.record("accepted a short cert")
        } catch {
            // Counted as written, with the Bridge keyword as word 1.
            #expect(error.message == "word 5 (cert): an obfs4 cert is 70 characters of base64 that decode to 52 bytes")
            #expect(error.word == 5)
        }
    }

    @Test func valuesMayContainEqualsAndBeEmpty() throws {
        let line = try BridgeLine(validating: "snowflake 192.0.2.3:80 url=https://b.example/?a=b=c fronts=")
        #expect(line.arguments["url"] == "https://b.example/?a=b=c")
        #expect(line.arguments["fronts"] == "")
        #expect(try BridgeLine(validating: line.description) == line)
    }

    @Test func addressesNormalizeAndRoundTrip() throws {
        let v6 = try BridgeAddress(validating: "[2001:DB8:0:0::7]:9443")
        #expect(v6.description == "[2001:db8::7]:9443")
        #expect(try BridgeAddress(validating: v6.description) == v6)
        let defaulted = try BridgeAddress(validating: "192.0.2.1")
        #expect(defaulted.port == 443)
        #expect(try BridgeAddress(validating: "Snowflake.Example.NET:80", allowingHostName: true).description == "snowflake.example.net:80")
        #expect(BridgeAddress("01.2.3.4:443") == nil)
        #expect(BridgeAddress("1.2.3.4.5:443") == nil)
        #expect(BridgeAddress("[::1]x") == nil)
    }

    @Test func fingerprintAcceptsDollarAndLowerCase() throws {
        let fingerprint = try Fingerprint(validating: "$" + Sample.fingerprint.lowercased())
        #expect(fingerprint.hex == Sample.fingerprint)
        #expect(Fingerprint(fingerprint.description) == fingerprint)
        #expect(Fingerprint(String(Sample.fingerprint.dropLast()) + "G") == nil)
    }

    @Test func transportNamesAreCIdentifiers() throws {
        #expect(TransportName("meek_lite") == .meekLite)
        #expect(TransportName("_x9")?.rawValue == "_x9")
        #expect(TransportName("9x") == nil)
        #expect(TransportName("obfs-4") == nil)
        #expect(TransportName("") == nil)
        #expect(TransportName.known(matching: "OBFS4") == .obfs4)
    }

    @Test func vanillaLinesHaveNoTransportWord() throws {
        let line = try BridgeLine(validating: "vanilla 192.0.2.1:443 \(Sample.fingerprint)")
        #expect(line.transport == .vanilla)
        #expect(line.description == "192.0.2.1:443 \(Sample.fingerprint)")
        #expect(try BridgeLine(validating: line.description) == line)
    }

    @Test func argumentsAreEscapedForSocksLikeTor() throws {
        let arguments = try BridgeArguments([(key: "a", value: "x;y\\z"), (key: "url", value: "https://e/?q=1")])
        #expect(arguments.socksArgumentString == "a=x\\;y\\\\z;url=https://e/?q=1")
        #expect(throws: BridgeLineError.self) { try BridgeArguments([(key: "a", value: "1"), (key: "a", value: "2")]) }
        #expect(throws: BridgeLineError.self) { try BridgeArguments([(key: "", value: "1")]) }
    }

    /// The same escaping bug PTSocksFuzzer found in TransportArguments: ";" followed by a combining
    /// mark is one Character, but tor's transport splits on the ";" byte, so it must be escaped.
    @Test func separatorsFollowedByCombiningMarksAreEscapedForSocks() throws {
        let arguments = try BridgeArguments([(key: "a", value: "x;\u{301}y\\\u{301}")])
        #expect(arguments.socksArgumentString == "a=x\\;\u{301}y\\\\\u{301}")
    }

    @Test func argumentStringOver510BytesIsRejected() {
        let ice = (0..<40).map { "stun:s\($0).example.net:3478" }.joined(separator: ",")
        #expect {
            try BridgeLine(validating: "snowflake 192.0.2.3:80 url=https://b.example/ ice=\(ice)")
        } throws: { ($0 as? BridgeLineError)?.code == .argumentsTooLong }
    }

    @Test func unknownTransportIsAcceptedWithAWarning() throws {
        let parsed = try BridgeLine.parse("conjure 198.51.100.80:80 url=https://r.example transport=min")
        #expect(parsed.line.transport.rawValue == "conjure")
        #expect(parsed.warnings.map(\.code) == [.unknownTransport])
    }

    @Test func snowflakeFrontsMayBeIPv4Addresses() throws {
        let line = try BridgeLine(validating: "snowflake 192.0.2.3:80 url=https://b.example/ ampcache=https://cdn.example/ fronts=127.0.5.4,www.example.com")
        #expect(line.arguments["fronts"] == "127.0.5.4,www.example.com")
    }

    @Test func snowflakeFingerprintMayDifferOnlyInCase() throws {
        let line = try BridgeLine(validating: "snowflake 192.0.2.3:80 \(Sample.fingerprint) fingerprint=\(Sample.fingerprint.lowercased()) url=https://b.example/")
        #expect(line.arguments["fingerprint"] == Sample.fingerprint.lowercased())
    }
}
