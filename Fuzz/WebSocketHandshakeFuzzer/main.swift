// The RFC 6455 opening handshake as the client reads it (WebSocketHandshakeFuzzEntry → the `package`
// WebSocketHandshakeReader that WebSocketConnection runs on the socket), fed in fuzzer-chosen reads.
//
// Invariants, trapping when broken:
//   - arbitrary replies: the verdict (need more, accepted with a leftover, refused with a code) does
//     not depend on how the bytes are split into reads, except that a verdict may come at an earlier
//     read; an accepted reply's leftover is exactly what follows its first CRLF CRLF; a reply whose
//     head has not ended within the cap is refused, never "need more"; the reader never holds more
//     than the cap plus one read;
//   - replies the fuzzer builds the way a server may (status line, headers in any case and order,
//     extra headers, frames right after the head) are accepted with exactly those frames left over;
//     the same reply with a wrong Sec-WebSocket-Accept, a status other than 101, or an extension is
//     refused.
import FuzzSupport
import PosternAppLayer

let key = "dGhlIHNhbXBsZSBub25jZQ=="
let accept = WebSocketHandshakeFuzzEntry.acceptValue(for: key)
let cap = WebSocketHandshakeFuzzEntry.maximumHeadBytes
let terminator: [UInt8] = [13, 10, 13, 10]

/// Where the first CR LF CR LF lies (a plain loop: Foundation's generic `firstRange(of:)` took a
/// fifth of this target's time).
func headTerminator(in bytes: [UInt8]) -> Range<Int>? {
    guard bytes.count >= terminator.count else { return nil }
    for index in 0...(bytes.count - terminator.count)
    where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
        return index..<(index + terminator.count)
    }
    return nil
}

func verdictKind(_ verdict: WebSocketHandshakeFuzzEntry.Verdict) -> String {
    switch verdict {
    case .needMore: "need more"
    case .accepted(let leftover, _): "accepted \(leftover.count)"
    case .refused(let code, _): "refused \(code)"
    }
}

func checkArbitrary(_ reply: [UInt8], sizes: [UInt8], prefix: Int = 0) {
    let whole = WebSocketHandshakeFuzzEntry.run(key: key, reads: [reply[...]])
    // A long prefix arrives in one read (a socket read is up to 4 KiB); the rest in fuzzer-chosen reads.
    let reads = (prefix > 0 ? [reply[..<prefix]] : []) + pieces(of: Array(reply[prefix...]), sizes: sizes)
    let split = WebSocketHandshakeFuzzEntry.run(key: key, reads: reads)
    let end = headTerminator(in: reply)
    let headEndsInTime = end.map { $0.lowerBound <= cap } ?? false
    switch split {
    case .needMore(let buffered):
        fuzzCheck(buffered == reply.count && buffered < cap + terminator.count, "need more with \(buffered) bytes held")
        fuzzCheck(end == nil, "a complete head got no verdict")
        fuzzCheck(whole == split, "whole: \(verdictKind(whole)), split: need more")
    case .accepted(let leftover, let read):
        fuzzCheck(headEndsInTime, "accepted a head over the cap")
        fuzzCheck(leftover == Array(reply[end!.upperBound...].prefix(leftover.count)), "the leftover is not what follows the head")
        let fed = reads[...read].reduce(0) { $0 + $1.count }
        fuzzCheck(leftover.count == fed - end!.upperBound, "the leftover lost bytes of the last read")
        if case .accepted(let wholeLeftover, _) = whole {
            fuzzCheck(wholeLeftover == Array(reply[end!.upperBound...]), "whole: wrong leftover")
        } else {
            fuzzCheck(false, "whole: \(verdictKind(whole)), split: accepted")
        }
    case .refused(let code, _):
        if case .refused(let wholeCode, _) = whole {
            fuzzCheck(code == wholeCode, "refused with \(code) split, \(wholeCode) whole")
        } else if case .accepted = whole {
            fuzzCheck(false, "split refused what whole accepted")
        } else {
            fuzzCheck(false, "whole: need more, split: refused")
        }
    }
    if !headEndsInTime && reply.count >= cap + terminator.count {
        if case .refused = split {} else { fuzzCheck(false, "a head over the cap was not refused") }
    }
}

func checkBuilt(_ input: inout FuzzInput, sizes: [UInt8]) {
    guard let choices = input.byte() else { return }
    var headers: [(String, String)] = [("Upgrade", choices & 1 != 0 ? "websocket" : "WebSocket"),
                                       ("Connection", choices & 2 != 0 ? "Upgrade" : "keep-alive, upgrade"),
                                       ("Sec-WebSocket-Accept", accept)]
    // Extra headers with fuzzer-chosen printable names and values (no CR/LF, no colon in names).
    while let count = input.byte(), headers.count < 12, count & 0x80 == 0 {
        let name = "X-" + String(decoding: input.take(Int(count % 16)).map { 0x61 + $0 % 26 }, as: UTF8.self)
        let value = String(decoding: input.take(Int(count >> 4)).map { 0x20 + $0 % 95 }, as: UTF8.self)
        headers.insert((name, value), at: Int(count) % (headers.count + 1))
    }
    let rotate = Int(choices >> 2 & 3) % headers.count
    headers = Array(headers[rotate...] + headers[..<rotate])
    func head(_ status: String, _ headers: [(String, String)]) -> [UInt8] {
        Array(("HTTP/1.1 \(status)\r\n" + headers.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n").utf8)
    }
    let frames = input.take(64)
    let good = head("101 Switching Protocols", headers) + frames
    let result = WebSocketHandshakeFuzzEntry.run(key: key, reads: pieces(of: good, sizes: sizes))
    guard case .accepted(let leftover, _) = result else { fuzzCheck(false, "a valid reply was \(verdictKind(result))"); return }
    let reads = pieces(of: good, sizes: sizes)
    var fed = 0
    for read in reads {
        fed += read.count
        if fed >= good.count - frames.count { break }
    }
    fuzzCheck(leftover == Array(frames.prefix(fed - (good.count - frames.count))), "a valid reply's leftover is not its frames")

    let wrongAccept = headers.map { $0.0 == "Sec-WebSocket-Accept" ? ($0.0, "x" + $0.1.dropFirst()) : $0 }
    let badStatus = choices & 0x40 != 0 ? "200 OK" : "426 Upgrade Required"
    let withExtension = headers + [("Sec-WebSocket-Extensions", "permessage-deflate")]
    for bad in [head("101 Switching Protocols", wrongAccept), head(badStatus, headers), head("101 Switching Protocols", withExtension)] {
        let verdict = WebSocketHandshakeFuzzEntry.run(key: key, reads: pieces(of: bad + frames, sizes: sizes))
        guard case .refused = verdict else { fuzzCheck(false, "an invalid reply was \(verdictKind(verdict))"); return }
    }
}

func checkHandshake(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    let sizes = input.chunk() ?? []
    if mode & 1 == 0 {
        let rest = input.rest()
        // Sometimes a head padded to near the cap, to reach the cap's edge without 16 KiB inputs.
        if mode & 6 == 6 {
            let padding = Array("HTTP/1.1 101 OK\r\nX: ".utf8) + [UInt8](repeating: 0x61, count: cap - 24 + Int(mode >> 3))
            checkArbitrary(padding + rest, sizes: sizes, prefix: padding.count)
        } else {
            checkArbitrary(rest, sizes: sizes)
        }
    } else {
        checkBuilt(&input, sizes: sizes)
    }
}

runFuzzer(checkHandshake)
