import Foundation

/// What a DoH link does with one answer (docs/plans/DNSTT.md §2, the reference's rules): status
/// 200 with `content-type` exactly `application/dns-message` (byte for byte, as the reference
/// compares it; no parameters, no other case) and a body within 64000 bytes is a DNS message for
/// the session; any other status pauses the link for `Retry-After` (``RetryAfter``); the rest is
/// dropped. Pure, for the link and DoHResponseFuzzer.
package enum DoHAnswer: Sendable, Equatable {
    case message([UInt8])
    case dropped
    case pause(Duration)

    package static func verdict(status: Int, contentType: [UInt8]?, retryAfter: [UInt8]?, body: [UInt8], now: Date) -> DoHAnswer {
        guard status == 200 else { return .pause(RetryAfter.delay(retryAfter, now: now)) }
        guard let contentType, contentType == Array(DoHLink.mediaType.utf8) else { return .dropped }
        guard !body.isEmpty, body.count <= DoHLink.bodyLimit else { return .dropped }
        return .message(body)
    }
}
