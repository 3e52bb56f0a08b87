import Foundation
import Synchronization
import Testing
import TransportBase
import TransportTestSupport
@testable import Obfs4Transport

/// A transport that connects plain TCP and remembers the arguments it was given, so the SOCKS layer
/// can be checked byte for byte against a real echo server.
final class RecordingPlainTransport: PluggableTransport, @unchecked Sendable {
    let name = TransportName("plain")!
    private let recorded = Mutex<[TransportArguments]>([])
    var arguments: [TransportArguments] { recorded.withLock { $0 } }

    func configuration(from arguments: TransportArguments) throws(TransportError) -> TransportArguments {
        if arguments["reject"] != nil {
            throw TransportError(code: .invalidArguments, kind: .invalidInput, message: "reject: present")
        }
        recorded.withLock { $0.append(arguments) }
        return arguments
    }

    func dial(_ endpoint: TransportEndpoint, configuration: TransportArguments, context: DialContext) async throws -> any TransportConnection {
        try await context.dialer.connect(to: endpoint, timeout: .seconds(5))
    }
}

/// A raw SOCKS5 client speaking bytes, as tor does (pt-spec §5.2).
struct RawSocksClient {
    let socket: TCPSocket
    var pending: [UInt8] = []

    static func connect(to endpoint: TransportEndpoint) async throws -> RawSocksClient {
        RawSocksClient(socket: try await TCPSocket.connect(to: endpoint, timeout: .seconds(5)))
    }

    mutating func read(_ count: Int) async throws -> [UInt8] {
        while pending.count < count {
            let chunk = try await socket.read(maximumCount: 4096)
            if chunk.isEmpty { break }
            pending += chunk
        }
        let out = Array(pending.prefix(count))
        pending.removeFirst(out.count)
        return out
    }

    /// Sends tor's argument encoding: UNAME = first 255 bytes, PASSWD = the rest or a lone NUL.
    static func authentication(for argumentString: String) -> [UInt8] {
        let bytes = Array(argumentString.utf8)
        precondition(bytes.count <= 510)
        let username = Array(bytes.prefix(255))
        let password = bytes.count > 255 ? Array(bytes.dropFirst(255)) : [0]
        return [1, UInt8(username.count)] + username + [UInt8(password.count)] + password
    }

    static func connectRequest(_ endpoint: TransportEndpoint) -> [UInt8] {
        [5, 1, 0, endpoint.isIPv6 ? 4 : 1] + endpoint.addressBytes + [UInt8(endpoint.port >> 8), UInt8(endpoint.port & 0xFF)]
    }

    /// Greeting + arguments + CONNECT; returns the CONNECT reply code.
    mutating func open(arguments: String, target: TransportEndpoint) async throws -> (auth: [UInt8], reply: UInt8?) {
        try await socket.write([5, 2, 0, 2])
        let method = try await read(2)
        guard method == [5, 2] else { return (method, nil) }
        try await socket.write(Self.authentication(for: arguments))
        let auth = try await read(2)
        guard auth == [1, 0] else { return (auth, nil) }
        try await socket.write(Self.connectRequest(target))
        let reply = try await read(10)
        return (auth, reply.count == 10 ? reply[1] : nil)
    }
}

@Suite struct SocksServerTests {
    @Test func escapedArgumentsReachTheTransportAndBytesRelay() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let transport = RecordingPlainTransport()
        let server = try PTSocksServer(transport: transport)
        defer { server.stop() }

        var client = try await RawSocksClient.connect(to: server.endpoint)
        let target = try TransportEndpoint(parsing: "127.0.0.1:\(echo.port)")
        // tor escapes only `\` and `;`; `\=` (spec-style) must work too; later `=` belong to the value.
        let (auth, reply) = try await client.open(arguments: #"key=a\;b\\c\=d;url=https://x/?a=b;empty="#, target: target)
        #expect(auth == [1, 0])
        #expect(reply == 0)
        #expect(transport.arguments == [TransportArguments(["key": #"a;b\c=d"#, "url": "https://x/?a=b", "empty": ""])])

        let payload = Array("through the PT".utf8)
        try await client.socket.write(payload)
        #expect(try await client.read(payload.count) == payload)
    }

