internal import CQREncode
import Foundation

/// Why a QR code could not be made.
struct QRCodeError: Error, CustomStringConvertible {
    struct Code: Hashable, Sendable {
        let rawValue: String
        static let tooLarge = Code(rawValue: "too-large")
        static let invalidInput = Code(rawValue: "invalid-input")
        static let outOfMemory = Code(rawValue: "out-of-memory")
        static let failed = Code(rawValue: "failed")
    }
    let code: Code
    let message: String
    var description: String { message }
}

/// A QR code symbol: the module matrix libqrencode made for a text (byte-mode hint, error correction
/// level L, smallest version that fits), copied into Swift so no C memory outlives `init`.
struct QRCode: Sendable {
    /// Modules per side.
    let width: Int
    /// Row-major; true is a dark module.
    let modules: [Bool]

    init(encoding text: String) throws(QRCodeError) {
        let symbol = try QRSymbolHandle.encode(text)
        width = symbol.width
        modules = symbol.modules()
    }

    func isDark(x: Int, y: Int) -> Bool {
        x >= 0 && y >= 0 && x < width && y < width && modules[y * width + x]
    }

    /// Text for a terminal, two module rows per line with Unicode half blocks, the same picture as
    /// `qrencode -t UTF8`: light modules are drawn (terminals are mostly light text on dark), dark
    /// ones are blank, and a light quiet zone of `margin` modules surrounds the symbol.
    func terminalText(margin: Int = 4) -> String {
        let side = width + 2 * margin
        func isLight(_ x: Int, _ y: Int) -> Bool { y >= side || !isDark(x: x - margin, y: y - margin) }
        var lines: [String] = []
        for y in stride(from: 0, to: side, by: 2) {
            var line = ""
            for x in 0..<side {
                switch (isLight(x, y), isLight(x, y + 1)) {
                case (true, true): line += "\u{2588}"
                case (true, false): line += "\u{2580}"
                case (false, true): line += "\u{2584}"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

/// The one owner of a libqrencode `QRcode`; frees it on deinit.
private final class QRSymbolHandle {
    private let pointer: UnsafeMutablePointer<QRcode>

    private init(_ pointer: UnsafeMutablePointer<QRcode>) { self.pointer = pointer }
    deinit { QRcode_free(pointer) }

    /// `QRcode_encodeString`, checked: NULL becomes a typed error from errno.
    static func encode(_ text: String) throws(QRCodeError) -> QRSymbolHandle {
        errno = 0
        guard let pointer = text.withCString({ QRcode_encodeString($0, 0, QR_ECLEVEL_L, QR_MODE_8, 1) }) else {
            switch errno {
            case ERANGE:
                throw QRCodeError(code: .tooLarge, message: "\(text.utf8.count) bytes do not fit in one QR code")
            case EINVAL:
                throw QRCodeError(code: .invalidInput, message: "libqrencode rejected the input")
            case ENOMEM:
                throw QRCodeError(code: .outOfMemory, message: "out of memory while making the QR code")
            default:
                throw QRCodeError(code: .failed, message: "libqrencode failed (\(String(cString: strerror(errno))))")
            }
        }
        return QRSymbolHandle(pointer)
    }

    var width: Int { Int(pointer.pointee.width) }

    /// Bit 0 of each byte is the module colour (1 = dark); the other bits are libqrencode's notes.
    func modules() -> [Bool] {
        let count = width * width
        return (0..<count).map { pointer.pointee.data[$0] & 1 == 1 }
    }
}
