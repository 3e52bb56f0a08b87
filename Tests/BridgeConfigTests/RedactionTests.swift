import PosternLinkSpec
import Testing
@testable import BridgeConfig

@Suite("Redaction")
struct RedactionTests {
    let line = try! BridgeLine(validating: "webtunnel [2001:db8::1]:443 \(Sample.fingerprint) url=https://example.org/secretpath ver=0.0.1")

    @Test func safeDescriptionScrubsAddressFingerprintAndURL() {
        let text = Redacted(line, policy: .safe).description
        #expect(text == "webtunnel [scrubbed] [scrubbed] url=[scrubbed] ver=0.0.1")
        for secret in ["2001:db8::1", Sample.fingerprint, "example.org", "secretpath"] {
            #expect(!text.contains(secret))
        }
    }

    @Test func unsafeDescriptionIsTheLine() {
        #expect(Redacted(line, policy: .unsafe).description == line.description)
    }

    @Test func obfs4CertIsScrubbed() throws {
        let obfs4 = try BridgeLine(validating: Sample.obfs4)
        let text = obfs4.description(policy: .safe)
        #expect(text == "obfs4 [scrubbed] [scrubbed] cert=[scrubbed] iat-mode=0")
        #expect(!text.contains(Sample.cert))
    }

    @Test func storedBridgeAndPlainValuesAreScrubbed() throws {
        let stored = StoredBridge(id: try BridgeID(validating: "a1b2c3"), line: try BridgeLine(validating: Sample.obfs4), isEnabled: true)
        let text = Redacted(stored, policy: .safe).description
        #expect(text.hasPrefix("a1b2c3 on "))
        #expect(!text.contains("198.51.100.7"))
        #expect(Redacted("198.51.100.7:443", policy: .safe).description == "[scrubbed]")
        #expect(Redacted(line.address, policy: .safe).description == "[scrubbed]")
        #expect(Redacted(line.address, policy: .unsafe).description == "[2001:db8::1]:443")
    }

    @Test func parserErrorsDoNotEchoTheWordUnderSafeLogging() {
        let bad = "obfs4 198.51.100.7:443 \(Sample.fingerprint) cert=\(Sample.cert)X iat-mode=0"
        do {
            _ = try BridgeLine(validating: bad, logging: .safe)
            Issue.record("accepted a 71-character cert")
        } catch {
            #expect(error.message == "word 4 (cert): an obfs4 cert is 70 characters of base64 that decode to 52 bytes")
            #expect(!error.message.contains(Sample.cert))
            #expect(!error.message.contains("198.51.100.7"))
        }
        do {
            _ = try BridgeLine(validating: bad, logging: .unsafe)
        } catch {
            #expect(error.message.contains(Sample.cert))
        }
    }

    @Test func aCertPastedWithoutItsKeyDoesNotLeakAsAKey() {
        // A cert with padding pasted alone looks like "key=value" with the cert as the key.
        let text = "obfs4 198.51.100.7:443 \(Sample.fingerprint) \(Sample.cert)== iat-mode=0 \(Sample.cert)=="
        do {
            _ = try BridgeLine(validating: text)
            Issue.record("accepted")
        } catch {
            #expect(!error.message.contains(String(Sample.cert.prefix(20))))
        }
    }

    @Test func aFingerprintInTransportPositionIsScrubbed() throws {
        // A fingerprint that starts with a letter is a valid C identifier, hence a "transport".
        let fingerprint = "ABCDEF0123456789ABCDEF0123456789ABCDEF01"
        let paste = BridgePaste.parse("\(fingerprint)\n\(fingerprint) 192.0.2.1:443")
        #expect(paste.rejected.map(\.message) == ["line 1: the line names the transport [scrubbed] but has no address after it"])
        #expect(paste.warnings.map(\.message) == ["line 2: the transport [scrubbed] is not one Postern knows; its arguments were not checked and it needs a transport plugin of that name"])
        #expect(paste.accepted.first?.line.description(policy: .safe) == "[scrubbed] [scrubbed]")
        for message in allMessages(paste) { #expect(!message.contains(fingerprint)) }
        #expect(BridgePaste.parse(fingerprint, logging: .unsafe).rejected.first?.message.contains(fingerprint) == true)
    }

    @Test func aKeyThatHoldsAnAddressIsScrubbed() throws {
        // Fuzzer find: an unknown transport keeps unknown keys, and a mangled paste made an address
        // part of a key.
        let line = try BridgeLine(validating: "conjure 198.51.100.80:80 url=https://r.example 198.51.100.80:80port=prefix")
        let text = line.description(policy: .safe)
        #expect(text == "conjure [scrubbed] url=[scrubbed] [scrubbed]=[scrubbed]")
        #expect(!text.contains("198.51.100.80"))
    }
}
