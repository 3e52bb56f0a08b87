import Foundation
import Testing
@testable import BridgeConfig
@testable import PosternLinkSpec

@Suite("Golden paste corpus")
struct GoldenCorpusTests {
    @Test func corpusIsLargeAndCoversBothOutcomes() throws {
        let names = Corpus.caseNames
        #expect(names.count >= 60)
        var accepted = 0, rejected = 0
        for name in names {
            let paste = BridgePaste.parse(try Corpus.input(name))
            accepted += paste.accepted.count
            rejected += paste.rejected.count
        }
        #expect(accepted >= 60)
        #expect(rejected >= 30)
    }

    @Test(arguments: Corpus.caseNames)
    func pasteMatchesExpectedResult(name: String) throws {
        let paste = BridgePaste.parse(try Corpus.input(name))
        let rendered = goldenRendering(paste)
        if ProcessInfo.processInfo.environment["POSTERN_RECORD_GOLDEN"] == "1" {
            try Data(rendered.utf8).write(to: Corpus.sourceDirectory.appendingPathComponent(name + ".expected"))
            Issue.record("recorded \(name).expected; review it and run again without POSTERN_RECORD_GOLDEN")
            return
        }
        #expect(rendered == (try Corpus.expected(name)), "\(name)")
    }

    @Test(arguments: Corpus.caseNames)
    func everyAcceptedLineRoundTrips(name: String) throws {
        for accepted in BridgePaste.parse(try Corpus.input(name)).accepted {
            let line = accepted.line
            let reparsed = try BridgeLine(validating: line.description)
            #expect(reparsed == line)
            #expect(reparsed.description == line.description)
            // The torrc form, with its keyword, reads back too.
            #expect(try BridgeLine(validating: line.torrcLine) == line)
        }
    }

    @Test(arguments: Corpus.caseNames)
    func safeMessagesNeverContainSecrets(name: String) throws {
        let input = try Corpus.input(name)
        let paste = BridgePaste.parse(input, logging: .safe)
        var secrets = secretLookingTokens(in: input)
        for accepted in paste.accepted {
            secrets.insert(accepted.line.address.description)
            if let fingerprint = accepted.line.fingerprint { secrets.insert(fingerprint.hex) }
            // Values that are also key names (registrar=ampcache) cannot be told apart from the key.
            let keys = Set(accepted.line.arguments.keys)
            for argument in accepted.line.arguments where argument.value.count >= 6
                && !BridgeArgument.nonSecretKeys.contains(argument.key) && !keys.contains(argument.value) {
                secrets.insert(argument.value)
            }
        }
        for message in allMessages(paste) {
            for secret in secrets {
                #expect(!message.contains(secret), "\(name): a message shows a secret")
            }
        }
        for accepted in paste.accepted {
            let scrubbed = Redacted(accepted.line, policy: .safe).description
            for secret in secrets { #expect(!scrubbed.contains(secret), "\(name): scrubbed line shows a secret") }
        }
    }

    @Test func unsafeLoggingShowsTheOffendingWord() throws {
        let input = try Corpus.input("case-43")
        let cert = input.split(separator: " ").first { $0.hasPrefix("cert=") }!
        let safe = BridgePaste.parse(input, logging: .safe).rejected
        let unsafe = BridgePaste.parse(input, logging: .unsafe).rejected
        #expect(safe.count == 1 && unsafe.count == 1)
        #expect(!safe[0].message.contains(cert.dropFirst(5)))
        #expect(unsafe[0].message.contains(String(cert)))
        #expect(unsafe[0].code == safe[0].code)
    }
}
