internal import COpenSSL
import PosternSystem
import TransportBase

/// The fields of a TLS ClientHello that fingerprinting looks at, and its JA4 and JA3, read from
/// the bytes a client sends first (one or more TLS handshake records).
///
/// JA4 follows FoxIO's public JA4 specification (JA4_a, then the truncated SHA-256 of the sorted
/// cipher suites, then of the sorted extensions without SNI and ALPN plus the signature
/// algorithms in order); GREASE values are left out of every part. JA3 is the classic
/// "version,ciphers,extensions,groups,point formats" string and its MD5. The same computation as
/// scripts/tls-research/ja4.py, which the tests compare it with.
public struct ClientHelloFingerprint: Sendable, Hashable {
    public let legacyVersion: UInt16
    public let cipherSuites: [UInt16]
    /// Extension types in wire order.
    public let extensions: [UInt16]
    public let supportedVersions: [UInt16]
    public let groups: [UInt16]
    public let signatureAlgorithms: [UInt16]
    public let pointFormats: [UInt8]
    public let applicationProtocols: [String]
    /// (group, key length) of each key share.
    public let keyShares: [KeyShare]
    public let hasServerName: Bool
    /// The host_name in server_name (SNI): the name a censor reads, the front when fronting.
    public let serverName: String?
    /// legacy_session_id's length (32 in TLS 1.3 compatibility mode, 0 without).
    public let sessionIDLength: Int
    /// legacy_compression_methods (only null, [0], in any client of this decade).
    public let compressionMethods: [UInt8]
    /// record_size_limit's value; nil when the extension is absent.
    public let recordSizeLimit: UInt16?
    /// compress_certificate's algorithms (1 zlib, 2 brotli, 3 zstd); empty when absent.
    public let certificateCompressionAlgorithms: [UInt16]
    /// The ticket identities pre_shared_key offers, in order (empty in a first hello): opaque bytes
    /// the server issued, sent in clear, so a hello that resumes can be told from another one.
    public let preSharedKeyIdentities: [[UInt8]]
    /// The ClientHello message's length in bytes, its 4-byte header included.
    public let length: Int

    public struct KeyShare: Sendable, Hashable {
        public let group: UInt16
        public let length: Int
    }

    /// Bytes of handshake records read at most: a hello larger than this is refused.
    public static let byteLimit = 64 * 1024

    public static func isGREASE(_ value: UInt16) -> Bool { value & 0x0f0f == 0x0a0a && value >> 8 == value & 0xff }

    /// Reads the ClientHello at the start of `records`; throws `invalid-client-hello` when the
    /// bytes are not one (truncated, not a handshake, another message, lengths that do not add up).
    public init(records: [UInt8]) throws(TransportError) {
        var handshake: [UInt8] = []
        var records = ByteReader(records)
        while !records.isAtEnd, handshake.count < Self.byteLimit {
            guard try records.u8() == 22 else { break }
            _ = try records.u16()
            handshake += try records.bytes(Int(try records.u16()))
            if handshake.count >= 4 {
                let needed = 4 + (Int(handshake[1]) << 16 | Int(handshake[2]) << 8 | Int(handshake[3]))
                if handshake.count >= needed { break }
            }
        }
        var message = ByteReader(handshake)
        guard try message.u8() == 1 else { throw ByteReader.invalid("the first handshake message is not a ClientHello") }
        let helloBytes = try message.bytes(Int(try message.u24()))
        length = 4 + helloBytes.count
        var hello = ByteReader(helloBytes)
        legacyVersion = try hello.u16()
        _ = try hello.bytes(32)
        sessionIDLength = try hello.bytes(Int(try hello.u8())).count
        cipherSuites = try hello.u16List(byteCount: Int(try hello.u16()))
        compressionMethods = try hello.bytes(Int(try hello.u8()))
        var types: [UInt16] = [], versions: [UInt16] = [], groups: [UInt16] = [], signatures: [UInt16] = []
        var formats: [UInt8] = [], protocols: [String] = [], shares: [KeyShare] = [], name: String?
        var sizeLimit: UInt16?, compression: [UInt16] = [], identities: [[UInt8]] = []
        if !hello.isAtEnd {
            var list = ByteReader(try hello.bytes(Int(try hello.u16())))
            while !list.isAtEnd {
                let type = try list.u16()
                var body = ByteReader(try list.bytes(Int(try list.u16())))
                types.append(type)
                switch type {
                case 0:
                    var names = ByteReader(try body.bytes(Int(try body.u16())))
                    while !names.isAtEnd {
                        let nameType = try names.u8()
                        let value = try names.bytes(Int(try names.u16()))
                        if nameType == 0, name == nil { name = String(decoding: value, as: UTF8.self) }
                    }
                case 43: versions = try body.u16List(byteCount: Int(try body.u8()))
                case 10: groups = try body.u16List(byteCount: Int(try body.u16()))
                case 13: signatures = try body.u16List(byteCount: Int(try body.u16()))
                case 11: formats = try body.bytes(Int(try body.u8()))
                case 16:
                    var names = ByteReader(try body.bytes(Int(try body.u16())))
                    while !names.isAtEnd { protocols.append(String(decoding: try names.bytes(Int(try names.u8())), as: UTF8.self)) }
                case 28: sizeLimit = try body.u16()
                case 27: compression = try body.u16List(byteCount: Int(try body.u8()))
                case 51:
                    var entries = ByteReader(try body.bytes(Int(try body.u16())))
                    while !entries.isAtEnd {
                        let group = try entries.u16()
                        shares.append(KeyShare(group: group, length: try entries.bytes(Int(try entries.u16())).count))
                    }
                case 41:
                    var offered = ByteReader(try body.bytes(Int(try body.u16())))
                    while !offered.isAtEnd {
                        identities.append(try offered.bytes(Int(try offered.u16())))
                        _ = try offered.bytes(4)  // obfuscated_ticket_age
                    }
                default: break
                }
            }
        }
        extensions = types
        supportedVersions = versions
        self.groups = groups
        signatureAlgorithms = signatures
        pointFormats = formats
        applicationProtocols = protocols
        keyShares = shares
        hasServerName = types.contains(0)
        serverName = name
        recordSizeLimit = sizeLimit
        certificateCompressionAlgorithms = compression
        preSharedKeyIdentities = identities
    }

