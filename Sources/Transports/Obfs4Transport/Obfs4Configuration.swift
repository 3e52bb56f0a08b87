import Foundation
import PosternLinkSpec
import TransportBase

/// The sender behaviour a bridge advertises with `iat-mode` (spec §9): 0 none, 1 enabled, 2 paranoid.
public struct Obfs4IATMode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public static let none = Obfs4IATMode(rawValue: 0)
    public static let enabled = Obfs4IATMode(rawValue: 1)
    public static let paranoid = Obfs4IATMode(rawValue: 2)
    private init(rawValue: Int) { self.rawValue = rawValue }

    /// `0`, `1` or `2` exactly, as a bridge line writes it; nil for anything else.
    init?(exactly text: String) {
        switch text {
        case "0": self = .none
        case "1": self = .enabled
        case "2": self = .paranoid
        default: return nil
        }
    }

    public var description: String { String(rawValue) }
}

/// One obfs4 bridge's validated arguments.
public struct Obfs4BridgeConfiguration: Sendable, Hashable {
    public let identity: Obfs4ServerIdentity
    public let iatMode: Obfs4IATMode

    public init(identity: Obfs4ServerIdentity, iatMode: Obfs4IATMode) {
        self.identity = identity
        self.iatMode = iatMode
    }

    /// Parses `cert=…;iat-mode=N` (or the legacy `node-id=…;public-key=…;iat-mode=N`) by
    /// `Obfs4ArgumentRules`, the same rules bridge lines are checked with. A repeated key keeps its
    /// first value, as lyrebird reads tor's arguments.
    ///
    /// Error messages name the argument and the reason, never the value.
    public init(arguments: TransportArguments) throws(TransportError) {
        var review = BridgeArgumentReview(transport: Obfs4ArgumentRules().transport,
                                          arguments: BridgeArguments(keepingFirstOf: arguments.pairs.map { (key: $0.key, value: $0.value) }))
        do {
            self = try Obfs4ArgumentRules.configuration(&review)
        } catch {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: error.description)
        }
    }

    /// The bridge-line form: `cert=<70 chars>` (base64 of NODEID | B without `==`).
    public var certArgument: String {
        String(Data(identity.nodeID + identity.publicKey).base64EncodedString().dropLast(2))
    }

    /// The arguments tor would pass for this bridge.
    public var arguments: TransportArguments {
        TransportArguments(["cert": certArgument, "iat-mode": iatMode.description])
    }

    static func decodeHex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }
}
