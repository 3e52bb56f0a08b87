import Foundation

/// A loopback address and port for the SOCKS listener. Non-loopback binds are refused: the
/// listener must never be reachable from another machine.
public struct SocksEndpoint: Sendable, Hashable, CustomStringConvertible {
    public static let defaultPort: UInt16 = 39050
    public static let `default` = try! SocksEndpoint(host: "127.0.0.1", port: defaultPort)

    public let host: String
    /// The port; 0 for `automatic` until tor has bound one (TorStatus.socks then holds the bound one).
    public let port: UInt16

    public init(host: String = "127.0.0.1", port: UInt16) throws(TorCoreError) {
        guard port != 0 else {
            throw TorCoreError(.invalidConfiguration, kind: .usage, "the SOCKS port must be between 1 and 65535 (or auto)")
        }
        try self.init(checkedHost: host, port: port)
    }

    /// A listener on a port tor picks when it binds (`SocksPort HOST:auto`): nothing can take the
    /// port between choosing and binding it, as happens when a parent picks a free port for a child.
    /// The bound port is in `TorStatus.socks` once the core has started.
    public static func automatic(host: String = "127.0.0.1") throws(TorCoreError) -> SocksEndpoint {
        try SocksEndpoint(checkedHost: host, port: 0)
    }

    private init(checkedHost host: String, port: UInt16) throws(TorCoreError) {
        guard Self.isLoopback(host) else {
            throw TorCoreError(.invalidConfiguration, kind: .usage,
                               "the SOCKS listener must bind to loopback (127.0.0.0/8 or [::1]), not \(host)")
        }
        self.host = host
        self.port = port
    }

    /// True for a listener whose port tor chooses (`auto`, or port 0 as given).
    public var isAutomatic: Bool { port == 0 }

    /// This endpoint's host with the port tor bound.
    public func bound(port: UInt16) throws(TorCoreError) -> SocksEndpoint {
        try SocksEndpoint(host: host, port: port)
    }

    /// Parses "PORT", "HOST:PORT" or "[::1]:PORT"; PORT may be "auto" (or 0): tor picks a free one.
    public init(parsing text: String) throws(TorCoreError) {
        var host = "127.0.0.1"
        var portText = Substring(text)
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(after: close)...].drop(while: { $0 == ":" })
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        if portText == "auto" || portText == "0" {
            try self.init(checkedHost: host, port: 0)
            return
        }
        guard let port = UInt16(portText) else {
            throw TorCoreError(.invalidConfiguration, kind: .usage, "'\(text)' is not a SOCKS port or HOST:PORT (PORT may be auto)")
        }
        try self.init(host: host, port: port)
    }

    /// Parses the quoted addresses of `GETINFO net/listeners/socks` (`"127.0.0.1:40001" "[::1]:9050"`,
    /// unix sockets and non-loopback addresses are skipped) into endpoints.
    public static func parseListeners(_ text: String) -> [SocksEndpoint] {
        text.split(whereSeparator: { $0 == " " || $0 == "\"" }).compactMap { word -> SocksEndpoint? in
            var host: Substring
            var portText: Substring
            if word.hasPrefix("["), let close = word.firstIndex(of: "]") {
                host = word[word.index(after: word.startIndex)..<close]
                portText = word[word.index(after: close)...].drop(while: { $0 == ":" })
            } else if let colon = word.lastIndex(of: ":") {
                host = word[..<colon]
                portText = word[word.index(after: colon)...]
            } else {
                return nil
            }
            guard let port = UInt16(portText), port != 0 else { return nil }
            return try? SocksEndpoint(host: String(host), port: port)
        }
    }

    /// "HOST:PORT", or "HOST:auto" for an automatic one (what tor's SocksPort takes).
    public var description: String {
        let portText = isAutomatic ? "auto" : String(port)
        return host.contains(":") ? "[\(host)]:\(portText)" : "\(host):\(portText)"
    }

    /// Throws when something else already listens on this address and port: tor would refuse to
    /// start before its log opens, and the user would learn nothing.
    func ensureAvailable() throws(TorCoreError) {
        guard !isAutomatic else { return }
        let isIPv6 = host.contains(":")
        let descriptor = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var result: Int32 = 0
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            _ = inet_pton(AF_INET6, host, &address.sin6_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            _ = inet_pton(AF_INET, host, &address.sin_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        if result != 0 && errno == EADDRINUSE {
            throw TorCoreError(.invalidConfiguration, kind: .usage,
                               "\(description) is already in use by another program (another postern or tor?); choose another SOCKS port")
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        if host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return false }
        return octets[0] == "127"
    }
}

/// One tor option as passed on tor's command line ("Key value").
public struct TorOption: Sendable, Hashable, CustomStringConvertible {
    public let key: String
    public let value: String

    public init(_ key: String, _ value: String) throws(TorCoreError) {
        guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw TorCoreError(.invalidConfiguration, kind: .usage, "'\(key)' is not a tor option name")
        }
        guard !value.contains("\n"), !value.contains("\r") else {
            throw TorCoreError(.invalidConfiguration, kind: .usage, "the value of \(key) spans lines")
        }
        self.key = key
        self.value = value
    }

    /// Parses lines of "Key value" (torrc syntax without includes); '#' comments and blank lines are
    /// skipped. A line ``TorOptionPolicy`` refuses (a control port, a public listener, the log) is a
    /// usage error naming the line, the option and why.
    public static func parseLines(_ text: String) throws(TorCoreError) -> [TorOption] {
        var options: [TorOption] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(separator: " ", maxSplits: 1)
            let option: TorOption
            do {
                option = try TorOption(String(parts[0]), parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : "")
            } catch {
                throw TorCoreError(error.code, kind: error.kind, "line \(index + 1): \(error.message)")
            }
            if let refusal = TorOptionPolicy.refusal(of: option) {
                throw TorCoreError(.invalidConfiguration, kind: .usage, "line \(index + 1): \(refusal)")
            }
            options.append(option)
        }
        return options
    }

    public var description: String { "\(key) \(value)" }
}

