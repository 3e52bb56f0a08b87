import Foundation
import Testing
@testable import PosternTor
@testable import PosternAppLayer
#if canImport(Glibc)
import Glibc
#endif

/// The environment cannot route app traffic around Tor (issue 12, item 5). libcurl reads NO_PROXY,
/// no_proxy, ALL_PROXY, http_proxy and HTTPS_PROXY; each is set here while a request goes over a
/// Tor route whose SOCKS port is a loopback listener that accepts and hangs up. The request must
/// fail, the SOCKS listener must have been dialled, and the destination (and the decoy proxy the
/// variables name) must never see a connection.
///
/// Serialized: the variables are process-wide. Other suites in this process cannot be misrouted
/// by them, which is the property under test (a Tor route ignores them; a direct route sets an
/// empty CURLOPT_PROXY, which ignores them too).
@Suite(.serialized) struct ProxyEnvironmentTests {
    static let variables = ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy", "HTTPS_PROXY", "https_proxy"]

    /// Runs `body` with the given variables set, restoring the previous values afterwards.
    private func withEnvironment<T>(_ values: [String: String], _ body: () async throws -> T) async rethrows -> T {
        var saved: [String: String?] = [:]
        for name in Self.variables { saved[name] = ProcessInfo.processInfo.environment[name] }
        for name in Self.variables { unsetenv(name) }
        for (name, value) in values { setenv(name, value, 1) }
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        return try await body()
    }

    private func torRoute(_ socks: ConnectionCounter) throws -> NetworkRoute {
        .tor(try SocksEndpoint(host: "127.0.0.1", port: socks.port))
    }

    @Test(arguments: [["NO_PROXY": "*"], ["no_proxy": "*"], ["NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"]])
    func noProxyCannotSendHTTPDirect(_ environment: [String: String]) async throws {
        let destination = try ConnectionCounter()
        let socks = try ConnectionCounter()
        defer { destination.stop(); socks.stop() }
        let route = try torRoute(socks)
        let client = ProxiedHTTPClient(activation: NetworkActivationService(store: nil, readiness: NeverReady()))
        let url = URL(string: "http://127.0.0.1:\(destination.port)/relays.csv")!
        let outcome = await withEnvironment(environment) { () -> (any Error)? in
            do { _ = try await client.get(url, route: route, timeout: .seconds(5)); return nil } catch { return error }
        }
        #expect(outcome != nil, "the GET succeeded although the only route was a SOCKS port that hangs up")
        #expect(socks.accepted >= 1, "the request never went to the Tor SOCKS port")
        #expect(destination.accepted == 0, "with \(environment) the request reached the destination directly")
    }

    @Test func noProxyCannotOpenAWebSocketDirect() async throws {
        let destination = try ConnectionCounter()
        let socks = try ConnectionCounter()
        defer { destination.stop(); socks.stop() }
        let route = try torRoute(socks)
        let url = URL(string: "ws://127.0.0.1:\(destination.port)/")!
        let outcome = await withEnvironment(["NO_PROXY": "*", "no_proxy": "*"]) { () -> (any Error)? in
            do {
                let connection = try await WebSocketConnection.connect(to: url, route: route, timeout: .seconds(5))
                await connection.close(timeout: .milliseconds(100))
                return nil
            } catch { return error }
        }
        #expect(outcome != nil)
        #expect(socks.accepted >= 1)
        #expect(destination.accepted == 0, "NO_PROXY=* opened the WebSocket directly")
    }

    @Test func proxyVariablesCannotReplaceTheTorProxy() async throws {
        let destination = try ConnectionCounter()
        let socks = try ConnectionCounter()
        let decoy = try ConnectionCounter()
        defer { destination.stop(); socks.stop(); decoy.stop() }
        let route = try torRoute(socks)
        let decoyURL = "http://127.0.0.1:\(decoy.port)"
        let environment = ["ALL_PROXY": decoyURL, "all_proxy": decoyURL, "http_proxy": decoyURL, "HTTPS_PROXY": decoyURL,
                           "https_proxy": decoyURL]
        let client = ProxiedHTTPClient(activation: NetworkActivationService(store: nil, readiness: NeverReady()))
        for scheme in ["http", "https"] {
            let url = URL(string: "\(scheme)://127.0.0.1:\(destination.port)/")!
            let outcome = await withEnvironment(environment) { () -> (any Error)? in
                do { _ = try await client.get(url, route: route, timeout: .seconds(5)); return nil } catch { return error }
            }
            #expect(outcome != nil, "\(scheme): succeeded without the Tor SOCKS port")
        }
        #expect(socks.accepted >= 2, "the requests did not use the Tor SOCKS port")
        #expect(decoy.accepted == 0, "a *_proxy variable replaced the Tor proxy")
        #expect(destination.accepted == 0)
    }

    /// The control: the same counters see a direct connection when the route is direct (so a zero
    /// above means something), and the decoy proxy is ignored there too (empty CURLOPT_PROXY).
    @Test func directRouteIgnoresTheDecoyAndTheCounterCounts() async throws {
        let destination = try ConnectionCounter()
        let decoy = try ConnectionCounter()
        defer { destination.stop(); decoy.stop() }
        let decoyURL = "http://127.0.0.1:\(decoy.port)"
        let client = ProxiedHTTPClient(activation: NetworkActivationService(store: nil, readiness: NeverReady()))
        let url = URL(string: "http://127.0.0.1:\(destination.port)/")!
        _ = await withEnvironment(["ALL_PROXY": decoyURL, "http_proxy": decoyURL]) { () -> (any Error)? in
            do { _ = try await client.get(url, route: .direct, timeout: .seconds(5)); return nil } catch { return error }
        }
        #expect(destination.accepted == 1)
        #expect(decoy.accepted == 0)
    }
}

private struct NeverReady: TorReadinessSource {
    func torIsReady() async -> Bool { false }
    func waitUntilTorReady(timeout: Duration) async -> Bool { false }
}

/// A TCP listener on 127.0.0.1 that accepts, counts and hangs up at once (any protocol fails
/// against it, so a counted connection is the only thing that can reach it).
final class ConnectionCounter: @unchecked Sendable {
    let port: UInt16
    private let descriptor: Int32
    private let lock = NSLock()
    private var count = 0
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { _ = Glibc.close(fd); throw CounterError() }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    private func acceptLoop() {
        while !lock.withLock({ stopped }) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            let client = accept(descriptor, nil, nil)
            if client >= 0 {
                lock.withLock { count += 1 }
                _ = Glibc.close(client)
            }
        }
        done.signal()
    }

    var accepted: Int { lock.withLock { count } }

    func stop() {
        lock.withLock { stopped = true }
        done.wait()
        _ = Glibc.close(descriptor)
    }

    struct CounterError: Error {}
}
