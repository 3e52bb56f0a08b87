// The SDP a snowflake client offers and the parts of the proxy's answer it needs (RFC 8866 syntax,
// RFC 8839 ICE attributes, RFC 8841 SCTP-over-DTLS, RFC 8122 fingerprints).
//
// Offer (non-trickle: every candidate is in it, ended by a=end-of-candidates), one data-channel
// media section, shaped like pion's offer (the reference client's; PionOfferShape says field by
// field) so that proxies (pion, browsers) take it and see what every other snowflake user sends:
//
//     v=0 / o=- <id> <Unix time> IN IP4 0.0.0.0 / s=- / t=0 0
//     a=fingerprint:sha-256 <our DTLS certificate digest, colon-separated upper-case hex>
//     a=extmap-allow-mixed
//     a=group:BUNDLE 0
//     m=application 9 UDP/DTLS/SCTP webrtc-datachannel / c=IN IP4 0.0.0.0
//     a=setup:actpass / a=mid:0 / a=sendrecv / a=sctp-port:5000
//     a=ice-ufrag:<ufrag> / a=ice-pwd:<pwd> / a=candidate:... (pion's form) / a=end-of-candidates
//
// The proxy answers a=setup:active: it is the DTLS client, we are the DTLS server.
//
// Hostile input (the answer is the proxy's, relayed by the broker): numbers are parsed by the
// checked initialisers (UInt32, UInt16, Int: an out-of-range value is a typed error or ignored, never
// a trap); the answer is at most BrokerRendezvous.readLimit bytes, and WebRTCDataChannel takes at
// most DataChannelProtocol.answerCandidateLimit candidates from it.

/// An ICE candidate line's fields (RFC 8839 section 5.1).
public struct ICECandidate: Hashable, Sendable {
    public var foundation: String
    public var component: Int
    public var transport: String
    public var priority: UInt32
    public var address: String
    public var port: UInt16
    public var type: String
    public var relatedAddress: String?
    public var relatedPort: UInt16?

    public init(foundation: String, component: Int, transport: String = "udp", priority: UInt32, address: String,
                port: UInt16, type: String, relatedAddress: String? = nil, relatedPort: UInt16? = nil) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.address = address
        self.port = port
        self.type = type
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
    }

    /// The value after "a=candidate:".
    public var attributeValue: String {
        var text = "\(foundation) \(component) \(transport) \(priority) \(address) \(port) typ \(type)"
        if let relatedAddress, let relatedPort { text += " raddr \(relatedAddress) rport \(relatedPort)" }
        return text
    }

    public init(attributeValue text: String) throws(SnowflakeError) {
        let words = text.split(separator: " ").map(String.init)
        guard words.count >= 8, words[6] == "typ", let component = Int(words[1]), let priority = UInt32(words[3]),
              let port = UInt16(words[5]) else {
            throw SnowflakeError(code: .brokerMessageMalformed, kind: .protocolViolation, message: "the snowflake proxy's answer has a malformed ICE candidate line")
        }
        self.init(foundation: words[0], component: component, transport: words[2].lowercased(), priority: priority,
                  address: words[4], port: port, type: words[7])
        var index = 8
        while index + 1 < words.count {
            switch words[index] {
            case "raddr": relatedAddress = words[index + 1]
            case "rport": relatedPort = UInt16(words[index + 1])
            default: break
            }
            index += 2
        }
    }
}

/// What our offer says about us.
public struct DataChannelOffer: Hashable, Sendable {
    public var sessionID: UInt64
    /// The `o=` line's session version: the Unix time of the offer, as pion writes it.
    public var sessionVersion: UInt64
    public var iceUsernameFragment: String
    public var icePassword: String
    /// SHA-256 digest of our DTLS certificate (32 bytes).
    public var certificateDigest: [UInt8]
    /// The candidates as the ICE agent gathered them; the offer writes them in pion's form.
    public var candidates: [ICECandidate]
    public var sctpPort: Int = 5000

    public init(sessionID: UInt64 = UInt64.random(in: 1...UInt64(Int64.max)),
                sessionVersion: UInt64? = nil, iceUsernameFragment: String,
                icePassword: String, certificateDigest: [UInt8], candidates: [ICECandidate]) {
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion ?? PionOfferShape.sessionVersion()
        self.iceUsernameFragment = iceUsernameFragment
        self.icePassword = icePassword
        self.certificateDigest = certificateDigest
        self.candidates = candidates
    }

