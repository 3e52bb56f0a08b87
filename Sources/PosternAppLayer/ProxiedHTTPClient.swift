internal import CCurl
import Foundation
import PosternTor

/// A completed HTTP response (bodies are small here: relay lists, not downloads).
public struct HTTPResponse: Sendable, Hashable {
    /// The HTTP status code.
    public let status: Int
    /// The body, within the request's byte cap.
    public let body: Data
}

/// The one proxied HTTP session (bitchat's TorURLSession): HTTP/1.1 and HTTPS through the embedded
/// tor's SOCKS5 port with remote DNS, or direct when the Tor preference is off. The route comes from
/// ``NetworkActivationService``; there is no other switch.
public struct ProxiedHTTPClient: Sendable {
    /// The switch that says whether requests go through tor (and waits for it) or direct.
    public let activation: NetworkActivationService
    /// Random per client: isolation credentials differ between Postern instances too.
    private let isolationNonce: String

    /// A client whose requests follow `activation`.
    public init(activation: NetworkActivationService) {
        self.activation = activation
        isolationNonce = UUID().uuidString.prefix(8).lowercased()
    }

    /// GET `url` over a route the caller resolved from the activation service.
    public func get(_ url: URL, route: NetworkRoute, timeout: Duration = .seconds(15),
                    maximumBytes: Int = 1 << 20) async throws(AppLayerError) -> HTTPResponse {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw AppLayerError(.invalidURL, kind: .usage, "not an http(s) URL: \(url.absoluteString)")
        }
        try CurlHandle.refuseOnionOutsideTor(host: host, route: route)
        let isolation = "\(isolationNonce)|\(host.lowercased()):\(url.port ?? (scheme == "https" ? 443 : 80))"
        let address = url.absoluteString
        return try await runOnDedicatedThread(name: "postern-http") { () throws(AppLayerError) -> HTTPResponse in
            try Self.performGet(address, host: host, route: route, isolation: isolation, timeout: timeout, maximumBytes: maximumBytes)
        }
    }

    /// GET with the route decided here: waits for Tor (up to 3 waits) when it is wanted.
    public func get(_ url: URL, timeout: Duration = .seconds(15), maximumBytes: Int = 1 << 20) async throws(AppLayerError) -> HTTPResponse {
        let route = try await activation.routeWaitingForTor()
        return try await get(url, route: route, timeout: timeout, maximumBytes: maximumBytes)
    }

    private final class BodySink: @unchecked Sendable {
        var data = Data()
        let limit: Int
        var exceeded = false
        init(limit: Int) { self.limit = limit }
    }

    private static func performGet(_ address: String, host: String, route: NetworkRoute, isolation: String, timeout: Duration,
                                   maximumBytes: Int) throws(AppLayerError) -> HTTPResponse {
        let handle = try CurlHandle()
        try handle.applyCommon(timeout: timeout)
        try handle.apply(route: route, isolation: isolation, host: host)
        try handle.set(CURLOPT_URL, address)
        try handle.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        try handle.set(CURLOPT_FOLLOWLOCATION, 0)
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        try handle.set(CURLOPT_TIMEOUT_MS, max(1, milliseconds))
        let sink = BodySink(limit: maximumBytes)
        let context = Unmanaged.passRetained(sink)
        defer { context.release() }
        try CurlHandle.check(ccurl_setopt_pointer(handle.pointer, CURLOPT_WRITEDATA, context.toOpaque()), "curl write data")
        try CurlHandle.check(ccurl_setopt_write_function(handle.pointer) { data, size, count, context in
            guard let data, let context else { return 0 }
            let sink = Unmanaged<BodySink>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            if sink.data.count + length > sink.limit {
                sink.exceeded = true
                return 0  // aborts the transfer with CURLE_WRITE_ERROR
            }
            sink.data.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length)
            return length
        }, "curl write function")
        let code = curl_easy_perform(handle.pointer)
        if sink.exceeded {
            throw AppLayerError(.tooLarge, "response larger than \(maximumBytes) bytes")
        }
        try handle.checkTransfer(code, "GET over \(route)")
        var status = 0
        try CurlHandle.check(ccurl_getinfo_long(handle.pointer, CURLINFO_RESPONSE_CODE, &status), "response code")
        return HTTPResponse(status: status, body: sink.data)
    }
}
