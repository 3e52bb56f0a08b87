// The DoH link's handling of a resolver's answer (DnsttTransport): the HTTP/1.1 response reader
// (TransportWire's HTTP1ResponseReader, shared with snowflake's broker since issue #25, as the link
// configures it: `DoHLink.http1Reader()`; its head read by HTTPHeadReader; Content-Length, chunked
// and until-close bodies, interim 1xx), the verdict on an answer (`DoHAnswer`) and `RetryAfter`.
//
// Invariants, trapping when broken:
//   - mode 0, arbitrary bytes in fuzzer-chosen reads: no trap; the outcome (need more, a response,
//     or an error code), also after the end of the stream, is the same as with the bytes in one
//     read; a response's body is at most 64000 bytes; a `message` verdict only for status 200 with
//     content-type exactly application/dns-message, and its message is the body;
//   - mode 1, a response the fuzzer builds (status, content type, body, framing: Content-Length,
//     chunked with fuzzer-chosen chunk sizes, or until close) read in fuzzer-chosen pieces: it reads
//     back to exactly that status, content type and body, and is reusable only when framed;
//   - mode 2, Retry-After values: the delay is within 0...120 s; digits give min(value, 120) s;
//     anything that is neither digits nor an HTTP-date gives 10 s.
import DnsttTransport
import Foundation
import FuzzSupport
import TransportWire

let now = Date(timeIntervalSince1970: 1_800_000_000)

enum Outcome: Equatable {
    case needMore
    case response(HTTP1Response)
    case failed(String)
}

func read(_ pieces: [ArraySlice<UInt8>], finish: Bool) -> Outcome {
    var reader = DoHLink.http1Reader()
    do {
        for piece in pieces {
            if let response = try reader.append(piece) { return .response(response) }
        }
    } catch {
        // The code the link would report.
        return .failed(DoHLink.error(error).code.rawValue)
    }
    // The link takes a truncated answer for none.
    if finish, let response = try? reader.finish() { return .response(response) }
    return .needMore
}

func checkArbitrary(_ input: inout FuzzInput) {
    let sizes = input.chunk() ?? []
    let bytes = input.rest()
    for finish in [false, true] {
        let split = read(pieces(of: bytes, sizes: sizes), finish: finish)
        let whole = read([bytes[...]], finish: finish)
        fuzzCheck(split == whole, "the outcome depends on the reads: \(split) against \(whole)")
        guard case .response(let response) = split else { continue }
        fuzzCheck(response.body.count <= DoHLink.bodyLimit, "a body over the cap")
        let contentType = response.head.value("content-type")
        let verdict = DoHAnswer.verdict(status: response.status, contentType: contentType, retryAfter: response.head.value("retry-after"),
                                        body: response.body, now: now)
        if case .message(let message) = verdict {
            fuzzCheck(response.status == 200 && contentType == Array("application/dns-message".utf8) && message == response.body,
                      "a message from an answer that is not one")
        }
        if response.status != 200 {
            guard case .pause(let delay) = verdict else { fuzzCheck(false, "a non-200 answer did not pause"); return }
            fuzzCheck(delay >= .zero && delay <= RetryAfter.maximumDelay, "a pause outside 0...120 s")
        }
    }
}

func checkBuilt(_ input: inout FuzzInput) {
    guard let shape = input.byte(), let statusPick = input.byte() else { return }
    let statuses = [200, 200, 200, 429, 503, 404, 500, 200]
    let status = statuses[Int(statusPick) % statuses.count]
    let types = ["application/dns-message", "application/dns-message; charset=x", "text/html", "Application/DNS-Message"]
    let contentType = types[Int(shape >> 4) % types.count]
    let sizes = input.chunk() ?? []
    let chunkSizes = input.chunk() ?? []
    let body = Array(input.rest().prefix(DoHLink.bodyLimit))
    var text = "HTTP/1.1 \(status) X\r\nContent-Type: \(contentType)\r\n"
    var framed: [UInt8]
    let framing = Int(shape & 3)
    switch framing {
    case 0:
        text += "Content-Length: \(body.count)\r\n\r\n"
        framed = Array(text.utf8) + body
    case 1:
        text += "Transfer-Encoding: chunked\r\n\r\n"
        framed = Array(text.utf8)
        var offset = 0
        var index = 0
        while offset < body.count {
            let size = min(body.count - offset, chunkSizes.isEmpty ? body.count : max(1, Int(chunkSizes[index % chunkSizes.count]) * 37))
            framed += Array((String(size, radix: 16) + (index % 2 == 0 ? "" : ";ext=1") + "\r\n").utf8) + body[offset..<(offset + size)] + Array("\r\n".utf8)
            offset += size
            index += 1
        }
        framed += Array("0\r\nTrailer: x\r\n\r\n".utf8)
    default:
        text += "\r\n"
        framed = Array(text.utf8) + body
    }
    let outcome = read(pieces(of: framed, sizes: sizes), finish: true)
    guard case .response(let response) = outcome else {
        fuzzCheck(false, "a built response was not read: \(outcome)")
        return
    }
    fuzzCheck(response.status == status && response.body == body && response.head.value("content-type") == Array(contentType.utf8),
              "a built response read back differently")
    fuzzCheck(response.reusable == (framing < 2), "reusable is wrong for framing \(framing)")
}

func checkRetryAfter(_ input: inout FuzzInput) {
    let value = input.rest()
    let delay = RetryAfter.delay(value, now: now)
    fuzzCheck(delay >= .zero && delay <= RetryAfter.maximumDelay, "a pause outside 0...120 s")
    if !value.isEmpty, value.count <= 64, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
        let expected = value.count > 6 ? 120 : min(120, Int(String(decoding: value, as: UTF8.self))!)
        fuzzCheck(delay == .seconds(expected), "digits gave \(delay), not \(expected) s")
    } else if RetryAfter.httpDate(value) == nil {
        fuzzCheck(delay == RetryAfter.defaultDelay, "an unreadable value did not give the default")
    }
}

func checkDoHResponse(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    switch mode % 3 {
    case 0: checkArbitrary(&input)
    case 1: checkBuilt(&input)
    default: checkRetryAfter(&input)
    }
}

runFuzzer(checkDoHResponse)
