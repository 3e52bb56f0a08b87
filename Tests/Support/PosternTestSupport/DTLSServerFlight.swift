import Foundation

/// The fields of a DTLS 1.2 server's first flight that docs/FINGERPRINTS.md compares between
/// browsers and Postern ("DTLS server flight"), read from the datagrams the server sent: the
/// plaintext (epoch 0) handshake records, their fragments reassembled per message_seq (RFC 6347
/// section 4.2.2; DTLS 1.3's encrypted records are skipped), then ServerHello, Certificate (the leaf's X.509 fields), ServerKeyExchange and
/// CertificateRequest.
///
/// Input is whatever a peer sent, so every length is checked before use, and at most
/// `byteLimit` bytes of handshake messages are assembled; anything malformed is a thrown
/// `DTLSFlightError`, never a trap.
public struct DTLSServerFlight: Sendable {
    public var helloVerifyRequest = false
    public var serverHelloVersion: UInt16 = 0
    public var sessionIDLength = 0
    public var cipherSuite: UInt16 = 0
    public var extensions: [UInt16] = []
    public var pointFormats: [UInt8]?
    public var srtpProfile: UInt16?
    public var keyExchangeGroup: UInt16?
    public var keyExchangeSignatureScheme: UInt16?
    public var certificateTypes: [UInt8]?
    public var certificateRequestSchemes: [UInt16]?
    public var certificate: CertificateFields?

    /// A leaf certificate's shape.
    public struct CertificateFields: Sendable {
        public var derCount = 0
        public var serialCount = 0
        public var issuerEqualsSubject = false
        public var subjectCommonName: String?
        public var notBefore: Date?
        public var notAfter: Date?
        /// OIDs in dotted form.
        public var publicKeyAlgorithm = ""
        public var publicKeyCurve = ""
        public var signatureAlgorithm = ""
        public var hasExtensions = false
    }

    public static let byteLimit = 64 * 1024

    public struct DTLSFlightError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public init(datagrams: [[UInt8]]) throws {
        var messages: [UInt16: (type: UInt8, length: Int, body: [UInt8], filled: Int)] = [:]
        var assembled = 0
        for datagram in datagrams {
            var reader = ByteReader(datagram)
            while reader.remaining > 0 {
                let contentType = try reader.u8()
                if contentType & 0xe0 == 0x20 {
                    // A DTLS 1.3 ciphertext record's unified header (RFC 9147 section 4): no
                    // connection ID here, an 8- or 16-bit sequence number, a length or the rest.
                    guard contentType & 0x10 == 0 else { throw DTLSFlightError("a connection ID, which WebRTC does not use") }
                    _ = try reader.bytes(contentType & 0x08 != 0 ? 2 : 1)
                    _ = try reader.bytes(contentType & 0x04 != 0 ? Int(try reader.u16()) : reader.remaining)
                    continue
                }
                _ = try reader.u16()  // record version
                let epoch = try reader.u16()
                _ = try reader.bytes(6)  // sequence number
                let record = try reader.bytes(Int(try reader.u16()))
                guard contentType == 22, epoch == 0 else { continue }
                var fragments = ByteReader(record)
                while fragments.remaining > 0 {
                    let type = try fragments.u8()
                    let length = try fragments.u24()
                    let sequence = try fragments.u16()
                    let offset = try fragments.u24()
                    let fragment = try fragments.bytes(try fragments.u24())
                    guard length <= Self.byteLimit, offset <= length, fragment.count <= length - offset else {
                        throw DTLSFlightError("a handshake fragment lies outside its message")
                    }
                    var message = messages[sequence] ?? (type, length, [UInt8](repeating: 0, count: length), 0)
                    guard message.type == type, message.length == length else {
                        throw DTLSFlightError("fragments of message \(sequence) disagree")
                    }
                    assembled += fragment.count
                    guard assembled <= Self.byteLimit else { throw DTLSFlightError("more than \(Self.byteLimit) handshake bytes") }
                    message.body.replaceSubrange(offset..<(offset + fragment.count), with: fragment)
                    message.filled += fragment.count
                    messages[sequence] = message
                }
            }
        }
        for sequence in messages.keys.sorted() {
            guard let message = messages[sequence] else { continue }
            switch message.type {
            case 3: helloVerifyRequest = true
            case 2: try readServerHello(message.body)
            case 11: try readCertificate(message.body)
            case 12: try readServerKeyExchange(message.body)
            case 13: try readCertificateRequest(message.body)
            default: break
            }
        }
    }

    private mutating func readServerHello(_ body: [UInt8]) throws {
        var reader = ByteReader(body)
        serverHelloVersion = try reader.u16()
        _ = try reader.bytes(32)
        sessionIDLength = try reader.bytes(Int(try reader.u8())).count
        cipherSuite = try reader.u16()
        _ = try reader.u8()  // compression
        guard reader.remaining > 0 else { return }
        var list = ByteReader(try reader.bytes(Int(try reader.u16())))
        while list.remaining > 0 {
            let type = try list.u16()
            let data = try list.bytes(Int(try list.u16()))
            extensions.append(type)
            var field = ByteReader(data)
            switch type {
            case 0x000b: pointFormats = try field.bytes(Int(try field.u8()))
            case 0x000e:
                let profiles = try field.bytes(Int(try field.u16()))
                if profiles.count == 2 { srtpProfile = UInt16(profiles[0]) << 8 | UInt16(profiles[1]) }
            default: break
            }
        }
    }

    private mutating func readCertificate(_ body: [UInt8]) throws {
        var reader = ByteReader(body)
        var list = ByteReader(try reader.bytes(try reader.u24()))
        guard list.remaining > 0 else { return }
        certificate = try Self.certificateFields(try list.bytes(try list.u24()))
    }