    /// The hello a connection with `configuration` would present, made in memory with no network
    /// (``BrowserTLSStream/clientHello(for:)``); for a randomized profile, one draw.
    public init(presentedBy configuration: BrowserTLSConfiguration) throws(TransportError) {
        try self.init(records: try BrowserTLSStream.clientHello(for: configuration))
    }

    /// True when any list carries a GREASE value (RFC 8701): suites, extensions, groups, versions,
    /// signature algorithms or key shares.
    public var hasGREASE: Bool {
        (cipherSuites + extensions + groups + supportedVersions + signatureAlgorithms + keyShares.map(\.group)).contains(where: Self.isGREASE)
    }

    /// JA4's cipher part (its second field), for rules and tests that look at the suites alone.
    public var ja4CipherHash: String { String(ja4.split(separator: "_")[1]) }

    private static func hex4(_ value: UInt16) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    private static func digest(_ text: String, sha256: Bool) -> String {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let bytes = Array(text.utf8)
        _ = EVP_Digest(bytes, bytes.count, &out, &length, sha256 ? EVP_sha256() : EVP_md5(), nil)
        return out.prefix(Int(length)).map { String($0 >> 4, radix: 16) + String($0 & 0xf, radix: 16) }.joined()
    }

    /// JA4 for TLS over TCP, e.g. `t13d1616h2_86a278354501_0c27189014cf`.
    public var ja4: String {
        let suites = cipherSuites.filter { !Self.isGREASE($0) }
        let types = extensions.filter { !Self.isGREASE($0) }
        let top = supportedVersions.filter { !Self.isGREASE($0) }.max() ?? legacyVersion
        let version = [0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10", 0x0300: "s3"][Int(top)] ?? "00"
        // The first protocol's first and last characters; the first and last hex digits of its
        // bytes when either character is not an ASCII letter or digit.
        var alpn = "00"
        if let first = applicationProtocols.first.map({ Array($0.utf8) }), let head = first.first, let tail = first.last {
            func isAlphanumeric(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte) }
            if isAlphanumeric(head) && isAlphanumeric(tail) {
                alpn = String(decoding: [head, tail], as: UTF8.self)
            } else {
                alpn = String(head >> 4, radix: 16) + String(tail & 0xf, radix: 16)
            }
        }
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(min(n, 99))" }
        let a = "t\(version)\(hasServerName ? "d" : "i")\(two(suites.count))\(two(types.count))\(alpn)"
        let b = suites.isEmpty ? "000000000000" : String(Self.digest(suites.map(Self.hex4).sorted().joined(separator: ","), sha256: true).prefix(12))
        let sorted = types.filter { $0 != 0 && $0 != 16 }.map(Self.hex4).sorted().joined(separator: ",")
        let signatures = signatureAlgorithms.filter { !Self.isGREASE($0) }.map(Self.hex4).joined(separator: ",")
        let cInput = signatures.isEmpty ? sorted : sorted + "_" + signatures
        let c = types.isEmpty ? "000000000000" : String(Self.digest(cInput, sha256: true).prefix(12))
        return "\(a)_\(b)_\(c)"
    }

    /// JA3's input string: version,ciphers,extensions,groups,point formats (decimal, GREASE left out).
    public var ja3Text: String {
        func list<T: BinaryInteger>(_ values: [T]) -> String { values.map { "\($0)" }.joined(separator: "-") }
        return [String(legacyVersion), list(cipherSuites.filter { !Self.isGREASE($0) }), list(extensions.filter { !Self.isGREASE($0) }),
                list(groups.filter { !Self.isGREASE($0) }), list(pointFormats)].joined(separator: ",")
    }

    /// MD5 of ``ja3Text``.
    public var ja3: String { Self.digest(ja3Text, sha256: false) }
}

/// Bounds-checked big-endian reads over untrusted bytes: every read past the end throws.
struct ByteReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    static func invalid(_ message: String) -> TransportError {
        TransportError(code: .invalidClientHello, kind: .invalidInput, message: message)
    }

    mutating func bytes(_ count: Int) throws(TransportError) -> [UInt8] {
        guard count >= 0, count <= bytes.count - offset else { throw Self.invalid("the ClientHello is truncated") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func u8() throws(TransportError) -> UInt8 { try bytes(1)[0] }
    mutating func u16() throws(TransportError) -> UInt16 { let b = try bytes(2); return UInt16(b[0]) << 8 | UInt16(b[1]) }
    mutating func u24() throws(TransportError) -> UInt32 { let b = try bytes(3); return UInt32(b[0]) << 16 | UInt32(b[1]) << 8 | UInt32(b[2]) }

    mutating func u16List(byteCount: Int) throws(TransportError) -> [UInt16] {
        guard byteCount % 2 == 0 else { throw Self.invalid("a list of 16-bit values has an odd length") }
        var list = ByteReader(try bytes(byteCount))
        var values: [UInt16] = []
        while !list.isAtEnd { values.append(try list.u16()) }
        return values
    }
}

extension TransportError.Code {
    /// Bytes given to ``ClientHelloFingerprint`` are not a TLS ClientHello.
    public static let invalidClientHello = Self(rawValue: "invalid-client-hello")
}
