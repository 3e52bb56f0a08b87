// libFuzzer harness for the bridge-line parser, the paste reader and the relay normalizer.
// Besides "no crash", it checks the invariants the rest of Postern relies on, and traps if one
// breaks so libFuzzer saves the input:
//   - every accepted line round-trips through its description;
//   - the scrubbed description of an accepted line never contains its address or fingerprint;
//   - safe-mode errors and warnings never contain an accepted line's address;
//   - safe-mode messages never contain a long base64/hex-like run (25+ characters) of the input,
//     which is what certs, fingerprints and keys look like;
//   - relay normalization is idempotent.
import BridgeConfig

@_cdecl("LLVMFuzzerTestOneInput")
public func bridgeParserFuzzTest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

    let paste = BridgePaste.parse(text, logging: .safe)
    let messages = paste.rejected.map(\.message) + paste.warnings.map(\.message) + paste.notes.map(\.message)
    for accepted in paste.accepted {
        let line = accepted.line
        guard let reparsed = BridgeLine(line.description), reparsed == line,
              reparsed.description == line.description else {
            fatalError("round trip failed")
        }
        let scrubbed = line.description(policy: .safe)
        if scrubbed.contains(line.address.description) { fatalError("address in scrubbed description") }
        if let fingerprint = line.fingerprint, scrubbed.contains(fingerprint.hex) { fatalError("fingerprint in scrubbed description") }
        // The one address that message text itself shows as an example.
        if line.address.description != "[2001:db8::1]:443",
           messages.contains(where: { $0.contains(line.address.description) }) { fatalError("address in a message") }
    }
    for message in messages {
        // Notes name skipped torrc options from a fixed list; one of them is long enough to count.
        for run in longRuns(in: message) where text.contains(run) && run.lowercased() != "updatebridgesfromauthority" {
            fatalError("a long word of the input in a message")
        }
    }
    _ = BridgePaste.parse(text, logging: .unsafe)
    _ = try? BridgeLine.parse(text)

    if let relay = NostrRelayURL(text) {
        guard let again = NostrRelayURL(relay.rawValue), again == relay else { fatalError("relay normalization not idempotent") }
    }
    return 0
}

/// Maximal runs of base64/hex characters at least 25 long.
func longRuns(in message: String) -> [Substring] {
    message.split { !($0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/")) }.filter { $0.count >= 25 }
}
