// RFC 6455 server frames as the Nostr relay client parses them (WebSocketFuzzEntry → PosternAppLayer's
// WebSocketFrameParser, `package` API), with message reassembly and the inbound size cap.
//
// Invariants, trapping when broken:
//   - arbitrary bytes give the same events and the same close code however they are split into
//     reads (on a violation, the events of the read that carried the bad frame are dropped with
//     the connection, so only a prefix is compared); no message exceeds the cap; a close code, when
//     there is one, is 1002, 1007 or 1009;
//   - frames the fuzzer builds the way a server may send them (text/binary messages fragmented
//     anywhere, pings and pongs between fragments, a final close) parse to exactly those messages
//     and control frames, and a message over the cap is refused with 1009.
import Foundation
import FuzzSupport
import PosternAppLayer

/// One unmasked server frame.
func serverFrame(opcode: UInt8, fin: Bool, payload: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode]
    if payload.count < 126 {
        bytes.append(UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        bytes += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        bytes.append(127)
        bytes += (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (UInt64($0) * 8)) & 0xFF) }
    }
    return bytes + payload
}

func checkWebSocket(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    let cap = mode & 0x80 != 0 ? 512 * 1024 : 300
    let sizes = input.chunk() ?? []
    if mode & 1 == 0 {
        let stream = input.rest()
        let whole = WebSocketFuzzEntry.parse([stream[...]], maximumMessageBytes: cap)
        let split = WebSocketFuzzEntry.parse(pieces(of: stream, sizes: sizes), maximumMessageBytes: cap)
        // On a violation the events decoded in the same read as the bad frame are dropped with the
        // connection, so a stream read whole may report fewer of them; never different ones.
        fuzzCheck(split.closeCode == whole.closeCode, "the close code depends on the reads")
        fuzzCheck(whole.closeCode == nil ? split.events == whole.events : split.events.starts(with: whole.events),
                  "the events depend on the reads")
        for case .message(let message) in whole.events {
            switch message {
            case .text(let text): fuzzCheck(text.utf8.count <= cap, "a text message over the cap")
            case .binary(let data): fuzzCheck(data.count <= cap, "a binary message over the cap")
            }
        }
        if let code = whole.closeCode { fuzzCheck([1002, 1007, 1009].contains(code), "close code \(code)") }
        return
    }
    var stream: [UInt8] = []
    var expected: [WebSocketFuzzEntry.Event] = []
    var tooBig = false
    messages: while let kind = input.byte(), !tooBig {
        switch kind % 4 {
        case 0, 1:  // a data message in 1...4 fragments, with a ping after each fragment when asked
            let length = (input.uint16() ?? 0) % 1024
            let body = input.take(length)
            let text = kind % 4 == 0
            let payload = text ? Array(String(decoding: body, as: UTF8.self).utf8) : body
            if payload.count > cap {
                // Announced whole: refused from its header, before any of it is buffered.
                stream += serverFrame(opcode: text ? 1 : 2, fin: true, payload: payload)
                tooBig = true
                break messages
            }
            let fragments = Int(kind >> 2 & 3) + 1
            let step = max(1, (payload.count + fragments - 1) / fragments)
            var offset = 0
            repeat {
                let end = min(payload.count, offset + step)
                stream += serverFrame(opcode: offset == 0 ? (text ? 1 : 2) : 0, fin: end == payload.count, payload: Array(payload[offset..<end]))
                if kind & 0x40 != 0, end < payload.count {
                    stream += serverFrame(opcode: 9, fin: true, payload: [kind])
                    expected.append(.ping([kind]))
                }
                offset = end
            } while offset < payload.count
            expected.append(.message(text ? .text(String(decoding: payload, as: UTF8.self)) : .binary(Data(payload))))
        case 2:
            let payload = input.take(Int(kind >> 2) % 126)
            stream += serverFrame(opcode: 10, fin: true, payload: payload)
            expected.append(.pong(payload))
        default:
            let code = UInt16(input.uint16() ?? 1000)
            let reason = String(decoding: input.take(Int(kind >> 2) % 60), as: UTF8.self)
            let reasonBytes = Array(reason.utf8.prefix(123))
            let trimmed = String(decoding: reasonBytes, as: UTF8.self)
            guard Array(trimmed.utf8) == reasonBytes else { continue }
            stream += serverFrame(opcode: 8, fin: true, payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + reasonBytes)
            expected.append(.close(WebSocketCloseStatus(code: code, reason: trimmed)))
        }
    }
    let result = WebSocketFuzzEntry.parse(pieces(of: stream, sizes: sizes), maximumMessageBytes: cap)
    if tooBig {
        // Events decoded from the same read as the refused frame are not returned; earlier ones are.
        fuzzCheck(result.closeCode == 1009 && expected.starts(with: result.events), "an oversized message was not refused with 1009")
    } else {
        fuzzCheck(result.closeCode == nil && result.events == expected, "server frames did not parse to what was sent")
    }
}

runFuzzer(checkWebSocket)
