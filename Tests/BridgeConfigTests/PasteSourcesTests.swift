import Foundation
import PosternLinkSpec
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

    /// Word-wraps `line` at `width` columns at spaces, as a mail client does (a word longer than
    /// the width gets a line of its own).
    static func wrapped(_ line: String, width: Int = 72) -> [String] {
        var lines: [String] = []
        for word in line.split(separator: " ") {
            if let last = lines.last, last.count + 1 + word.count <= width {
                lines[lines.count - 1] = last + " " + word
            } else {
                lines.append(String(word))
            }
        }
        return lines
    }

    // MARK: Item 12: lines wrapped by a mail client

    @Test func aMailWrappedAt72ColumnsStoresEveryBridge() throws {
        let mail = (["Here are your bridges:", ""] + Self.wrapped(Self.obfs4A) + [""] + Self.wrapped(Self.obfs4B)
                    + ["", "Good luck!"]).joined(separator: "\n")
        #expect(Self.wrapped(Self.obfs4A).count == 3)

        let directory = TemporaryDirectory()
        let store = try BridgeStore(directory: directory.path)
        let report = try BridgeImport.run(mail, source: "standard input", into: store, options: .init())
        #expect(report.counts.stored == 2 && report.counts.rejected == 0)
        #expect(try store.load().bridges.map(\.line.description) == [Self.obfs4A, Self.obfs4B])
        #expect(report.items.filter { $0.status == .stored }.map(\.line) == [3, 7])
    }

    @Test func wrappedLinesOfEveryTransportAndWidthAreReadWhole() throws {
        var wrappedCount = 0
        for line in [Self.obfs4A, "Bridge " + Self.obfs4B, Self.webtunnel, Self.snowflake, Self.meek, Self.longSnowflake] {
            for width in [30, 40, 60, 72] {
                let pieces = Self.wrapped(line, width: width)
                guard pieces.count > 1, pieces.count <= BridgePaste.maximumWrappedPieces else { continue }
                wrappedCount += 1
                for separator in ["\n", "\r\n", " \n"] {  // " \n": format=flowed's soft line break
                    let paste = BridgePaste.parse(pieces.joined(separator: separator))
                    #expect(paste.rejected.isEmpty, "\(width) columns")
                    #expect(paste.lines == [try BridgeLine(validating: line)], "\(width) columns")
                }
            }
        }
        #expect(wrappedCount >= 20)
    }

    @Test func validLinesAreNeverJoined() throws {
        let lines = [Self.obfs4A, "Bridge " + Self.obfs4B, Self.webtunnel, Self.snowflake, Self.meek, Self.longSnowflake,
                     "192.0.2.68:443", "192.0.2.69:443 0123456789ABCDEF0123456789ABCDEF01234567",
                     "mytransport 192.0.2.70:443", "mytransport 192.0.2.71:443 key=value"]
        let paste = BridgePaste.parse(lines.joined(separator: "\n"))
        #expect(paste.rejected.isEmpty)
        #expect(paste.accepted.map(\.location.line) == Array(1...lines.count))
    }

    @Test func proseBlankLinesAndNewBridgeLinesEndAWrappedLine() throws {
        let pieces = Self.wrapped(Self.obfs4A)
        for between in ["Thanks, the rest is below", "", "# comment", "SocksPort 9050", "Bridge " + Self.obfs4B,
                        "obfs4 192.0.2.65:443 0123456789ABCDEF0123456789ABCDEF01234567"] {
            let paste = BridgePaste.parse(([pieces[0], between] + pieces.dropFirst()).joined(separator: "\n"))
            #expect(!paste.lines.contains { $0.address.description == "192.0.2.60:443" }, "\(between)")
        }
        // Prose is not made into a bridge by the pieces after it.
        let prose = BridgePaste.parse("Use these at port 443: they work\ncert=\(Sample.cert) iat-mode=0\n")
        #expect(prose.accepted.isEmpty)
    }

    @Test func aLonePieceIsRejectedAsBefore() throws {
        let paste = BridgePaste.parse(Self.obfs4A + "\niat-mode=0\n")
        #expect(paste.lines.count == 1)
        #expect(paste.rejected.map(\.location) == [PasteLocation(line: 2)])
    }

    // MARK: Item 13: invisible and space-like characters from messengers

    @Test func invisibleCharactersAreRemovedAndSpacesAreSpaces() throws {
        let expected = try BridgeLine(validating: Self.obfs4A)
        let cert = "cert=" + Sample.cert
        for invisible in ["\u{200B}", "\u{2060}", "\u{FEFF}", "\u{200C}", "\u{200D}", "\u{00AD}"] {
            // Inside the cert (a break opportunity), around '=' and at both ends of the line.
            let damaged = invisible + Self.obfs4A.replacingOccurrences(of: cert, with: String(cert.prefix(30)) + invisible + String(cert.dropFirst(30)))
                .replacingOccurrences(of: "iat-mode=", with: "iat-mode" + invisible + "=") + invisible
            let paste = BridgePaste.parse("Hello\n" + damaged + "\n")
            #expect(paste.lines == [expected] && paste.rejected.isEmpty, "U+\(String(invisible.unicodeScalars.first!.value, radix: 16))")
        }
        for space in ["\u{00A0}", "\u{202F}", "\u{2009}", "\u{3000}"] {
            let paste = BridgePaste.parse(Self.obfs4A.replacingOccurrences(of: " ", with: space))
            #expect(paste.lines == [expected], "U+\(String(space.unicodeScalars.first!.value, radix: 16))")
        }
        let separated = BridgePaste.parse(Self.obfs4A + "\u{2028}" + Self.obfs4B + "\u{2029}" + Self.webtunnel)
        #expect(separated.lines.count == 3 && separated.accepted.map(\.location.line) == [1, 2, 3])
    }

    /// Bidirectional controls can change what the reader sees, not what is stored: an override
    /// before the address would show one bridge and store another. Direction marks and
    /// left-to-right or first-strong controls at a word's edge (as messengers put them around text
    /// in a right-to-left chat) go; inside a word they stay and the line is refused; the
    /// right-to-left embedding, override and isolate are refused anywhere.
    @Test func bidirectionalControlsNeverMakeTheShownAndStoredLinesDiffer() throws {
        let expected = try BridgeLine(validating: Self.obfs4A)
        func name(_ control: String) -> String { "U+\(String(control.unicodeScalars.first!.value, radix: 16))" }
        for control in ["\u{200E}", "\u{200F}", "\u{061C}", "\u{202A}", "\u{202C}", "\u{202D}", "\u{2066}", "\u{2068}", "\u{2069}"] {
            let edges = control + Self.obfs4A.replacingOccurrences(of: " ", with: " " + control) + control
            let paste = BridgePaste.parse(edges)
            #expect(paste.lines == [expected] && paste.rejected.isEmpty, "\(name(control)) at word edges")
            let inside = Self.obfs4A.replacingOccurrences(of: "cert=AAEC", with: "cert=AA" + control + "EC")
            #expect(BridgePaste.parse(inside).accepted.isEmpty, "\(name(control)) inside the cert")
        }
        // A whole line in a left-to-right isolate, as a messenger sends it: read.
        #expect(BridgePaste.parse("\u{2066}" + Self.obfs4A + "\u{2069}").lines == [expected])
        let address = try #require(Self.obfs4A.split(separator: " ").dropFirst().first.map(String.init))
        for control in ["\u{202B}", "\u{202E}", "\u{2067}"] {
            for damaged in [Self.obfs4A.replacingOccurrences(of: address, with: control + address),
                            Self.obfs4A.replacingOccurrences(of: address, with: control + " " + address),
                            control + Self.obfs4A + "\u{202C}\u{2069}"] {
                let paste = BridgePaste.parse(damaged)
                #expect(paste.accepted.isEmpty && !paste.rejected.isEmpty, "\(name(control)) was removed: \(paste.lines)")
            }
        }
    }

    @Test func visibleLookAlikesAreStillRejected() throws {
        // A Cyrillic 'о' in the cert is text, not decoration: it stays and the line is refused.
        let paste = BridgePaste.parse(Self.obfs4A.replacingOccurrences(of: "cert=AAEC", with: "cert=AAE\u{0421}"))
        #expect(paste.accepted.isEmpty && paste.rejected.map(\.code) == [.badCharacter])
    }

    // MARK: Item 14: HTML source

    @Test func markupSeparatesLinesAndIsNeverAnArgument() throws {
        let page = "<html><body><p>\(Self.obfs4A)<br>\(Self.obfs4B)<br/>\(Self.webtunnel)</p></body></html>"
        let paste = BridgePaste.parse(page)
        #expect(paste.rejected.isEmpty)
        #expect(paste.lines.map(\.description) == [Self.obfs4A, Self.obfs4B, Self.webtunnel])
        #expect(paste.lines.last?.arguments["ver"] == "0.0.1")

        // A head with a style and a script, a comment, block and inline tags in any case: what a
        // reader sees is two lines, each on the physical line it starts on.
        let message = """
            <!DOCTYPE html><HTML><head><style type="text/css">p > b { margin: 0 }</style>
            <script>var x = "<p>obfs4 192.0.2.99:443</p>";</script></head><body>
            <!-- <p>\(Self.obfs4B)</p> -->
            <DIV class="bridges"><B>\(Self.obfs4A)</B></DIV><div>\(Self.webtunnel)</div>
            </body></HTML>
            """
        let read = BridgePaste.parse(message)
        #expect(read.rejected.isEmpty)
        #expect(read.accepted.map(\.line.description) == [Self.obfs4A, Self.webtunnel])
        #expect(read.accepted.map(\.location.line) == [4, 4])
    }

    @Test func entitiesAreReadOnlyInHTML() throws {
        let url = "url=https://example.org/4f2a9c7e1b3d5f60?a=1&amp;b=2"
        let line = Self.webtunnel.replacingOccurrences(of: "url=https://example.org/4f2a9c7e1b3d5f60", with: url)
        let html = BridgePaste.parse("<div>" + line.replacingOccurrences(of: " ", with: "&nbsp;") + "</div>")
        #expect(html.lines.first?.arguments["url"] == "https://example.org/4f2a9c7e1b3d5f60?a=1&b=2")
        // Without a tag the paste is plain text: what was pasted is what is read.
        let plain = BridgePaste.parse(line)
        #expect(plain.lines.first?.arguments["url"] == "https://example.org/4f2a9c7e1b3d5f60?a=1&amp;b=2")
    }

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
