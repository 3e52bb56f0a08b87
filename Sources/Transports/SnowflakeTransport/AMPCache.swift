import PosternCrypto
import Foundation

// AMP cache URLs (upstream common/amp/cache.go, after the AMP project's "AMP cache URL format").
//
// A request for the publisher (broker) URL  SCHEME://HOST/PATH  through the cache at
// CACHESCHEME://CACHEHOST[:PORT]/CACHEPATH  goes to
//
//     CACHESCHEME://PREFIX.CACHEHOST[:PORT]/ join(CACHEPATH, "c", ["s" when SCHEME is https], HOST, PATH)
//
// where join is Go's path.Join (slashes collapsed, "." and ".." resolved, no trailing slash) and
// PREFIX is the domain prefix of HOST: "-" doubled, "." turned into "-", wrapped as "0-…-0" when
// characters 3 and 4 are "--"; if that is longer than 63 characters, the lower-case base32 (no
// padding) of SHA-256(HOST) instead. The broker URL must use its scheme's default port and carry
// no user information; the cache URL must have no query or fragment.
//
// Internationalised host names (non-ASCII, or punycode "xn--" labels) would need IDNA processing
// to match upstream byte for byte; they are refused with a clear error instead of guessed.
public enum AMPCacheURL {
    /// The pieces of a rewritten request: where it goes and what it asks for.
    public struct Rewritten: Hashable, Sendable {
        /// "https" or "http": the cache's scheme.
        public var scheme: String
        /// PREFIX.CACHEHOST, as it goes into the Host header and (without fronting) the connection.
        public var host: String
        /// The cache URL's port when it names one.
        public var port: Int?
        /// The escaped path, starting with "/".
        public var path: String
    }

    /// The cache's version of `brokerURL` (whose path is already escaped, e.g. "/amp/client/0…/…").
    public static func rewrite(brokerScheme: String, brokerHost: String, brokerPort: Int?, brokerPath: String,
                               cache: URL) throws(SnowflakeError) -> Rewritten {
        func invalid(_ message: String) -> SnowflakeError {
            SnowflakeError(code: .brokerURL, kind: .invalidInput, message: message)
        }
        let scheme = brokerScheme.lowercased()
        guard scheme == "http" || scheme == "https" else { throw invalid("the broker URL must be http or https for an AMP cache") }
        if let brokerPort, !(scheme == "http" && brokerPort == 80 || scheme == "https" && brokerPort == 443) {
            throw invalid("through an AMP cache the broker URL must use its scheme's default port")
        }
        guard !brokerHost.isEmpty else { throw invalid("the broker URL has no host") }
        guard let cacheScheme = cache.scheme?.lowercased(), cacheScheme == "http" || cacheScheme == "https",
              let cacheHost = cache.host, !cacheHost.isEmpty else {
            throw invalid("ampcache= must be an http(s) URL with a host")
        }
        guard cache.query == nil, cache.fragment == nil else { throw invalid("ampcache= must not have a query or fragment") }
        var components = [cache.path(percentEncoded: true), "c"]
        if scheme == "https" { components.append("s") }
        components += [brokerHost, brokerPath]
        return Rewritten(scheme: cacheScheme, host: try domainPrefix(brokerHost) + "." + cacheHost, port: cache.port,
                         path: joinPath(components))
    }

    /// The AMP domain prefix of a publisher host (the basic algorithm, or the SHA-256 fallback
    /// when the result is not a valid DNS label).
    public static func domainPrefix(_ host: String) throws(SnowflakeError) -> String {
        let lower = host.lowercased()
        guard host.unicodeScalars.allSatisfy(\.isASCII), !lower.hasPrefix("xn--"), !lower.contains(".xn--") else {
            throw SnowflakeError(code: .unsupported, kind: .invalidInput,
                                 message: "an AMP cache rendezvous with an internationalised broker host name is not supported")
        }
        var prefix = host.replacingOccurrences(of: "-", with: "--").replacingOccurrences(of: ".", with: "-")
        let characters = Array(prefix.utf8)
        if characters.count >= 4 && characters[2] == UInt8(ascii: "-") && characters[3] == UInt8(ascii: "-") {
            prefix = "0-" + prefix + "-0"
        }
        // A prefix that now starts with "xn--" would be read as punycode by IDNA; upstream's result
        // then depends on that decoding, which we do not do.
        guard !prefix.lowercased().hasPrefix("xn--") else {
            throw SnowflakeError(code: .unsupported, kind: .invalidInput,
                                 message: "this broker host name has no AMP domain prefix we can compute")
        }
        if prefix.utf8.count <= 63 { return prefix }
        return lowerBase32NoPadding(Digest.sha256(Array(host.utf8)))
    }

    /// Go's path.Join: non-empty elements joined by "/", then cleaned (no "//", ".", "..", no
    /// trailing "/"). Always absolute here: the result is a request path.
    static func joinPath(_ elements: [String]) -> String {
        var segments: [Substring] = []
        for element in elements where !element.isEmpty {
            for segment in element.split(separator: "/", omittingEmptySubsequences: true) {
                switch segment {
                case ".": continue
                case "..": if !segments.isEmpty { segments.removeLast() }
                default: segments.append(segment)
                }
            }
        }
        return "/" + segments.joined(separator: "/")
    }

    static func lowerBase32NoPadding(_ bytes: [UInt8]) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
        var out = ""
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int(buffer >> UInt32(bits - 5) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return out
    }
}
