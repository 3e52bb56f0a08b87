// The HTTP/1.1 response reader the transports share, TransportWire's HTTP1ResponseReader (snowflake's
// broker and AMP cache answers, dnstt's DoH answers: issue #25 merged their two readers; the name is
// the target's first use, kept for its corpus). Arbitrary bytes in arbitrary reads, with small
// limits (body, head, header count, chunk-size line, trailer section; the production values are
// larger but the code paths are the same) so that every cap is within reach of a short input and
// each input costs little. At most the first 2048 bytes of an input are used. DoHResponseFuzzer
// drives the same reader with the DoH link's caps.
//
// Modes (first byte, bit 0):
//   0 raw      the rest of the input is the response (a byte of read sizes first)
//   1 built    a valid response built from fuzzer choices: a body, sent chunked (fuzzer-chosen
//              chunk sizes, extensions, hex case, a trailer) or with Content-Length or until EOF,
//              optionally after an interim 100 Continue
//
// Invariants, trapping when broken:
//   - no Swift trap (the chunk-size overflow of issue #12 trapped here);
//   - the outcome (status, body, or the error code) does not depend on how the bytes are split
//     into reads;
//   - a body never exceeds the limit, and the reader never holds more than the larger of head cap
//     (+ 3), chunk-line cap (+ 1) and trailer cap (+ 1), plus the body limit, plus one read;
//   - a built response parses to exactly its status and body; one over the limit is refused as
//     http-body-too-large.
import FuzzSupport
import TransportWire

enum Outcome: Equatable {
    case response(status: Int, body: [UInt8])
    case failed(String)
}

struct Limits {
    var body: Int, head: Int, headers: Int, chunkLine: Int, trailer: Int
    func reader() -> HTTP1ResponseReader {
        HTTP1ResponseReader(bodyLimit: body, headLimit: head, fieldCountLimit: headers, chunkLineLimit: chunkLine, trailerLimit: trailer)
    }
}

func parse(_ pieces: [ArraySlice<UInt8>], limits: Limits) -> Outcome {
    var reader = limits.reader()
    do {
        for piece in pieces {
            if let response = try reader.append(piece) {
                fuzzCheck(response.body.count <= limits.body, "a body over the limit")
                return .response(status: response.status, body: response.body)
            }
            // Undecoded input: a head not yet ended (up to 3 bytes past the cap: a terminator may
            // be starting), a chunk-size or trailer line (up to 1 past), plus the body so far.
            let undecodedCap = max(reader.headLimit + 3, reader.chunkLineLimit + 1, reader.trailerLimit + 1)
            fuzzCheck(reader.bufferedBytes <= undecodedCap + limits.body + piece.count, "the reader holds more than its caps")
        }
        let response = try reader.finish()
        fuzzCheck(response.body.count <= limits.body, "a body over the limit")
        return .response(status: response.status, body: response.body)
    } catch {
        return .failed(error.code.rawValue)
    }
}

func checkResponse(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte(), let shape = input.byte() else { return }
    let limits = Limits(body: Int(mode >> 1) * 8, head: 32 + Int(shape & 0x0f) * 32, headers: Int(shape >> 4),
                        chunkLine: 4 + Int(shape & 0x30), trailer: Int(shape & 0xc0) >> 2)
    if mode & 1 == 0 {
        let sizes = input.chunk() ?? []
        let data = Array(input.rest().prefix(2048))
        let whole = parse([data[...]], limits: limits)
        fuzzCheck(parse(pieces(of: data, sizes: sizes), limits: limits) == whole, "the outcome depends on the reads")
        return
    }
    // A final status (200...599); an interim 100 before it when the framing byte's bit 5 is set.
    let status = 200 + Int(input.byte() ?? 0) % 400
    let framing = input.byte() ?? 0
    let body = input.chunk() ?? []
    let sizes = input.chunk() ?? []
    var text = (framing & 32 != 0 ? "HTTP/1.1 100 Continue\r\n\r\n" : "") + "HTTP/1.1 \(status) Whatever\r\nServer: fuzz\r\n"
    var encoded: [UInt8] = []
    switch framing % 3 {
    case 0:
        text += "Transfer-Encoding: chunked\r\n\r\n"
        encoded = Array(text.utf8)
        var offset = 0
        var index = 0
        while offset < body.count {
            let size = min(body.count - offset, sizes.isEmpty ? body.count : max(1, Int(sizes[index % sizes.count])))
            var sizeText = String(size, radix: 16, uppercase: framing & 8 != 0)
            if framing & 16 != 0 { sizeText += ";ext=\(index)" }
            encoded += Array((sizeText + "\r\n").utf8) + body[offset..<(offset + size)] + [13, 10]
            offset += size
            index += 1
        }
        encoded += Array(((framing & 64 != 0 ? "0\r\nX-T: 1\r\n" : "0\r\n") + "\r\n").utf8)
    case 1:
        encoded = Array((text + "Content-Length: \(body.count)\r\n\r\n").utf8) + body
    default:
        encoded = Array((text + "\r\n").utf8) + body
    }
    // Caps the built response stays within: each head is under 80 bytes and has 3 lines, its
    // chunk-size lines and trailer under 16 bytes.
    let roomy = Limits(body: limits.body, head: 128, headers: 4, chunkLine: 16, trailer: 16)
    let outcome = parse(pieces(of: encoded, sizes: sizes), limits: roomy)
    if status == 204 || status == 304 {
        // No body by definition (RFC 9112 section 6.3): the response ends at its head, whatever follows.
        fuzzCheck(outcome == .response(status: status, body: []), "a response without a body did not end at its head")
    } else if body.count <= limits.body {
        fuzzCheck(outcome == .response(status: status, body: body), "a valid response did not parse to itself")
    } else {
        fuzzCheck(outcome == .failed(WireError.Code.httpBodyTooLarge.rawValue), "an oversized body was not refused")
    }
}

runFuzzer(checkResponse)
