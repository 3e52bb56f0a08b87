/// The parent's side of pt-spec's configuration protocol (§4): reads what a managed client prints
/// on stdout until `CMETHODS DONE`, the way tor's state machine does (LAUNCHED → ACCEPTING_METHODS
/// → CONFIGURED), and a little stricter where tor would wait forever or misread:
///
/// - The first meaningful line must be `VERSION 1`, `VERSION-ERROR`, `ENV-ERROR`, `LOG` or `STATUS`.
///   tor ignores unknown keywords; a program that is not a managed transport (it prints a banner,
///   JSON, binary) would then only be noticed at the deadline, so anything else first is a failure.
/// - A line that is not 7-bit printable ASCII, or is longer than `maximumLineBytes`, is a failure.
/// - `CMETHOD` must name `socks5` and a loopback IP literal with a non-zero port; anything else is
///   recorded as that transport's error (Postern dials the plugin itself and never leaves 127/8).
///
/// Messages from the plugin (`CMETHOD-ERROR`, `ENV-ERROR`, ...) are shortened and stripped to
/// printable ASCII before they reach an error. A plugin sees no bridge before it is configured, so
/// they cannot carry a bridge's secrets.
public struct ManagedClientHandshake: Sendable {
    public static let maximumLineBytes = 4096
    public static let maximumLines = 1000

    public enum Step: Sendable, Equatable {
        case needMore
        case configured(methods: [TransportName: TransportEndpoint], errors: [TransportName: String])
        case failed(String)
        /// The plugin refused the upstream proxy (`PROXY-ERROR`) or ignored it (no `PROXY DONE`
        /// before `CMETHODS DONE`); a failure the caller may answer by starting it without one.
        case proxyNotAccepted(String)
    }

    private enum State { case launched, acceptingMethods, done }

    private var state = State.launched
    private var lines = 0
    private var sawProxyDone = false
    private var methods: [TransportName: TransportEndpoint] = [:]
    private var errors: [TransportName: String] = [:]
    public let requested: [TransportName]
    public let proxyRequested: Bool

    public init(requested: [TransportName], proxyRequested: Bool) {
        self.requested = requested
        self.proxyRequested = proxyRequested
    }

    /// One line without its LF (a trailing CR is tolerated).
    public mutating func consume(_ raw: [UInt8]) -> Step {
        guard state != .done else { return .needMore }
        lines += 1
        guard lines <= Self.maximumLines else { return fail("printed more than \(Self.maximumLines) lines without CMETHODS DONE") }
        var bytes = raw[...]
        if bytes.last == 0x0D { bytes = bytes.dropLast() }
        guard bytes.count <= Self.maximumLineBytes else { return fail("printed a line longer than \(Self.maximumLineBytes) bytes") }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            return fail("printed something that is not a pt-spec line (binary or non-ASCII output)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if text.isEmpty { return .needMore }
        let words = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        let keyword = words[0]
        guard !keyword.isEmpty, keyword.utf8.allSatisfy(Self.isKeywordByte) else {
            return fail("printed something that is not a pt-spec line")
        }
        let rest = words.dropFirst().joined(separator: " ")
        if keyword == "LOG" || keyword == "STATUS" { return .needMore }
        switch state {
        case .launched:
            switch keyword {
            case "VERSION":
                guard rest == "1" else { return fail("speaks pt-spec version \(Self.clean(rest)), not 1") }
                state = .acceptingMethods
                return .needMore
            case "VERSION-ERROR": return fail("refused pt-spec version 1 (VERSION-ERROR \(Self.clean(rest)))")
            case "ENV-ERROR": return fail("rejected its environment (ENV-ERROR \(Self.clean(rest)))")
            default: return fail("did not start with VERSION 1 (its first line is not pt-spec)")
            }
        case .acceptingMethods:
            switch keyword {
            case "PROXY":
                guard rest == "DONE" else { return .needMore }
                sawProxyDone = true
                return .needMore
            case "PROXY-ERROR":
                state = .done
                return .proxyNotAccepted("cannot use the upstream proxy (PROXY-ERROR \(Self.clean(rest)))")
            case "CMETHOD-ERROR":
                guard words.count >= 2, let name = TransportName(words[1]) else { return .needMore }
                errors[name] = Self.clean(words.dropFirst(2).joined(separator: " "))
                return .needMore
            case "CMETHOD":
                guard words.count >= 4, let name = TransportName(words[1]) else {
                    return fail("printed a malformed CMETHOD line")
                }
                guard words[2] == "socks5" else {
                    errors[name] = "it offers \(Self.clean(words[2])), but Postern needs socks5"
                    return .needMore
                }
                guard let endpoint = TransportEndpoint(words[3]), endpoint.isLoopback else {
                    errors[name] = "its listener is not a loopback IP:port"
                    return .needMore
                }
                methods[name] = endpoint
                return .needMore
            case "CMETHODS":
                guard rest == "DONE" else { return .needMore }
                if proxyRequested && !sawProxyDone {
                    state = .done
                    return .proxyNotAccepted("did not accept the upstream proxy (no PROXY DONE before CMETHODS DONE)")
                }
                state = .done
                for name in requested where methods[name] == nil && errors[name] == nil {
                    errors[name] = "it did not offer this transport"
                }
                return .configured(methods: methods.filter { requested.contains($0.key) }, errors: errors.filter { requested.contains($0.key) })
            case "VERSION", "VERSION-ERROR", "ENV-ERROR":
                return fail("sent \(keyword) after VERSION")
            default:
                return .needMore
            }
        case .done:
            return .needMore
        }
    }

    private mutating func fail(_ reason: String) -> Step {
        state = .done
        return .failed(reason)
    }

    private static func isKeywordByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
    }

    /// At most 160 printable ASCII characters of what the plugin said.
    static func clean(_ text: String) -> String {
        let kept = String(decoding: text.utf8.filter { $0 >= 0x20 && $0 < 0x7F }.prefix(160), as: UTF8.self)
        return kept.isEmpty ? "(no message)" : kept
    }
}
