internal import CQREncode
import Foundation
import PosternLinkSpec
import PosternSystem

/// Why a QR code could not be made. The shape of every public Postern error (``CodedError``).
public typealias QRCodeError = CodedError<QRCodeErrorDomain>

public enum QRCodeErrorDomain: ErrorDomain {
    public static var defaultKind: QRCodeError.Kind { .failure }
}

extension QRCodeError.Code {
    /// The text does not fit in one symbol (version 40 at level L holds 2953 bytes).
    public static let tooLarge = Self("too-large")
    public static let invalidInput = Self("invalid-input")
    public static let outOfMemory = Self("out-of-memory")
    public static let failed = Self("failed")
}

extension QRCodeError.Kind {
    public static let failure = Self("failure")
}

/// A QR code symbol: the module matrix libqrencode made for a text (byte-mode hint, error correction
/// level L, smallest version that fits), copied into Swift so no C memory outlives `init`.
public struct QRCode: Hashable, Sendable {
    /// Modules per side.
    public let width: Int
    /// Row-major; true is a dark module.
    public let modules: [Bool]

    public init(encoding text: String) throws(QRCodeError) {
        let symbol = try QRSymbolHandle.encode(text)
        width = symbol.width
        modules = symbol.modules()
    }

    /// Bridge lines as bridges.torproject.org puts them in its QR codes: a JSON array of the full
    /// lines (addresses, fingerprints and certs in the clear: a QR code is for sharing them), which
    /// `BridgePaste` reads back.
    public init(bridgeLines lines: [BridgeLine]) throws(QRCodeError) {
        try self.init(encoding: Self.content(of: lines))
    }

    /// The text ``init(bridgeLines:)`` encodes: `["obfs4 ...","obfs4 ..."]`, slashes unescaped.
    public static func content(of lines: [BridgeLine]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        // Encoding an array of strings cannot fail.
        return String(decoding: (try? encoder.encode(lines.map(\.description))) ?? Data("[]".utf8), as: UTF8.self)
    }

    public func isDark(x: Int, y: Int) -> Bool {
        x >= 0 && y >= 0 && x < width && y < width && modules[y * width + x]
    }

    /// Text for a terminal, two module rows per line with Unicode half blocks, the same picture as
    /// `qrencode -t UTF8`: light modules are drawn (terminals are mostly light text on dark), dark
    /// ones are blank, and a light quiet zone of `margin` modules surrounds the symbol.
    public func terminalText(margin: Int = 4) -> String {
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
                throw QRCodeError(.tooLarge, "\(text.utf8.count) bytes do not fit in one QR code")
            case EINVAL:
                throw QRCodeError(.invalidInput, "libqrencode rejected the input")
            case ENOMEM:
                throw QRCodeError(.outOfMemory, "out of memory while making the QR code")
            default:
                throw QRCodeError(.failed, "libqrencode failed (\(String(cString: strerror(errno))))")
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
