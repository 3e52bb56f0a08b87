/// Which tor options a caller may add (`--tor-options-file`, ``TorConfiguration/options``).
///
/// The core starts tor with its own command line (``TorConfiguration``): no control port but the
/// owning socket, a loopback SOCKS listener, a warnings-only log with SafeLogging, client only.
/// Options added after it must not undo that: tor would either open something another program or
/// machine can reach (a control port, a listener on a public address) or write bridge addresses
/// where they do not belong, or it would refuse the duplicate and exit before its log opens.
///
/// tor matches option names without regard to case and accepts a unique-looking prefix of a name
/// (with a warning), so a name is compared case-insensitively and an abbreviation of a guarded
/// name is refused too.
public enum TorOptionPolicy {
    /// Why `option` may not be added, or nil when it may. Never quotes the option's value.
    public static func refusal(of option: TorOption) -> String? {
        let key = option.key.lowercased()
        if key.hasPrefix("_") {
            return "\(option.key) is refused: it is one of tor's internal options, and Postern sets the ones its tor needs itself"
        }
        if let reason = refused[key] { return "\(option.key) is refused: \(reason)" }
        if loopbackListeners.contains(key) { return listenerRefusal(option) }
        let guarded = Array(refused.keys) + loopbackListeners
        if let full = guarded.sorted().first(where: { $0.hasPrefix(key) }) {
            return "\(option.key) is refused: tor reads it as an abbreviation of \(canonicalName[full] ?? full), which Postern guards; write option names in full"
        }
        return nil
    }

    /// Why the option named `key` may not go back to tor's default (SETCONF with no value), or nil
    /// when it may. Every guarded option and listener is refused: tor's defaults are what Postern's
    /// command line replaces (its default log is notices on stdout; its default SocksPort is 9050).
    public static func refusal(ofResetting key: String) -> String? {
        guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            return "'\(key)' is not a tor option name"
        }
        let lowered = key.lowercased()
        let guarded = Array(refused.keys) + loopbackListeners
        guard !lowered.hasPrefix("_"), let full = guarded.sorted().first(where: { $0.hasPrefix(lowered) }) else {
            return lowered.hasPrefix("_") ? "\(key) is refused: it is one of tor's internal options" : nil
        }
        return "\(key) cannot be reset: tor's default for \(canonicalName[full] ?? full) would undo what Postern sets"
    }

    private static let controlReason = "it would open or configure a control port, which lets another program steer tor; Postern's tor has none but its own (ControlPort 0)"
    private static let relayReason = "it would open a listener for other machines; Postern's tor is a client only"
    private static let logReason = "Postern sets tor's log (warnings only, scrubbed of whatever names a bridge); use --unsafe-logging for notices"

    /// Refused whatever their value, by lowercased name.
    private static let refused: [String: String] = [
        "controlport": controlReason,
        "controlsocket": controlReason,
        "controlsocketsgroupwritable": controlReason,
        "controlportwritetofile": controlReason,
        "controlportfilegroupreadable": controlReason,
        "hashedcontrolpassword": controlReason,
        "cookieauthentication": controlReason,
        "cookieauthfile": controlReason,
        "cookieauthfilegroupreadable": controlReason,
        "orport": relayReason,
        "dirport": relayReason,
        "extorport": relayReason,
        "metricsport": relayReason,
        "log": logReason,
        "logmessagedomains": logReason,
        "safelogging": logReason,
        "datadirectory": "Postern chooses tor's data directory (--data-dir)",
        "datadirectorygroupreadable": "Postern keeps tor's data directory private to the user",
        "cachedirectory": "Postern keeps tor's cache (bridge descriptors included) in its data directory",
        "cachedirectorygroupreadable": "Postern keeps tor's cache (bridge descriptors included) private to the user",
        "keydirectory": "Postern keeps tor's keys in its data directory",
        "keydirectorygroupreadable": "Postern keeps tor's keys private to the user",
        "clientonly": "Postern's tor is a client only",
        "runasdaemon": "tor runs inside Postern's process and cannot become a daemon",
        "user": "tor runs inside Postern's process and cannot change its user",
    ]

    /// Listeners a client may add when they bind to loopback, by lowercased name.
    private static let loopbackListeners = ["socksport", "transport", "natdport", "dnsport", "httptunnelport"]

    private static let canonicalName: [String: String] = [
        "controlport": "ControlPort", "controlsocket": "ControlSocket", "controlsocketsgroupwritable": "ControlSocketsGroupWritable",
        "controlportwritetofile": "ControlPortWriteToFile", "controlportfilegroupreadable": "ControlPortFileGroupReadable",
        "hashedcontrolpassword": "HashedControlPassword", "cookieauthentication": "CookieAuthentication",
        "cookieauthfile": "CookieAuthFile", "cookieauthfilegroupreadable": "CookieAuthFileGroupReadable",
        "orport": "ORPort", "dirport": "DirPort", "extorport": "ExtORPort", "metricsport": "MetricsPort",
        "log": "Log", "logmessagedomains": "LogMessageDomains", "safelogging": "SafeLogging",
        "datadirectory": "DataDirectory", "datadirectorygroupreadable": "DataDirectoryGroupReadable",
        "cachedirectory": "CacheDirectory", "cachedirectorygroupreadable": "CacheDirectoryGroupReadable",
        "keydirectory": "KeyDirectory", "keydirectorygroupreadable": "KeyDirectoryGroupReadable",
        "clientonly": "ClientOnly", "runasdaemon": "RunAsDaemon", "user": "User",
        "socksport": "SocksPort", "transport": "TransPort", "natdport": "NATDPort", "dnsport": "DNSPort",
        "httptunnelport": "HTTPTunnelPort",
    ]

    /// A listener's value is `[ADDRESS:]PORT|auto|unix:PATH [FLAGS]`; a bare port or `auto` binds
    /// 127.0.0.1. Only loopback TCP addresses pass; `SocksPort 0` would close Postern's own.
    private static func listenerRefusal(_ option: TorOption) -> String? {
        let address = option.value.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init) ?? ""
        if option.key.lowercased() == "socksport", address == "0" {
            return "SocksPort 0 is refused: it would close Postern's SOCKS listener (use --socks to move it)"
        }
        guard !address.isEmpty, !address.lowercased().hasPrefix("unix:"), (try? SocksEndpoint(parsing: address)) != nil else {
            return "\(option.key) is refused: a listener must bind a loopback address (PORT, auto, 127.0.0.0/8 or [::1])"
        }
        return nil
    }
}
