import Foundation
import Testing
@testable import ConnectionAssist
@testable import PosternTor
@testable import PosternRuntime

/// Options added after the core's own command line (`--tor-options-file`, TorConfiguration.options)
/// may not open a control port or a public listener, nor take over the log or the data directory.
@Suite struct TorOptionPolicyTests {
    /// Each line is refused, and the error names the line and the option as written.
    @Test(arguments: [
        "ControlPort 9051", "controlport 127.0.0.1:9051", "ControlSocket /tmp/tor-control", "HashedControlPassword 16:ABCD",
        "CookieAuthentication 1", "__OwningControllerProcess 1", "__ControlPort 9052", "_HSLayer2Nodes x",
        "SocksPort 0.0.0.0:9050", "SocksPort 192.0.2.1:9050 IsolateDestAddr", "SocksPort unix:/tmp/socks", "SocksPort 0",
        "socksport [2001:db8::1]:9050", "DNSPort 0.0.0.0:53", "TransPort 10.0.0.1:9040", "HTTPTunnelPort 0.0.0.0:8118",
        "ORPort 9001", "DirPort 9030", "ExtORPort 127.0.0.1:9000", "MetricsPort 127.0.0.1:9035",
        "Log notice stdout", "l notice file /tmp/t.log", "SafeLogging 0", "LogMessageDomains 1",
        "DataDirectory /tmp/elsewhere", "RunAsDaemon 1", "ClientOnly 0", "User nobody",
        "ControlP 9051", "Cont 9051", "SocksP 0.0.0.0:9050",
        "CacheDirectory /tmp/elsewhere", "CacheDirectoryGroupReadable 1", "KeyDirectory /tmp/keys", "KeyDirectoryGroupReadable 1",
    ])
    func refusedLineIsNamed(_ line: String) {
        let key = String(line.split(separator: " ")[0])
        #expect {
            _ = try TorOption.parseLines("# test network\nTestingTorNetwork 1\n\(line)\n")
        } throws: { error in
            guard let error = error as? TorCoreError else { return false }
            return error.kind == .usage && error.code == .invalidConfiguration
                && error.message.hasPrefix("line 3: \(key) ") && error.message.contains("refused")
        }
    }

    /// The value of a refused listener (it may be a private address) is not repeated.
    @Test func refusalDoesNotQuoteTheValue() throws {
        let refusal = TorOptionPolicy.refusal(of: try TorOption("SocksPort", "198.51.100.7:9050"))
        #expect(refusal != nil)
        #expect(refusal?.contains("198.51.100.7") == false)
    }

    /// What test networks and users need still passes: loopback listeners, client options.
    @Test(arguments: [
        "SocksPort 9150", "SocksPort auto", "SocksPort 127.0.0.1:9150 IsolateSOCKSAuth", "SocksPort [::1]:9150",
        "DNSPort 127.0.0.53:5353", "TransPort 9040", "TestingTorNetwork 1", "DisableNetwork 1",
        "DirAuthority a orport=5000 no-v2 127.0.1.1:7000 ABCD", "UseBridges 1", "SocksTimeout 10", "SafeSocks 1",
        "LogTimeGranularity 1000", "DirPortFrontPage /tmp/x", "ClientUseIPv6 1",
    ])
    func allowedLinePasses(_ line: String) throws {
        #expect(try TorOption.parseLines(line).count == 1)
    }

    /// Resetting an option to tor's default (SETCONF with no value) meets the rule too: tor's
    /// default log is notices on stdout and its default SocksPort 9050. The keys connection assist
    /// resets pass; a key that is not an option name cannot reach the control protocol.
    @Test func resettingAGuardedOptionIsRefused() {
        for key in ["Log", "log", "SafeLogging", "SocksPort", "ControlPort", "__OwningControllerProcess", "CacheDirectoryGroupReadable", "Soc"] {
            #expect(TorOptionPolicy.refusal(ofResetting: key) != nil, "\(key)")
        }
        #expect(TorOptionPolicy.refusal(ofResetting: "Bridge\r\nSIGNAL HALT") != nil)
        #expect(TorOptionPolicy.refusal(ofResetting: "") != nil)
        for key in RoutePlan.liveKeys {
            #expect(TorOptionPolicy.refusal(ofResetting: key) == nil, "\(key)")
        }
    }

    /// A library caller that builds options itself meets the same rule when tor starts.
    @Test func managerRefusesAControlPortBeforeTorStarts() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-policy-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = TorConfiguration(dataDirectory: directory, socks: try .automatic(),
                                             options: [try TorOption("ControlPort", "127.0.0.1:9051")])
        let manager = TorManager()
        await #expect {
            try await manager.start(configuration)
        } throws: { error in
            (error as? TorCoreError)?.code == .invalidConfiguration && "\(error)".contains("ControlPort")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path), "nothing was prepared for tor")
    }
}
