// The broker's (and AMP cache's) HTTP/1.x response reader, HTTPResponseReader: arbitrary bytes in
// arbitrary reads, with a small body limit so that every cap is within reach of a short input.
//
// Modes (first byte, bit 0):
//   0 raw      the rest of the input is the response (a byte of read sizes first)
//   1 built    a valid response built from fuzzer choices: a body, sent chunked (fuzzer-chosen
//              chunk sizes, extensions, hex case) or with Content-Length or until EOF
//
// Invariants, trapping when broken:
//   - no Swift trap (the chunk-size overflow of issue #12 trapped here);
//   - the outcome (status, headers, body, or the error code) does not depend on how the bytes are
//     split into reads;
//   - a body never exceeds the limit, and the reader never holds more than head cap + body limit +
//     one read;
//   - a built response parses to exactly its status and body.
import FuzzSupport
import SnowflakeTransport

enum Outcome: Equatable {
    case response(status: Int, body: [UInt8])
    case failed(String)
    case incomplete
}

func parse(_ pieces: [ArraySlice<UInt8>], bodyLimit: Int, endsWithEOF: Bool = true) -> Outcome {
    var reader = HTTPResponseReader(bodyLimit: bodyLimit)
    do {
        for piece in pieces {
            if let response = try reader.append(piece) {
                fuzzCheck(response.body.count <= bodyLimit, "a body over the limit")
                return .response(status: response.status, body: response.body)
            }
            fuzzCheck(reader.bufferedBytes <= HTTPResponseReader.headLimit + bodyLimit + piece.count,
                      "the reader holds more than its caps")
        }
        guard endsWithEOF else { return .incomplete }
        let response = try reader.endOfStream()
        fuzzCheck(response.body.count <= bodyLimit, "a body over the limit")
        return .response(status: response.status, body: response.body)
    } catch {
        return .failed(error.code.rawValue)
    }
}

func checkResponse(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    let bodyLimit = Int(mode >> 1) * 16
    if mode & 1 == 0 {
        let sizes = input.chunk() ?? []
        let data = input.rest()
        let whole = parse([data[...]], bodyLimit: bodyLimit)
        fuzzCheck(parse(pieces(of: data, sizes: sizes), bodyLimit: bodyLimit) == whole, "the outcome depends on the reads")
        return
    }
    let status = 100 + Int(input.byte() ?? 100) % 500
    let framing = input.byte() ?? 0
    let body = input.chunk() ?? []
    let sizes = input.chunk() ?? []
    var text = "HTTP/1.1 \(status) Whatever\r\nServer: fuzz\r\n"
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
        encoded += Array("0\r\n\r\n".utf8)
    case 1:
        encoded = Array((text + "Content-Length: \(body.count)\r\n\r\n").utf8) + body
    default:
        encoded = Array((text + "\r\n").utf8) + body
    }
    let outcome = parse(pieces(of: encoded, sizes: sizes), bodyLimit: bodyLimit)
    if body.count <= bodyLimit {
        fuzzCheck(outcome == .response(status: status, body: body), "a valid response did not parse to itself")
    } else {
        fuzzCheck(outcome == .failed(SnowflakeError.Code.responseTooLarge.rawValue), "an oversized body was not refused")
    }
}

runFuzzer(checkResponse)
