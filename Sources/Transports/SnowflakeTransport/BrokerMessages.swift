import PosternSystem
import Foundation

// Client–broker messages, protocol "1.0" (common/messages/client.go upstream).
//
// Poll request (client → broker), no trailing newline:
//
//     1.0 LF {"offer":"<SessionDescription as a JSON string>","nat":"<nat>","fingerprint":"<40 hex>"}
//
// The offer is double-encoded: the SessionDescription {"type":"offer","sdp":"..."} is serialised to
// a string and that string is embedded. Keys are written in this order, strings escaped the way Go's
// encoding/json does (which also turns <, >, & and U+2028/U+2029 into \u escapes), so that our bytes
// equal the Go client's.
//
// Poll response (broker → client): {"answer":"<SessionDescription as a string>"} or
// {"error":"<text>"}; a response with neither is an error. The answer must have "type" (offer,
// pranswer, answer or rollback) and "sdp".
//
// AMP-cache form: GET <broker>/amp/client/ + "0" + base64url(9 random bytes) + "/" +
// base64url(request), both base64url without padding; the response is an HTML page whose <pre>
// elements hold "0" + standard base64 (with padding) of the poll response, split by whitespace.
//
// Hostile input: what is parsed here is at most BrokerRendezvous.readLimit bytes; JSON goes through
// Foundation's parser (which refuses deep nesting with an error; checked with 100,000 levels), and
// anything that is not the expected shape is broker-message-malformed; no peer number meets
// arithmetic here. Decoding runs after BrokerRendezvous.exchangeDeadline has stopped counting, so
// its work must be bounded by the body alone: the AMP armor decoder is linear in it.

/// A WebRTC session description, as snowflake serialises it.
public struct SessionDescription: Hashable, Sendable {
    public static let knownTypes: Set<String> = ["offer", "pranswer", "answer", "rollback"]

    public var type: String
    public var sdp: String

    public init(type: String, sdp: String) {
        self.type = type
        self.sdp = sdp
    }

    /// `{"type":"...","sdp":"..."}` exactly as Go's json.Marshal writes it.
    public var serialized: String {
        "{\"type\":" + goJSONString(type) + ",\"sdp\":" + goJSONString(sdp) + "}"
    }

    /// Parses a serialised description, with upstream's checks (both keys, a known type).
    public init(serialized text: String) throws(SnowflakeError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw SnowflakeError(code: .brokerMessageMalformed, kind: .protocolViolation,
                                 message: "the session description is not a JSON object")
        }
        guard let type = object["type"] as? String, let sdp = object["sdp"] as? String else {
            throw SnowflakeError(code: .brokerMessageMalformed, kind: .protocolViolation,
                                 message: "the session description lacks a string type or sdp")
        }
        guard Self.knownTypes.contains(type) else {
            throw SnowflakeError(code: .brokerMessageMalformed, kind: .protocolViolation,
                                 message: "the session description has an unknown type")
        }
        self.init(type: type, sdp: sdp)
    }
}

/// The NAT type a client reports to the broker. `unknown` is always safe.
public struct NATType: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    private init(_ rawValue: String) { self.rawValue = rawValue }
    public static let unknown = NATType("unknown")
    public static let restricted = NATType("restricted")
    public static let unrestricted = NATType("unrestricted")
    public var description: String { rawValue }
}

/// The body of a client poll.
public struct ClientPollRequest: Hashable, Sendable {
    public static let protocolVersion = "1.0"
    /// What the Go client and the broker assume when no fingerprint is given (snowflake-01).
    public static let defaultFingerprint = "2B280B23E1107BB62ABFC40DDCC8824814F80A72"

    /// The serialised SessionDescription (a JSON document, embedded as a string).
    public var offer: String
    public var nat: NATType
    /// 40 (or 64) hex characters; empty means the default bridge.
    public var fingerprint: String

    public init(offer: SessionDescription, nat: NATType, fingerprint: String) {
        self.init(serializedOffer: offer.serialized, nat: nat, fingerprint: fingerprint)
    }

