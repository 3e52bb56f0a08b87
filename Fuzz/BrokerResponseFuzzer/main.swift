// What the snowflake broker sends back: the poll response JSON, the session description inside it,
// and the AMP-cache encodings (the HTML armor of a response and the request path).
//
// Invariants, trapping when broken:
//   - an accepted answer's session description has a known type and round-trips through Go-style
//     serialisation; an error response carries a non-empty reason;
//   - AMP armor: any bytes, armored the way the broker does it (base64 in <pre>, split into lines,
//     inside a page with a comment and a <script>), decode back to themselves; arbitrary HTML
//     that decodes yields bytes whose armor decodes to them again;
//   - AMP path: encodePath(bytes) decodes back to the bytes.
import Foundation
import FuzzSupport
import SnowflakeTransport

func armor(_ bytes: [UInt8], lineLength: Int) -> [UInt8] {
    let encoded = "0" + Data(bytes).base64EncodedString()
    var lines: [Substring] = []
    var rest = Substring(encoded)
    while !rest.isEmpty {
        lines.append(rest.prefix(lineLength))
        rest = rest.dropFirst(lineLength)
    }
    let page = "<!doctype html>\n<html amp><head><!-- <pre> in a comment --><script>var p = '<pre>';</script></head>"
        + "<body><PRE>\n" + lines.joined(separator: "\n") + "\n</pre></body></html>"
    return Array(page.utf8)
}

func checkBroker(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    switch mode % 3 {
    case 0:
        guard let response = try? ClientPollResponse(decoding: input.rest()) else { return }
        switch response {
        case .answer(let description):
            fuzzCheck(SessionDescription.knownTypes.contains(description.type), "an unknown description type")
            fuzzCheck((try? SessionDescription(serialized: description.serialized)) == description, "a description does not round-trip")
        case .error(let reason):
            fuzzCheck(!reason.isEmpty, "an empty error was accepted")
        }
    case 1:
        let lineLength = Int(input.byte() ?? 76) + 1
        let html = input.rest()
        fuzzCheck((try? AMPEncoding.decodeArmor(armor(html, lineLength: lineLength))) == html, "armored bytes did not decode to themselves")
        if let decoded = try? AMPEncoding.decodeArmor(html) {
            fuzzCheck((try? AMPEncoding.decodeArmor(armor(decoded, lineLength: lineLength))) == decoded, "decoded armor is not stable")
        }
    default:
        let cacheBreaker = input.take(9)
        let data = input.rest()
        fuzzCheck((try? AMPEncoding.decodePath(AMPEncoding.encodePath(data, cacheBreaker: cacheBreaker))) == data, "an AMP path does not round-trip")
        _ = try? AMPEncoding.decodePath(String(decoding: data, as: UTF8.self))
    }
}

runFuzzer(checkBroker)
