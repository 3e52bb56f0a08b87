import BridgeConfig
import BridgeQR
import PosternLinkSpec
import Testing

/// `postern bridges export --format qr` without the CLI: the picture, and the error that says
/// what to do when the bridges do not fit.
@Suite("Bridges exported as a QR code")
struct ExportTextTests {
    static func obfs4(_ octet: Int) throws -> BridgeLine {
        try BridgeLine(validating: "obfs4 198.51.100.\(octet):443 0123456789ABCDEF0123456789ABCDEF01234567 cert=\(QRCodeTests.cert) iat-mode=0",
                       rules: .syntaxOnly)
    }

    @Test func theTextIsTheCodesTerminalPicture() throws {
        let lines = [try Self.obfs4(1), try Self.obfs4(2)]
        #expect(try QRCode.exportText(bridgeLines: lines) == QRCode(bridgeLines: lines).terminalText())
    }

    @Test func tooManyBridgesSayToExportFewer() throws {
        let lines = try (1...30).map { try Self.obfs4($0) }
        do throws(QRCodeError) {
            _ = try QRCode.exportText(bridgeLines: lines)
            Issue.record("30 bridges fit in one QR code")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(error.message.hasPrefix("30 bridges do not fit in one QR code ("))
            #expect(error.message.hasSuffix("); export fewer by giving their IDs"))
        }
    }
}