    public init(serializedOffer: String, nat: NATType, fingerprint: String) {
        self.offer = serializedOffer
        self.nat = nat
        self.fingerprint = fingerprint
    }

    /// "1.0\n" + JSON, byte for byte as the Go client encodes it.
    public var encoded: [UInt8] {
        let fingerprint = fingerprint.isEmpty ? Self.defaultFingerprint : fingerprint
        let json = "{\"offer\":" + goJSONString(offer) + ",\"nat\":" + goJSONString(nat.rawValue)
            + ",\"fingerprint\":" + goJSONString(fingerprint) + "}"
        return Array((Self.protocolVersion + "\n" + json).utf8)
    }
}

/// The broker's answer to a client poll.
public enum ClientPollResponse: Hashable, Sendable {
    case answer(SessionDescription)
    case error(String)

    /// Upstream's error texts.
    public static let noProxies = "no snowflake proxies currently available"
    public static let timedOut = "timed out waiting for answer!"

    public init(decoding body: [UInt8]) throws(SnowflakeError) {
        struct Wire: Decodable {
            var answer: String?
            var error: String?
        }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(body)) else {
            throw SnowflakeError(code: .brokerMessageMalformed, kind: .protocolViolation,
                                 message: "the broker's poll response is not valid JSON")
        }
        if let error = wire.error, !error.isEmpty {
            self = .error(error)
        } else if let answer = wire.answer, !answer.isEmpty {
            self = .answer(try SessionDescription(serialized: answer))
        } else {
            throw SnowflakeError(code: .brokerMessageMalformed, kind: .protocolViolation,
                                 message: "the broker's poll response has neither an answer nor an error")
        }
    }

    /// The answer, or a `refused` error carrying the broker's reason (its control characters made
    /// visible: the broker's text reaches logs, events files and terminals).
    public func requireAnswer() throws(SnowflakeError) -> SessionDescription {
        switch self {
        case .answer(let description): return description
        case .error(let reason):
            throw SnowflakeError(code: .brokerError, kind: .refused, message: "the broker refused: \(PlainText.visible(reason))")
        }
    }
}

/// The AMP-cache encodings: the request path and the HTML armor of the response.
public enum AMPEncoding {
    /// "0" + base64url(cacheBreaker) + "/" + base64url(data), no padding. Upstream uses 9 random bytes.
    public static func encodePath(_ data: [UInt8], cacheBreaker: [UInt8]) -> String {
        "0" + base64URLNoPadding(cacheBreaker) + "/" + base64URLNoPadding(data)
    }

