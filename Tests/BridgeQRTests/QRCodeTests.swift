import BridgeConfig
import BridgeQR
import PosternLinkSpec
import Testing

/// BridgeQR without the CLI: the symbol libqrencode makes, the bridges' JSON content, the terminal
/// picture. (Tests/CLITests compares the picture with Debian's qrencode and decodes it with zbarimg.)
@Suite("Bridges as a QR code")
struct QRCodeTests {
    static let cert = "AAECAwQFBgcICQoLDA0ODxAREhPnmmF6TXg47PsvuX+k3kiOrk4wS+mRZ2wWxVv1Yq4kJA"
    static let obfs4 = "obfs4 198.51.100.7:443 0123456789ABCDEF0123456789ABCDEF01234567 cert=\(cert) iat-mode=0"

    /// A short text is a version 1 symbol (21 modules): finder patterns in three corners, none in
    /// the fourth, and the timing pattern alternating between them.
    @Test func aShortTextIsAVersionOneSymbolWithItsFixedPatterns() throws {
        let code = try QRCode(encoding: "postern")
        #expect(code.width == 21)
        #expect(code.modules.count == 21 * 21)
        for (originX, originY) in [(0, 0), (14, 0), (0, 14)] {
            for y in 0..<7 {
                for x in 0..<7 {
                    let ring = x == 0 || y == 0 || x == 6 || y == 6
                    let core = (2...4).contains(x) && (2...4).contains(y)
                    #expect(code.isDark(x: originX + x, y: originY + y) == (ring || core), "finder at \(originX),\(originY): \(x),\(y)")
                }
            }
        }
        #expect((8...12).map { code.isDark(x: $0, y: 6) } == [true, false, true, false, true])
        #expect((8...12).map { code.isDark(x: 6, y: $0) } == [true, false, true, false, true])
        #expect(!code.isDark(x: -1, y: 0) && !code.isDark(x: 21, y: 0))
    }

    /// The content is the JSON array bridges.torproject.org shares (slashes not escaped, so the
    /// cert reads as it is), and a paste of it gives the same lines back.
    @Test func bridgeLinesBecomeTheJSONArrayThatPastesBack() throws {
        let lines = [try BridgeLine(validating: Self.obfs4, rules: .syntaxOnly), try BridgeLine(validating: "192.0.2.1:9001", rules: .syntaxOnly)]
        let content = QRCode.content(of: lines)
        #expect(content == #"["\#(Self.obfs4)","192.0.2.1:9001"]"#)
        #expect(BridgePaste.parse(content, rules: .syntaxOnly).lines == lines)
        let code = try QRCode(bridgeLines: lines)
        #expect(code == (try QRCode(encoding: content)))
        #expect(code.width > 21)
    }

    @Test func tooMuchTextIsATypedError() {
        do throws(QRCodeError) {
            _ = try QRCode(encoding: String(repeating: "x", count: 3000))
            Issue.record("3000 bytes made a QR code")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(error.message == "3000 bytes do not fit in one QR code")
        }
    }

    /// Two module rows per line, inside a light quiet zone of `margin` modules (drawn as full blocks).
    @Test func theTerminalPictureHasItsQuietZone() throws {
        let code = try QRCode(encoding: "postern")
        let lines = code.terminalText(margin: 4).split(separator: "\n").map(String.init)
        #expect(lines.count == (21 + 8 + 1) / 2)
        #expect(lines.allSatisfy { $0.count == 29 })
        #expect(lines[0] == String(repeating: "\u{2588}", count: 29) && lines[1] == lines[0])
        // Picture rows 4 and 5 are the finder's rows 0 (all dark) and 1 (dark ends, light inside):
        // blank, then lower half blocks, then blank, after the four light margin modules.
        #expect(lines[2].hasPrefix(String(repeating: "\u{2588}", count: 4) + " " + String(repeating: "\u{2584}", count: 5) + " "))
    }
}
