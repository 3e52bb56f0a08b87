// libFuzzer harness for the bridge-line parser, the paste reader and the relay normalizer.
// Besides "no crash", it checks the invariants the rest of Postern relies on, and traps if one
// breaks so libFuzzer saves the input:
//   - every accepted line round-trips through its description;
//   - the scrubbed description of an accepted line never contains its address or fingerprint;
//   - safe-mode errors and warnings never contain an accepted line's address;
//   - safe-mode messages never contain a long base64/hex-like run (25+ characters) of the input,
//     which is what certs, fingerprints and keys look like;
//   - relay normalization is idempotent.
//
// Lines are checked with Postern's full rulebook (PosternRuntime's Transports.argumentRules), so
// the transports' own argument rules get the hostile input too.
import BridgeConfig
import Foundation
import FuzzSupport
import PosternLinkSpec
import PosternRuntime

func checkBridgePaste(_ input: UnsafeRawBufferPointer) {
    let text = String(decoding: input, as: UTF8.self)
    let rules = Transports.argumentRules

    let paste = BridgePaste.parse(text, rules: rules, logging: .safe)
    let messages = paste.rejected.map(\.message) + paste.warnings.map(\.message) + paste.notes.map(\.message)
    for accepted in paste.accepted {
        let line = accepted.line
        let reparsed = try? BridgeLine(validating: line.description, rules: rules)
        fuzzCheck(reparsed == line && reparsed?.description == line.description, "round trip failed")
        let scrubbed = line.description(policy: .safe)
        fuzzCheck(!scrubbed.contains(line.address.description), "address in scrubbed description")
        if let fingerprint = line.fingerprint { fuzzCheck(!scrubbed.contains(fingerprint.hex), "fingerprint in scrubbed description") }
        // The one address that message text itself shows as an example is taken out first: an
        // accepted "[2001:db8::1]:4" is a prefix of it, not a leak.
        let leaking = messages.filter { $0.replacingOccurrences(of: "[2001:db8::1]:443", with: "").contains(line.address.description) }
        fuzzCheck(leaking.isEmpty, "address \(line.address.description) in a message: \(leaking)")
    }
    for message in messages {
        // Notes name skipped torrc options from a fixed list; one of them is long enough to count.
        for run in longRuns(in: message) where run.lowercased() != "updatebridgesfromauthority" {
            fuzzCheck(!text.contains(run), "a long word of the input in a message")
        }
    }
    _ = BridgePaste.parse(text, rules: rules, logging: .unsafe)
    _ = try? BridgeLine.parse(text, rules: rules)
    _ = BridgePaste.parse(text, rules: .syntaxOnly, logging: .safe)

    if let relay = NostrRelayURL(text) {
        fuzzCheck(NostrRelayURL(relay.rawValue) == relay, "relay normalization not idempotent")
    }
}

/// Maximal runs of base64/hex characters at least 25 long.
func longRuns(in message: String) -> [Substring] {
    message.split { !($0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/")) }.filter { $0.count >= 25 }
}

runFuzzer(checkBridgePaste)