    @Test func argumentsLongerThan255BytesAreSplitAcrossUsernameAndPassword() async throws {
        let echo = try LoopbackPeer(.echo)
        defer { echo.stop() }
        let transport = RecordingPlainTransport()
        let server = try PTSocksServer(transport: transport)
        defer { server.stop() }
        let target = try TransportEndpoint(parsing: "127.0.0.1:\(echo.port)")

        // Place an escape sequence so that byte 255 falls between `\` and `;`.
        let head = "a=" + String(repeating: "x", count: 252)              // 254 bytes
        let argumentString = head + #"\;y;b="# + String(repeating: "z", count: 240)
        #expect(argumentString.utf8.count > 255 && argumentString.utf8.count <= 510)
        #expect(Array(argumentString.utf8)[254] == UInt8(ascii: "\\"))
        var client = try await RawSocksClient.connect(to: server.endpoint)
        let (auth, reply) = try await client.open(arguments: argumentString, target: target)
        #expect(auth == [1, 0])
        #expect(reply == 0)
        let expected = TransportArguments(["a": String(repeating: "x", count: 252) + ";y", "b": String(repeating: "z", count: 240)])
        #expect(transport.arguments == [expected])
        // The type's own description round-trips.
        #expect(try TransportArguments(parsing: expected.description) == expected)
    }

    @Test func malformedArgumentsGetAnAuthenticationFailure() async throws {
        let transport = RecordingPlainTransport()
        let server = try PTSocksServer(transport: transport)
        defer { server.stop() }
        let target = try TransportEndpoint(parsing: "127.0.0.1:9")
        for bad in ["a=b;", "=b", "novalue", #"a=b\"#, "a;b=c", "reject=1"] {
            var client = try await RawSocksClient.connect(to: server.endpoint)
            let (auth, reply) = try await client.open(arguments: bad, target: target)
            #expect(auth == [1, 1], "arguments \(bad)")
            #expect(reply == nil)
            #expect(try await client.read(1).isEmpty, "the server closes after rejecting \(bad)")
        }
        #expect(transport.arguments.isEmpty)
    }

    @Test func badRequestsGetTheRightRepliesOrAClose() async throws {
        let transport = RecordingPlainTransport()
        let server = try PTSocksServer(transport: transport)
        defer { server.stop() }

        // SOCKS4 is refused by closing.
        var socks4 = try await RawSocksClient.connect(to: server.endpoint)
        try await socks4.socket.write([4, 1, 0, 80, 127, 0, 0, 1, 0])
        #expect(try await socks4.read(1).isEmpty)

        // No acceptable method.
        var noMethod = try await RawSocksClient.connect(to: server.endpoint)
        try await noMethod.socket.write([5, 1, 0x80])
        #expect(try await noMethod.read(2) == [5, 0xFF])

        // Empty username is refused (as lyrebird does).
        var emptyUser = try await RawSocksClient.connect(to: server.endpoint)
        try await emptyUser.socket.write([5, 1, 2])
        #expect(try await emptyUser.read(2) == [5, 2])
        try await emptyUser.socket.write([1, 0, 1, 0])
        #expect(try await emptyUser.read(2) == [1, 1])

        func afterAuthentication() async throws -> RawSocksClient {
            var client = try await RawSocksClient.connect(to: server.endpoint)
            try await client.socket.write([5, 1, 2])
            #expect(try await client.read(2) == [5, 2])
            try await client.socket.write(RawSocksClient.authentication(for: "k=v"))
            #expect(try await client.read(2) == [1, 0])
            return client
        }
        // BIND is not supported → 07.
        var bind = try await afterAuthentication()
        try await bind.socket.write([5, 2, 0, 1, 127, 0, 0, 1, 0, 80])
        #expect(try await bind.read(2) == [5, 7])
        // A domain name is not supported → 08.
        var domain = try await afterAuthentication()
        try await domain.socket.write([5, 1, 0, 3, 4] + Array("host".utf8) + [0, 80])
        #expect(try await domain.read(2) == [5, 8])
        // A closed port → connection refused (05).
        let closed = try LoopbackListener()
        let closedPort = closed.port
        closed.close()
        var refused = try await afterAuthentication()
        try await refused.socket.write(RawSocksClient.connectRequest(try TransportEndpoint(parsing: "127.0.0.1:\(closedPort)")))
        #expect(try await refused.read(2) == [5, 5])
        // A client that stalls mid-negotiation is dropped after the negotiation timeout.
        let quick = try PTSocksServer(transport: transport, negotiationTimeout: .milliseconds(300))
        defer { quick.stop() }
        var stalled = try await RawSocksClient.connect(to: quick.endpoint)
        try await stalled.socket.write([5])
        #expect(try await stalled.read(1).isEmpty)
    }

