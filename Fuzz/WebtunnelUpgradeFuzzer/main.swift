// webtunnel's reading of the server's answer to the upgrade request (UpgradeResponse.parse).
//
// Invariants, trapping when broken:
//   - an accepted answer's remainder is exactly the bytes after its header block, and appending
//     more bytes to the input appends them to the remainder (the tunnel's first bytes are kept);
//   - a cut inside the header block of an accepted answer is never accepted (only "need more");
//   - whatever the input, the result is one of: need more, accepted, a webtunnel-* protocol error;
//   - a valid 101 with fuzzer-chosen extra headers and trailing bytes is accepted with exactly
//     those trailing bytes.
import FuzzSupport
import TransportBase
import WebtunnelTransport

let webtunnelCodes: Set<TransportError.Code> = [.webtunnelMalformedResponse, .webtunnelUpgradeRefused, .webtunnelResponseTooLarge]

func headerBlockEnd(_ bytes: [UInt8]) -> Int? {
    // First LF LF or LF CR LF: the same end the parser looks for.
    var index = 0
    var lineStart = 0
    while index < bytes.count {
        if bytes[index] == 0x0A {
            let contentEnd = index > lineStart && bytes[index - 1] == 0x0D ? index - 1 : index
            if contentEnd == lineStart { return index + 1 }
            lineStart = index + 1
        }
        index += 1
    }
    return nil
}

func checkUpgrade(_ raw: UnsafeRawBufferPointer) {
    let input = Array(raw)
    do {
        if let remainder = try UpgradeResponse.parse(input) {
            let end = headerBlockEnd(input)
            fuzzCheck(end != nil && Array(input[end!...]) == remainder, "remainder is not the bytes after the headers")
            let extended = try? UpgradeResponse.parse(input + [0x16, 0x03, 0x0A])
            fuzzCheck(extended == remainder + [0x16, 0x03, 0x0A], "appended bytes did not join the remainder")
            if let end, end > 1 {
                let cut = end - 1 - Int(input[0]) % end
                let shorter = try? UpgradeResponse.parse(Array(input[..<max(0, cut)]))
                fuzzCheck(shorter == nil, "a cut inside the headers was accepted")  // try? flattens: nil = need more or refused
            }
        }
    } catch {
        fuzzCheck(webtunnelCodes.contains(error.code) && error.kind == .protocolViolation, "unexpected error \(error)")
    }

    // Built answer: extra X- headers from the input (token bytes only, values without CR/LF).
    var fuzz = FuzzInput(raw)
    var answer = Array("HTTP/1.1 101 Switching Protocols\r\n".utf8)
    let count = Int(fuzz.byte() ?? 0) % 8
    for _ in 0..<count {
        let name = (0..<(1 + Int(fuzz.byte() ?? 0) % 6)).map { _ in UInt8(ascii: "a") + (fuzz.byte() ?? 0) % 26 }
        let value = (0..<(Int(fuzz.byte() ?? 0) % 12)).map { _ -> UInt8 in
            let byte = fuzz.byte() ?? 0x20
            return byte == 0x0A || byte == 0x0D ? 0x20 : byte
        }
        answer += Array("X-".utf8) + name + Array(": ".utf8) + value + [0x0D, 0x0A]
    }
    answer += Array("Upgrade: websocket\r\nConnection: upgrade\r\n\r\n".utf8)
    let trailing = Array(fuzz.remaining)
    let parsed = try? UpgradeResponse.parse(answer + trailing)
    fuzzCheck(parsed == trailing, "a valid 101 was not accepted with its trailing bytes")
}

runFuzzer(checkUpgrade)
