import PosternLinkSpec
import PosternSystem

extension QRCode {
    /// `postern bridges export --format qr`: the lines' QR code as ``terminalText(margin:)``. The
    /// error says what to do: too many bridges for one symbol means exporting fewer by ID.
    public static func exportText(bridgeLines lines: [BridgeLine]) throws(QRCodeError) -> String {
        do throws(QRCodeError) {
            return try QRCode(bridgeLines: lines).terminalText()
        } catch where error.code == .tooLarge {
            throw QRCodeError(error.code, kind: error.kind,
                              "\(PlainText.counted(lines.count, "bridge")) do not fit in one QR code (\(error.message)); export fewer by giving their IDs")
        } catch {
            throw QRCodeError(error.code, kind: error.kind, "cannot make the QR code: \(error.message)")
        }
    }
}