    @Test func argumentParserRoundTripsAndRejectsMalformedInput() throws {
        let arguments = TransportArguments(["cert": "AbC+/x==", "iat-mode": "0", #"we;ird=key\"#: #"v=a;l\ue"#])
        #expect(try TransportArguments(parsing: arguments.description) == arguments)
        #expect(try TransportArguments(parsing: "") == TransportArguments())
        #expect(try TransportArguments(parsing: "a=1;a=2")["a"] == "1")
        for bad in ["a=b;", "=b", "k", #"a=\"#, ";"] {
            #expect(throws: TransportError.self) { try TransportArguments(parsing: bad) }
        }
        #expect(TransportArguments(["cert": "secret"]).scrubbedDescription == "cert=[scrubbed]")
    }

    /// Found by PTSocksFuzzer (Fuzz/Regressions/PTSocksFuzzer/combining-mark-after-equals): "=" or
    /// ";" followed by a combining mark is one Swift Character, which the escaper compared as a whole
    /// and so left unescaped, while the parser splits on the byte. The key arrived cut in two.
    @Test func separatorsFollowedByCombiningMarksAreEscaped() throws {
        let arguments = TransportArguments([
            TransportArguments.Pair(key: "22222222222;==\u{08}iat-mode", value: ""),
            TransportArguments.Pair(key: "A;=\u{33F};", value: "x=\u{301}y;\u{301}z\\\u{301}"),
        ])
        #expect(arguments.description.unicodeScalars.filter { $0 == "\\" }.count == 10)
        #expect(try TransportArguments(parsing: arguments.description) == arguments)
    }

    @Test func endpointsAndNamesAreValidatedAndRoundTrip() throws {
        for text in ["127.0.0.1:443", "[2001:db8::1]:9443", "[::1]:1"] {
            #expect(try TransportEndpoint(parsing: text).description == text)
        }
        for bad in ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "example.org:443", "[::1:443", "1.2.3:4"] {
            #expect(throws: TransportError.self) { try TransportEndpoint(parsing: bad) }
        }
        #expect(TransportName("obfs4")?.description == "obfs4")
        #expect(TransportName("meek_lite") != nil)
        for bad in ["", "4obfs", "ob-fs4", "obfs 4"] { #expect(TransportName(bad) == nil) }
    }

    @Test func registryRejectsDuplicateNames() throws {
        var registry = try TransportRegistry([Obfs4Transport()])
        #expect(registry.names == [TransportName("obfs4")!])
        #expect { try registry.register(Obfs4Transport()) } throws: { ($0 as? TransportError)?.code == .duplicateTransport }
        #expect(registry.transport(named: TransportName("snowflake")!) == nil)
    }
}
