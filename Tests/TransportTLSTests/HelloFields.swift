import TransportTLS

/// The fields of a ClientHello that issue #21 compares between a browser and a profile, one stored
/// property each, so that two hellos can be compared field by field and a difference named.
struct HelloFields: Sendable {
    var legacyVersion: UInt16
    var cipherSuites: [UInt16]
    var extensions: [UInt16]
    /// Sorted, GREASE left out: what JA4 hashes.
    var extensionSet: [UInt16]
    var groups: [UInt16]
    var keyShares: [UInt16]
    var keyShareLengths: [Int]
    var signatureAlgorithms: [UInt16]
    var applicationProtocols: [String]
    var supportedVersions: [UInt16]
    var grease: Bool
    var pointFormats: [UInt8]
    var compressionMethods: [UInt8]
    var sessionIDLength: Int
    var serverName: Bool
    var encryptedClientHello: Bool
    var recordSizeLimit: UInt16?
    var certificateCompression: [UInt16]

    init(_ hello: ClientHelloFingerprint) {
        legacyVersion = hello.legacyVersion
        cipherSuites = hello.cipherSuites
        extensions = hello.extensions
        extensionSet = hello.extensions.filter { !ClientHelloFingerprint.isGREASE($0) }.sorted()
        groups = hello.groups
        keyShares = hello.keyShares.map(\.group)
        keyShareLengths = hello.keyShares.map(\.length)
        signatureAlgorithms = hello.signatureAlgorithms
        applicationProtocols = hello.applicationProtocols
        supportedVersions = hello.supportedVersions
        grease = hello.hasGREASE
        pointFormats = hello.pointFormats
        compressionMethods = hello.compressionMethods
        sessionIDLength = hello.sessionIDLength
        serverName = hello.hasServerName
        encryptedClientHello = hello.extensions.contains(0xfe0d)
        recordSizeLimit = hello.recordSizeLimit
        certificateCompression = hello.certificateCompressionAlgorithms
    }

    /// Every field, by name, with its value as text.
    var named: [(name: String, value: String)] {
        Mirror(reflecting: self).children.map { (name: $0.label ?? "?", value: String(describing: $0.value)) }
    }

    /// The names of the fields where `other` differs, each with both values.
    func differences(from other: HelloFields) -> [(name: String, ours: String, theirs: String)] {
        zip(named, other.named).compactMap { mine, theirs in
            mine.value == theirs.value ? nil : (mine.name, mine.value, theirs.value)
        }
    }

    /// Firefox ESR 153.8.0esr's first hello to a host name (Debian's firefox-esr, captured on
    /// 2026-12-02; its JA4 `t13d1617h2_86a278354501_3cbfd9057e0d` is docs/FINGERPRINTS.md's):
    /// what the drift test compares today's browser with.
    static let recordedFirefoxESR = HelloFields(
        legacyVersion: 0x0303,
        cipherSuites: [0x1301, 0x1303, 0x1302, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc02c, 0xc030, 0xc00a, 0xc013, 0xc014,
                       0x009c, 0x009d, 0x002f, 0x0035],
        extensions: [0, 23, 0xff01, 10, 11, 35, 16, 5, 34, 18, 51, 43, 13, 45, 28, 27, 0xfe0d],
        extensionSet: [0, 5, 10, 11, 13, 16, 18, 23, 27, 28, 34, 35, 43, 45, 51, 0xfe0d, 0xff01],
        groups: [0x11ec, 0x001d, 0x0017, 0x0018, 0x0019, 0x0100, 0x0101],
        keyShares: [0x11ec, 0x001d, 0x0017],
        keyShareLengths: [1216, 32, 65],
        signatureAlgorithms: [0x0403, 0x0503, 0x0603, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0203, 0x0201],
        applicationProtocols: ["h2", "http/1.1"],
        supportedVersions: [0x0304, 0x0303],
        grease: false,
        pointFormats: [0],
        compressionMethods: [0],
        sessionIDLength: 32,
        serverName: true,
        encryptedClientHello: true,
        recordSizeLimit: 16385,
        certificateCompression: [1, 2, 3])
    static let recordedFirefoxVersion = "153.8.0esr"

    /// Where the firefox-esr profile differs from Firefox ESR because NSS 3.87 cannot follow
    /// (BrowserTLSProfile.firefoxESR): X25519MLKEM768 (0x11ec) in groups and key shares, and
    /// compress_certificate (27), hence one extension fewer.
    static let unreachableByNSS387: Set<String> = ["extensions", "extensionSet", "groups", "keyShares", "keyShareLengths",
                                                   "certificateCompression"]

    private init(legacyVersion: UInt16, cipherSuites: [UInt16], extensions: [UInt16], extensionSet: [UInt16], groups: [UInt16],
                 keyShares: [UInt16], keyShareLengths: [Int], signatureAlgorithms: [UInt16], applicationProtocols: [String],
                 supportedVersions: [UInt16], grease: Bool, pointFormats: [UInt8], compressionMethods: [UInt8], sessionIDLength: Int,
                 serverName: Bool, encryptedClientHello: Bool, recordSizeLimit: UInt16?, certificateCompression: [UInt16]) {
        self.legacyVersion = legacyVersion
        self.cipherSuites = cipherSuites
        self.extensions = extensions
        self.extensionSet = extensionSet
        self.groups = groups
        self.keyShares = keyShares
        self.keyShareLengths = keyShareLengths
        self.signatureAlgorithms = signatureAlgorithms
        self.applicationProtocols = applicationProtocols
        self.supportedVersions = supportedVersions
        self.grease = grease
        self.pointFormats = pointFormats
        self.compressionMethods = compressionMethods
        self.sessionIDLength = sessionIDLength
        self.serverName = serverName
        self.encryptedClientHello = encryptedClientHello
        self.recordSizeLimit = recordSizeLimit
        self.certificateCompression = certificateCompression
    }
}
