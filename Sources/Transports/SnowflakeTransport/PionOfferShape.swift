import Foundation

/// How pion (the WebRTC library of the reference client, snowflake-client) writes the fields of an
/// offer that libnice decides differently, so that the broker and proxies, which see pion offers
/// from every other snowflake user, see one more of them. The censor on the path does not see the
/// offer (it travels inside TLS to the broker); the broker and every proxy do.
///
/// Taken from the pion offer in the Go vectors (Tests/Support/snowflake-testbed/vectors, pion/webrtc
/// v3 as Debian packages it) and checked field by field against it by SDPTests:
/// - `o=- <63-bit random> <Unix time of the offer> IN IP4 0.0.0.0` (libnice-era Postern wrote 2);
/// - `a=extmap-allow-mixed` after the fingerprint;
/// - ICE credentials of letters only: a 16-letter ufrag, a 32-letter password;
/// - candidate foundation: the decimal CRC-32 (IEEE) of type + address + network ("udp4"/"udp6");
/// - candidate priority: (type preference << 24) | (65535 << 8) | 255, with pion's preferences
///   host 126, prflx 110, srflx 100, relay 0 (libnice computes its own, from interface order);
/// - a server-reflexive candidate's related address is 0.0.0.0 (pion's srflx socket is bound to
///   the unspecified address; libnice's is the host address, which also leaked a private address);
/// - every candidate written twice, for component 1 and 2 (pion's RTCP component), same priority.
/// libnice still uses its own priorities in its checks' PRIORITY attribute; a proxy reads the
/// offer's only to order its pairs, and the addresses and ports are libnice's own, unchanged.
package enum PionOfferShape {
    static let iceCharacters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

    /// The candidate as pion would write it for component `component`.
    static func candidate(_ candidate: ICECandidate, component: Int) -> ICECandidate {
        let network = candidate.transport + (candidate.address.contains(":") ? "6" : "4")
        var shaped = candidate
        shaped.foundation = String(crc32(Array((candidate.type + candidate.address + network).utf8)))
        shaped.component = component
        shaped.priority = priority(type: candidate.type)
        if candidate.type == "srflx" {
            shaped.relatedAddress = "0.0.0.0"
            shaped.relatedPort = candidate.relatedPort ?? candidate.port
        }
        return shaped
    }

    /// The `a=candidate:` values for `candidates`: each for component 1 then 2, no line twice.
    package static func candidateLines(_ candidates: [ICECandidate]) -> [String] {
        var lines: [String] = []
        for candidate in candidates {
            for component in 1...2 {
                let line = self.candidate(candidate, component: component).attributeValue
                if !lines.contains(line) { lines.append(line) }
            }
        }
        return lines
    }

    static func priority(type: String) -> UInt32 {
        let preference: UInt32
        switch type {
        case "host": preference = 126
        case "prflx": preference = 110
        case "srflx": preference = 100
        default: preference = 0
        }
        return preference << 24 | 65535 << 8 | 255
    }

    /// CRC-32 (IEEE 802.3, reflected, as Go's hash/crc32.ChecksumIEEE).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// pion's session version: the Unix time when the offer is made.
    static func sessionVersion(now: Date = Date()) -> UInt64 { UInt64(max(0, now.timeIntervalSince1970)) }
}
