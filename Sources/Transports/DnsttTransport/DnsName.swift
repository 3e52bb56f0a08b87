/// A DNS name as a list of labels (RFC 1035 §3.1), root last and not stored. Labels are bytes: a
/// response may carry any octets, and dnstt's own labels are base32 text.
///
/// Limits (RFC 1035 §2.3.4), enforced by every initialiser: a label is 1 to 63 octets, and the name
/// on the wire (each label with its length byte, plus the root's zero byte) is at most 255 octets.
public struct DnsName: Hashable, Sendable, CustomStringConvertible {
    public static let maximumLabelLength = 63
    public static let maximumWireLength = 255

    public let labels: [[UInt8]]

    public static let root = DnsName(trusted: [])

    /// Labels checked against the limits; nil when one is empty, too long, or the name is too long.
    public init?(labels: [[UInt8]]) {
        guard labels.allSatisfy({ !$0.isEmpty && $0.count <= Self.maximumLabelLength }),
              Self.wireLength(of: labels) <= Self.maximumWireLength else { return nil }
        self.labels = labels
    }

    /// `text` split at dots; one trailing dot (the root) is allowed. nil for an empty label or a name
    /// over the limits. No escapes: dnstt's domains are host names.
    public init?(parsing text: String) {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count > 1, parts.last == "" { parts.removeLast() }
        if parts == [""] { self = .root; return }
        self.init(labels: parts.map { Array($0.utf8) })
    }

    private init(trusted labels: [[UInt8]]) { self.labels = labels }

    /// Octets on the wire, uncompressed: every label with its length byte, then the root's 0.
    public var wireLength: Int { Self.wireLength(of: labels) }

    static func wireLength(of labels: [[UInt8]]) -> Int {
        labels.reduce(1) { $0 + $1.count + 1 }
    }

    /// Appends the uncompressed wire form.
    public func encode(into out: inout [UInt8]) {
        for label in labels {
            out.append(UInt8(label.count))
            out.append(contentsOf: label)
        }
        out.append(0)
    }

    /// The labels in front of `domain` when this name is `domain` or a name under it, comparing
    /// ASCII letters case-insensitively (resolvers may randomise case, draft-vixie-dnsext-dns0x20);
    /// nil otherwise. A name equal to `domain` gives no labels (dnstt's `Name.TrimSuffix`).
    public func labels(under domain: DnsName) -> ArraySlice<[UInt8]>? {
        guard labels.count >= domain.labels.count else { return nil }
        let offset = labels.count - domain.labels.count
        for (index, label) in domain.labels.enumerated() where !Self.equalIgnoringASCIICase(labels[offset + index], label) {
            return nil
        }
        return labels[..<offset]
    }

    static func equalIgnoringASCIICase(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        for index in a.indices where lowerASCII(a[index]) != lowerASCII(b[index]) { return false }
        return true
    }

    static func lowerASCII(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// Dotted text; bytes outside printable ASCII, dots and backslashes as `\DDD` (RFC 1035 §5.1),
    /// so a hostile label cannot forge structure in a log line.
    public var description: String {
        guard !labels.isEmpty else { return "." }
        return labels.map { label in
            var text = ""
            for byte in label {
                if byte > 0x20 && byte < 0x7F && byte != 0x2E && byte != 0x5C {
                    text.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    let digits = String(byte)
                    text += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
                }
            }
            return text
        }.joined(separator: ".")
    }
}