    public static func encodePath(_ data: [UInt8]) -> String {
        var generator = SystemRandomNumberGenerator()
        return encodePath(data, cacheBreaker: (0..<9).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The data of an encoded path (everything up to the last "/" after the version is ignored).
    public static func decodePath(_ path: String) throws(SnowflakeError) -> [UInt8] {
        guard path.first == "0" else {
            throw SnowflakeError(code: .ampArmor, kind: .protocolViolation, message: "an AMP path lacks the format indicator 0")
        }
        guard let slash = path.lastIndex(of: "/") else {
            throw SnowflakeError(code: .ampArmor, kind: .protocolViolation, message: "an AMP path has no data part")
        }
        let raw = path[path.index(after: slash)...]
        guard !raw.contains("=") else {
            throw SnowflakeError(code: .ampArmor, kind: .protocolViolation, message: "an AMP path is not unpadded base64url")
        }
        var text = raw.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.utf8.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text) else {
            throw SnowflakeError(code: .ampArmor, kind: .protocolViolation, message: "an AMP path is not base64url")
        }
        return Array(data)
    }

    /// Decodes AMP armor: the whitespace-separated text of every <pre> element, concatenated, must be
    /// "0" + standard base64. Nested <pre> or a stray </pre> is an error, as upstream. Comments,
    /// declarations and the raw text of <style>/<script> are skipped; character references are not
    /// decoded (the broker's encoder never writes any inside <pre>).
    public static func decodeArmor(_ html: [UInt8]) throws(SnowflakeError) -> [UInt8] {
        func fail(_ message: String) -> SnowflakeError {
            SnowflakeError(code: .ampArmor, kind: .protocolViolation, message: "AMP armor: \(message)")
        }
        var payload: [UInt8] = []
        var inPre = false
        var index = 0
        let count = html.count
        /// Whether `needle` (lower case) starts at `position`: a look at needle.count bytes, no more.
        func matches(_ needle: [UInt8], at position: Int) -> Bool {
            guard needle.count <= count - position else { return false }
            return html[position..<(position + needle.count)].elementsEqual(needle, by: { asciiLower($0) == $1 })
        }
        /// The first `needle` at or after `start`. Every caller moves `index` past what this
        /// scanned or fails, so the whole decode stays linear in the body.
        func find(_ needle: [UInt8], from start: Int) -> Int? {
            guard needle.count <= count - start else { return nil }
            var i = start
            while i <= count - needle.count {
                if matches(needle, at: i) { return i }
                i += 1
            }
            return nil
        }
        while index < count {
            let byte = html[index]
            if byte != UInt8(ascii: "<") {
                if inPre && !isASCIIWhitespace(byte) { payload.append(byte) }
                index += 1
                continue
            }
            // Comment, declaration or processing instruction: skipped whole.
            // A prefix check, not a search: searching from every "<" rescanned the rest of the
            // body each time, quadratic in a body of "<" (issue #24).
            if matches(Array("<!--".utf8), at: index) {
                guard let end = find(Array("-->".utf8), from: index + 4) else { throw fail("unterminated comment") }
                index = end + 3
                continue
            }
            let next = index + 1 < count ? html[index + 1] : 0
            if next == UInt8(ascii: "!") || next == UInt8(ascii: "?") {
                guard let end = find([UInt8(ascii: ">")], from: index) else { throw fail("unterminated declaration") }
                index = end + 1
                continue
            }
            let isEnd = next == UInt8(ascii: "/")
            var nameEnd = index + (isEnd ? 2 : 1)
            let nameStart = nameEnd
            while nameEnd < count, isASCIILetterOrDigit(html[nameEnd]) { nameEnd += 1 }
            if nameEnd == nameStart {
                // "<" not followed by a tag name is text.
                if inPre { payload.append(byte) }
                index += 1
                continue
            }
            let name = String(decoding: html[nameStart..<nameEnd].map(asciiLower), as: UTF8.self)
            guard let close = find([UInt8(ascii: ">")], from: nameEnd) else { throw fail("unterminated tag") }
            index = close + 1
            switch (name, isEnd) {
            case ("pre", false):
                if inPre { throw fail("nested <pre>") }
                inPre = true
            case ("pre", true):
                if !inPre { throw fail("stray </pre>") }
                inPre = false
            case ("style", false), ("script", false):
                guard let end = find(Array("</\(name)".utf8), from: index) else { throw fail("unterminated <\(name)>") }
                index = end
            default:
                break
            }
        }
        if inPre { throw fail("missing </pre>") }
        guard payload.first == UInt8(ascii: "0") else {
            throw fail(payload.isEmpty ? "no data" : "unknown version")
        }
        guard let data = Data(base64Encoded: Data(payload.dropFirst())) else { throw fail("the data is not base64") }
        return Array(data)
    }
}

/// A Swift string as Go's encoding/json writes it (HTML-safe escaping, Go 1.19 rules).
func goJSONString(_ string: String) -> String {
    QuotedText.quoted(string) { scalar in
        switch scalar {
        case "<", ">", "&", "\u{2028}", "\u{2029}": QuotedText.jsonUnicodeEscape(scalar)
        case let control where control.value < 0x20: QuotedText.jsonUnicodeEscape(control)
        default: nil
        }
    }
}

func base64URLNoPadding(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

func asciiLower(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
func isASCIIWhitespace(_ byte: UInt8) -> Bool { byte == 0x09 || byte == 0x0a || byte == 0x0c || byte == 0x0d || byte == 0x20 }
func isASCIILetterOrDigit(_ byte: UInt8) -> Bool {
    (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
}