    private mutating func readServerKeyExchange(_ body: [UInt8]) throws {
        var reader = ByteReader(body)
        guard try reader.u8() == 3 else { return }  // named_curve
        keyExchangeGroup = try reader.u16()
        _ = try reader.bytes(Int(try reader.u8()))  // the public point
        keyExchangeSignatureScheme = try reader.u16()
    }

    private mutating func readCertificateRequest(_ body: [UInt8]) throws {
        var reader = ByteReader(body)
        certificateTypes = try reader.bytes(Int(try reader.u8()))
        var schemes = ByteReader(try reader.bytes(Int(try reader.u16())))
        var list: [UInt16] = []
        while schemes.remaining >= 2 { list.append(try schemes.u16()) }
        certificateRequestSchemes = list
    }

    /// X.509 (RFC 5280 section 4.1) as far as the comparison needs it.
    public static func certificateFields(_ der: [UInt8]) throws -> CertificateFields {
        var fields = CertificateFields()
        fields.derCount = der.count
        var outer = DERReader(der)
        var certificate = try outer.enter(0x30)
        var tbs = try certificate.enter(0x30)
        if tbs.peekTag == 0xa0 { _ = try tbs.element(0xa0) }
        fields.serialCount = try tbs.element(0x02).count
        _ = try tbs.element(0x30)  // signature algorithm (repeated outside)
        let issuer = try tbs.element(0x30)
        var validity = try tbs.enter(0x30)
        fields.notBefore = Self.time(try validity.anyElement())
        fields.notAfter = Self.time(try validity.anyElement())
        let subject = try tbs.element(0x30)
        fields.issuerEqualsSubject = issuer == subject
        fields.subjectCommonName = try Self.commonName(subject)
        var spki = try tbs.enter(0x30)
        var algorithm = try spki.enter(0x30)
        fields.publicKeyAlgorithm = Self.dotted(try algorithm.element(0x06))
        if algorithm.remaining > 0, algorithm.peekTag == 0x06 { fields.publicKeyCurve = Self.dotted(try algorithm.element(0x06)) }
        while tbs.remaining > 0 {
            let (tag, _) = try tbs.anyElement()
            if tag == 0xa3 { fields.hasExtensions = true }
        }
        var signature = try certificate.enter(0x30)
        fields.signatureAlgorithm = Self.dotted(try signature.element(0x06))
        return fields
    }

    static func commonName(_ name: [UInt8]) throws -> String? {
        var sets = DERReader(name)
        while sets.remaining > 0 {
            var set = try sets.enter(0x31)
            while set.remaining > 0 {
                var attribute = try set.enter(0x30)
                let oid = try attribute.element(0x06)
                let (_, value) = try attribute.anyElement()
                if oid == [0x55, 0x04, 0x03] { return String(decoding: value, as: UTF8.self) }
            }
        }
        return nil
    }

    static func time(_ element: (tag: UInt8, value: [UInt8])) -> Date? {
        let text = String(decoding: element.value, as: UTF8.self)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = element.tag == 0x17 ? "yyMMddHHmmss'Z'" : "yyyyMMddHHmmss'Z'"
        return formatter.date(from: text)
    }

    static func dotted(_ oid: [UInt8]) -> String {
        guard let first = oid.first else { return "" }
        var parts = [Int(first) / 40, Int(first) % 40]
        var value = 0
        for byte in oid.dropFirst() {
            value = value << 7 | Int(byte & 0x7f)
            if value > 1 << 40 { return "" }
            if byte & 0x80 == 0 { parts.append(value); value = 0 }
        }
        return parts.map(String.init).joined(separator: ".")
    }
}

/// Big-endian fields with bounds checks.
struct ByteReader {
    private let bytes: [UInt8]
    private var index = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var remaining: Int { bytes.count - index }

    mutating func bytes(_ count: Int) throws -> [UInt8] {
        guard count >= 0, count <= remaining else { throw DTLSServerFlight.DTLSFlightError("a field runs past its end") }
        defer { index += count }
        return Array(bytes[index..<(index + count)])
    }

    mutating func u8() throws -> UInt8 { try bytes(1)[0] }
    mutating func u16() throws -> UInt16 { let b = try bytes(2); return UInt16(b[0]) << 8 | UInt16(b[1]) }
    mutating func u24() throws -> Int { let b = try bytes(3); return Int(b[0]) << 16 | Int(b[1]) << 8 | Int(b[2]) }
}

/// DER tag-length-value elements (definite lengths up to 4 bytes).
struct DERReader {
    private var reader: ByteReader
    private var peeked: [UInt8]
    init(_ bytes: [UInt8]) { reader = ByteReader(bytes); peeked = bytes }
    var remaining: Int { reader.remaining }
    var peekTag: UInt8? { remaining > 0 ? peeked[peeked.count - remaining] : nil }

    mutating func anyElement() throws -> (tag: UInt8, value: [UInt8]) {
        let tag = try reader.u8()
        var length = Int(try reader.u8())
        if length & 0x80 != 0 {
            let count = length & 0x7f
            guard (1...4).contains(count) else { throw DTLSServerFlight.DTLSFlightError("an unsupported DER length") }
            length = 0
            for byte in try reader.bytes(count) { length = length << 8 | Int(byte) }
        }
        return (tag, try reader.bytes(length))
    }

    mutating func element(_ tag: UInt8) throws -> [UInt8] {
        let (found, value) = try anyElement()
        guard found == tag else { throw DTLSServerFlight.DTLSFlightError("DER tag \(found), expected \(tag)") }
        return value
    }

    mutating func enter(_ tag: UInt8) throws -> DERReader { DERReader(try element(tag)) }
}
