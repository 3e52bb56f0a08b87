import Foundation
import PosternLinkSpec
import Testing
import TransportBase
@testable import Obfs4Transport

/// One implementation of obfs4's argument rules: a bridge line and tor's SOCKS arguments are
/// refused for the same reason, and accepted into the same configuration.
@Suite struct Obfs4ArgumentRulesTests {
    let rules = BridgeArgumentRulebook([Obfs4ArgumentRules()])
    static let cert = Obfs4BadInputTests.goodCert

    @Test(arguments: [
        ("cert=\(String(cert.dropLast())) iat-mode=0", BridgeLineError.Code.badCert),
        ("cert=\(cert)", .missingIATMode),
        ("cert=\(cert) iat-mode=3", .badIATMode),
        ("iat-mode=0", .missingCert),
        ("node-id=0011 public-key=\(String(repeating: "ab", count: 32)) iat-mode=0", .badNodeID),
    ])
    func lineAndSocksArgumentsAreRefusedForTheSameReason(words: String, code: BridgeLineError.Code) throws {
        let lineError = try #require(throws: BridgeLineError.self) {
            try BridgeLine.parse("obfs4 192.0.2.1:443 \(words)", rules: rules)
        }
        #expect(lineError.code == code)
        let pairs = words.split(separator: " ").map { word -> TransportArguments.Pair in
            let parts = word.split(separator: "=", maxSplits: 1)
            return TransportArguments.Pair(key: String(parts[0]), value: String(parts[1]))
        }
        let socksError = try #require(throws: TransportError.self) {
            try Obfs4Transport().configuration(from: TransportArguments(pairs))
        }
        #expect(socksError.code == .invalidArguments)
        // "word 3 (cert): REASON" or, for a missing argument, "REASON"; at dial time "cert: REASON".
        let reason = lineError.message.range(of: "): ").map { String(lineError.message[$0.upperBound...]) } ?? lineError.message
        #expect(socksError.message.hasSuffix(": " + reason), "\(socksError.message) / \(lineError.message)")
    }

    @Test func aPaddedCertIsNormalisedInTheLineAndReadTheSameAtDialTime() throws {
        let line = try BridgeLine(validating: "obfs4 192.0.2.1:443 cert=\(Self.cert)== iat-mode=1", rules: rules)
        #expect(line.arguments["cert"] == Self.cert)
        let fromLine = try Obfs4BridgeConfiguration(arguments: TransportArguments(line.arguments.map { .init(key: $0.key, value: $0.value) }))
        let fromSocks = try Obfs4BridgeConfiguration(arguments: TransportArguments(["cert": Self.cert + "==", "iat-mode": "1"]))
        #expect(fromLine == fromSocks && fromLine.certArgument == Self.cert && fromLine.iatMode == .enabled)
    }
}