/// Everything the core needs to start tor. No torrc is read; this becomes tor's command line.
public struct TorConfiguration: Sendable {
    public var dataDirectory: URL
    public var socks: SocksEndpoint
    /// How long one bootstrap attempt may take before `bootstrapDidStall` is raised.
    public var bootstrapDeadline: Duration
    /// Options rendered from the user's settings (bridges, transports) or a test network.
    public var options: [TorOption]
    /// tor's notice-level log names bridges ("new bridge descriptor ... at ADDRESS") despite
    /// SafeLogging, so by default tor logs warnings only, and those pass through ``TorLogRelay``,
    /// which scrubs what names a bridge (``TorLogScrubber`` says why SafeLogging is not enough).
    /// Turned on by --unsafe-logging: then tor writes notices to tor.log itself, unscrubbed.
    public var noticeLevelLog: Bool = false

    public init(dataDirectory: URL, socks: SocksEndpoint = .default,
                bootstrapDeadline: Duration = .seconds(75), options: [TorOption] = []) {
        self.dataDirectory = dataDirectory
        self.socks = socks
        self.bootstrapDeadline = bootstrapDeadline
        self.options = options
    }

    /// The log file tor writes inside the data directory (libraries never print).
    public var logFile: URL { dataDirectory.appendingPathComponent("tor.log") }

    /// tor's argv. Options that the core owns come first; later options of the same name add to
    /// list options (Bridge) or replace single ones.
    /// `logDestination` is the path tor writes its log to: the scrubbing relay's pipe, or (with
    /// ``noticeLevelLog``) ``logFile`` itself.
    func commandLine(emptyTorrc: URL, logDestination: String? = nil) -> [String] {
        var arguments = [
            "tor",
            // --quiet: tor would otherwise print its early notices to our stdout. For diagnosing a
            // core that exits before its log file opens, POSTERN_TOR_STDERR=1 lets warnings through.
            ProcessInfo.processInfo.environment["POSTERN_TOR_STDERR"] == "1" ? "--hush" : "--quiet", "-f", emptyTorrc.path, "--defaults-torrc", emptyTorrc.path, "--ignore-missing-torrc",
            "DataDirectory", dataDirectory.path,
            "SocksPort", "\(socks.description) IsolateSOCKSAuth",
            "ControlPort", "0",
            "__DisableSignalHandlers", "1",
            "ClientOnly", "1",
            "SafeLogging", "1",
            "Log", "\(noticeLevelLog ? "notice" : "warn") file \(logDestination ?? logFile.path)",
            "GeoIPFile", "", "GeoIPv6File", "",
            "RunAsDaemon", "0",
        ]
        for option in options {
            arguments.append(option.key)
            arguments.append(option.value)
        }
        return arguments
    }
}
