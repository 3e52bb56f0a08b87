internal import CCurl
import PosternSystem
import Foundation
import PosternTor

/// One libcurl easy handle; the only owner, freed in deinit. Every call goes through `check`, which
/// turns a CURLcode into an ``AppLayerError``. A handle is used by one thread at a time (libcurl's
/// rule): the request thread, or the WebSocket connection's own thread.
final class CurlHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    /// Set for a Tor route: connects to the SOCKS listener and proves it ours (held here, as
    /// libcurl keeps only a pointer to it).
    private var socksConnector: OwnSocksConnector?

    /// libcurl is opened on first use (Sources/CCurl): nil, or why it could not be.
    private static let loadFailure: String? = postern_curl_load().map { String(cString: $0) }
    private static let globalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    init() throws(AppLayerError) {
        if let failure = Self.loadFailure {
            throw AppLayerError(.libraryFailure, failure)
        }
        guard Self.globalInit == CURLE_OK else {
            throw AppLayerError(.libraryFailure, "libcurl global initialisation failed (\(Self.globalInit.rawValue))")
        }
        guard let handle = curl_easy_init() else {
            throw AppLayerError(.libraryFailure, "curl_easy_init failed")
        }
        pointer = handle
    }

    deinit { curl_easy_cleanup(pointer) }

    static func check(_ code: CURLcode, _ what: String) throws(AppLayerError) {
        guard code == CURLE_OK else {
            let text = String(cString: curl_easy_strerror(code))
            let errorCode: AppLayerError.Code = code == CURLE_OPERATION_TIMEDOUT ? .timedOut : .transport
            throw AppLayerError(errorCode, "\(what): \(text)")
        }
    }

    /// ``check(_:_:)`` for a transfer: a connection refused because the SOCKS listener is not
    /// ours is reported as that (`socks-not-ours`), not as libcurl's "could not connect".
    func checkTransfer(_ code: CURLcode, _ what: String) throws(AppLayerError) {
        if code != CURLE_OK, let refusal = socksConnector?.lastRefusal {
            throw AppLayerError(.socksNotOurs, kind: .blocked, "\(what): \(refusal)")
        }
        try Self.check(code, what)
    }

    func set(_ option: CURLoption, _ value: Int) throws(AppLayerError) {
        try Self.check(ccurl_setopt_long(pointer, option, value), "curl option \(option.rawValue)")
    }

    func set(_ option: CURLoption, _ value: String) throws(AppLayerError) {
        try Self.check(value.withCString { ccurl_setopt_string(pointer, option, $0) }, "curl option \(option.rawValue)")
    }

    /// Applies the route: a SOCKS5 proxy with remote name resolution (socks5h) and per-destination
    /// credentials, or explicitly no proxy at all (an empty proxy also ignores *_proxy variables).
    ///
    /// The environment must not be able to route around Tor. An explicit CURLOPT_PROXY overrides
    /// ALL_PROXY, http_proxy and HTTPS_PROXY, but libcurl still reads NO_PROXY/no_proxy whenever
    /// CURLOPT_NOPROXY is unset, and `NO_PROXY=*` would send the request (DNS included) direct.
    /// An empty CURLOPT_NOPROXY means "no host bypasses the proxy", whatever the environment says.
    /// Tests/CoreTests/ProxyEnvironmentTests.swift shows each variable failing to reroute.
    func apply(route: NetworkRoute, isolation: String, host: String) throws(AppLayerError) {
        try Self.refuseOnionOutsideTor(host: host, route: route)
        switch route {
        case .tor(let socks):
            try set(CURLOPT_PROXY, "socks5h://\(socks.description)")
            try set(CURLOPT_NOPROXY, "")
            // Distinct credentials per destination: IsolateSOCKSAuth puts each on its own circuit.
            try set(CURLOPT_PROXYUSERNAME, isolation)
            try set(CURLOPT_PROXYPASSWORD, "postern")
            let connector = OwnSocksConnector(timeout: Self.socksConnectTimeout)
            try connector.install(on: pointer)
            socksConnector = connector
        case .direct:
            try set(CURLOPT_PROXY, "")
        }
    }

    /// How long the connection to the SOCKS listener (on this machine) may take.
    static let socksConnectTimeout: Duration = .seconds(10)

    /// A .onion name only means something to tor: resolving it directly would send the name to the
    /// system resolver in the clear (a leak) and fail anyway.
    static func refuseOnionOutsideTor(host: String, route: NetworkRoute) throws(AppLayerError) {
        let name = host.lowercased().hasSuffix(".") ? String(host.lowercased().dropLast()) : host.lowercased()
        if case .direct = route, name == "onion" || name.hasSuffix(".onion") {
            throw AppLayerError(.onionNeedsTor, kind: .usage, "\(host) is an onion service: it is only reachable through Tor (the Tor preference is off)")
        }
    }

    /// Options every Postern transfer shares.
    func applyCommon(timeout: Duration) throws(AppLayerError) {
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        try set(CURLOPT_CONNECTTIMEOUT_MS, max(1, milliseconds))
    }
}

/// Runs blocking C work on a thread of its own, so no Swift concurrency thread ever blocks.
func runOnDedicatedThread<T: Sendable>(name: String, _ body: @escaping @Sendable () throws(AppLayerError) -> T) async throws(AppLayerError) -> T {
    let result: Result<T, AppLayerError> = await withCheckedContinuation { continuation in
        let thread = Thread {
            do throws(AppLayerError) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        thread.name = name
        thread.start()
    }
    return try result.get()
}
