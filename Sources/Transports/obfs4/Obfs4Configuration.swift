import Foundation
import TransportBase

/// The sender behaviour a bridge advertises with `iat-mode` (spec §9): 0 none, 1 enabled, 2 paranoid.
public struct Obfs4IATMode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public static let none = Obfs4IATMode(rawValue: 0)
    public static let enabled = Obfs4IATMode(rawValue: 1)
    public static let paranoid = Obfs4IATMode(rawValue: 2)
    private init(rawValue: Int) { self.rawValue = rawValue }

    public init(parsing text: String) throws(TransportError) {
        switch text {
        case "0": self = .none
        case "1": self = .enabled
        case "2": self = .paranoid
        default:
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "iat-mode: must be 0, 1 or 2")
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

    /// Parses `cert=…;iat-mode=N` (or the legacy `node-id=…;public-key=…;iat-mode=N`).
    ///
    /// Error messages name the argument and the reason, never the value.
    public init(arguments: TransportArguments) throws(TransportError) {
        func invalid(_ message: String) -> TransportError {
            TransportError(code: .invalidArguments, kind: .invalidInput, message: message)
        }
        guard let iatText = arguments["iat-mode"] else { throw invalid("iat-mode: missing (it is required)") }
        iatMode = try Obfs4IATMode(parsing: iatText)
        if let cert = arguments["cert"] {
            identity = try Self.parseCert(cert)
        } else if let nodeIDText = arguments["node-id"], let publicKeyText = arguments["public-key"] {
            guard let nodeID = Self.decodeHex(nodeIDText), nodeID.count == 20 else {
                throw invalid("node-id: must be 40 hexadecimal characters")
            }
            guard let publicKey = Self.decodeHex(publicKeyText), publicKey.count == 32 else {
                throw invalid("public-key: must be 64 hexadecimal characters")
            }
            identity = try Obfs4ServerIdentity(nodeID: nodeID, publicKey: publicKey)
        } else {
            throw invalid("cert: missing (or give both node-id and public-key)")
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

    static func parseCert(_ text: String) throws(TransportError) -> Obfs4ServerIdentity {
        func invalid(_ reason: String) -> TransportError {
            TransportError(code: .invalidArguments, kind: .invalidInput, message: "cert: \(reason)")
        }
        var body = Substring(text)
        while body.hasSuffix("=") { body = body.dropLast() }
        let alphabetOK = body.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2B || byte == 0x2F
        }
        guard alphabetOK else { throw invalid("contains characters outside the base64 alphabet") }
        guard body.utf8.count == 70 else { throw invalid("must be 70 base64 characters, found \(body.utf8.count)") }
        guard let decoded = Data(base64Encoded: String(body) + "=="), decoded.count == 52 else {
            throw invalid("does not decode to 52 bytes")
        }
        let bytes = [UInt8](decoded)
        return try Obfs4ServerIdentity(nodeID: Array(bytes[0..<20]), publicKey: Array(bytes[20..<52]))
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