    public var sdp: String {
        var lines = [
            "v=0",
            "o=- \(sessionID) \(sessionVersion) IN IP4 0.0.0.0",
            "s=-",
            "t=0 0",
            "a=fingerprint:sha-256 " + fingerprintText(certificateDigest),
            "a=extmap-allow-mixed",
            "a=group:BUNDLE 0",
            "m=application 9 UDP/DTLS/SCTP webrtc-datachannel",
            "c=IN IP4 0.0.0.0",
            "a=setup:actpass",
            "a=mid:0",
            "a=sendrecv",
            "a=sctp-port:\(sctpPort)",
            "a=ice-ufrag:\(iceUsernameFragment)",
            "a=ice-pwd:\(icePassword)",
        ]
        lines += PionOfferShape.candidateLines(candidates).map { "a=candidate:" + $0 }
        lines.append("a=end-of-candidates")
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    public var sessionDescription: SessionDescription { SessionDescription(type: "offer", sdp: sdp) }

    /// Random ICE credentials as pion makes them: letters only, ufrag 16, password 32 (RFC 8839
    /// needs at least 4 and 22 ice-chars).
    public static func randomCredentials() -> (usernameFragment: String, password: String) {
        let alphabet = PionOfferShape.iceCharacters
        var generator = SystemRandomNumberGenerator()
        func word(_ n: Int) -> String { String((0..<n).map { _ in alphabet.randomElement(using: &generator)! }) }
        return (word(16), word(32))
    }
}

/// The proxy's answer, reduced to what the client needs.
public struct DataChannelAnswer: Hashable, Sendable {
    public var iceUsernameFragment: String
    public var icePassword: String
    public var fingerprintAlgorithm: String
    public var certificateDigest: [UInt8]
    /// "active" (the proxy will be the DTLS client), "passive" or "actpass".
    public var setup: String
    public var sctpPort: Int
    public var candidates: [ICECandidate]

    public init(sdp: String) throws(SnowflakeError) {
        func fail(_ what: String) -> SnowflakeError {
            SnowflakeError(code: .brokerMessageMalformed, kind: .protocolViolation, message: "the proxy's answer \(what)")
        }
        var ufrag: String?, pwd: String?, fingerprint: (String, [UInt8])?, setup: String?
        var sctpPort = 5000
        var candidates: [ICECandidate] = []
        var sawApplication = false
        for rawLine in sdp.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = rawLine.trimmingSuffix("\r")
            if line.hasPrefix("m=") { sawApplication = sawApplication || line.hasPrefix("m=application") }
            guard line.hasPrefix("a=") else { continue }
            let attribute = line.dropFirst(2)
            let name = attribute.prefix { $0 != ":" }
            let value = attribute.count > name.count ? String(attribute.dropFirst(name.count + 1)) : ""
            switch name {
            case "ice-ufrag": ufrag = value
            case "ice-pwd": pwd = value
            case "setup": setup = value
            case "sctp-port": sctpPort = Int(value) ?? sctpPort
            case "candidate": candidates.append(try ICECandidate(attributeValue: value))
            case "fingerprint":
                let parts = value.split(separator: " ")
                guard parts.count == 2 else { throw fail("has a malformed fingerprint") }
                let bytes = parts[1].split(separator: ":").compactMap { UInt8($0, radix: 16) }
                guard bytes.count == parts[1].split(separator: ":").count, !bytes.isEmpty else {
                    throw fail("has a malformed fingerprint")
                }
                fingerprint = (parts[0].lowercased(), bytes)
            default: break
            }
        }
        guard sawApplication else { throw fail("has no data-channel media section") }
        guard let ufrag, let pwd else { throw fail("lacks ICE credentials") }
        guard let fingerprint else { throw fail("lacks a DTLS fingerprint") }
        iceUsernameFragment = ufrag
        icePassword = pwd
        fingerprintAlgorithm = fingerprint.0
        certificateDigest = fingerprint.1
        self.setup = setup ?? "active"
        self.sctpPort = sctpPort
        self.candidates = candidates
    }
}

func fingerprintText(_ digest: [UInt8]) -> String {
    digest.map { hexByte($0).uppercased() }.joined(separator: ":")
}

private extension Substring {
    func trimmingSuffix(_ suffix: String) -> Substring { hasSuffix(suffix) ? dropLast(suffix.count) : self }
}
