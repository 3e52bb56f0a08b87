// Noise NK (PosternCrypto): the responder reading a first handshake message, and a cipher state
// opening transport messages.
//
// Invariants, trapping when broken:
//   - arbitrary bytes as the first message: no trap; a refusal has one of the handshake's codes, and
//     a refused handshake refuses its next step (wrongState); bytes that are accepted have 48 to
//     65535 bytes and a payload 48 bytes shorter;
//   - a real first message (fuzzer-chosen ephemeral key and payload), edited by the fuzzer (a flipped
//     bit, a cut, bytes appended) or not: accepted with exactly its payload when unedited, refused
//     when edited;
//   - a cipher state fed a stream of real messages that the fuzzer drops, repeats, tampers with or
//     interleaves with raw bytes: a message opens exactly when it is the next real message, to
//     its plaintext; a failure does not move the counter; the counter never passes 2^64 − 1.
import FuzzSupport
import PosternCrypto

let staticPrivateKey = (1...32).map { UInt8($0) }
let responderEphemeral = (0x41...0x60).map { UInt8($0) }
let prologue = Array("dnstt 2020-04-13".utf8)
let staticPublicKey = try! X25519.publicKey(privateKey: staticPrivateKey)
let handshakeCodes: Set<NoiseError.Code> = [.badMessageLength, .authenticationFailed, .weakPublicKey, .messageTooShort]

func responder() -> NoiseNKResponder {
    try! NoiseNKResponder(staticPrivateKey: staticPrivateKey, prologue: prologue, ephemeralPrivateKey: responderEphemeral)
}

/// Reads `message` with a fresh responder; nil payload means refused (and checked as such).
func read(_ message: [UInt8]) -> [UInt8]? {
    let responder = responder()
    do throws(NoiseError) {
        let payload = try responder.readHandshake(message)
        fuzzCheck((48...65535).contains(message.count), "accepted a first message of \(message.count) bytes")
        fuzzCheck(payload.count == message.count - 48, "payload is not the message less 48 bytes")
        let answer = try? responder.writeHandshake()
        fuzzCheck(answer?.message.count == 48, "an accepted handshake did not answer")
        return payload
    } catch {
        fuzzCheck(handshakeCodes.contains(error.code), "unexpected code \(error.code)")
        let next = Result { () throws(NoiseError) in try responder.writeHandshake() }
        if case .failure(let later) = next {
            fuzzCheck(later.code == .wrongState, "a refused handshake went on with \(later.code)")
        } else {
            fuzzCheck(false, "a refused handshake answered")
        }
        return nil
    }
}

func checkArbitraryFirstMessage(_ input: inout FuzzInput) {
    _ = read(input.rest())
}

func checkRealFirstMessage(_ input: inout FuzzInput) {
    var ephemeral = input.take(32)
    ephemeral += [UInt8](repeating: 0x5A, count: 32 - ephemeral.count)
    let payload = input.chunk() ?? []
    guard let initiator = try? NoiseNKInitiator(serverPublicKey: staticPublicKey, prologue: prologue, ephemeralPrivateKey: ephemeral),
          var message = try? initiator.writeHandshake(payload: payload) else {
        fuzzCheck(false, "an initiator could not write a first message")
        return
    }
    let original = message
    switch input.byte().map({ $0 % 4 }) {
    case 1:
        let bit = (input.uint16() ?? 0) % (message.count * 8)
        message[bit / 8] ^= 1 << UInt8(bit % 8)
    case 2:
        message = Array(message.prefix(Int(input.byte() ?? 0) % message.count))
    case 3:
        message += input.chunk().flatMap { $0.isEmpty ? nil : $0 } ?? [0]
    default:
        break
    }
    let result = read(message)
    if message == original {
        fuzzCheck(result == payload, "a real first message was not read back to its payload")
    } else {
        fuzzCheck(result == nil, "an edited first message was accepted")
    }
}

func checkTransport(_ input: inout FuzzInput) {
    let key = [UInt8](repeating: 0x33, count: 32)
    // Start near the end of the counter now and then.
    let start: UInt64 = switch input.byte().map({ $0 % 8 }) {
    case 0: UInt64.max - 1
    case 1: UInt64.max - 3
    default: 0
    }
    let sender = NoiseCipherState(key: key, nonce: start)
    let receiver = NoiseCipherState(key: key, nonce: start)
    var sealed: [[UInt8]] = []
    var plaintexts: [[UInt8]] = []
    while !input.isAtEnd, sealed.count < 64, let size = input.byte() {
        let plaintext = input.take(Int(size))
        guard let message = try? sender.encrypt(plaintext) else {
            fuzzCheck(sender.nonce == UInt64.max, "encrypt failed before the counter's end")
            break
        }
        sealed.append(message)
        plaintexts.append(plaintext)
        if input.byte().map({ $0 & 0x80 != 0 }) ?? true { break }
    }
    // The receiver's diet: real messages by index, edited or not, and raw bytes.
    var steps = 0
    while !input.isAtEnd, steps < 256 {
        steps += 1
        guard let op = input.byte() else { break }
        var candidate: [UInt8]
        if op % 4 == 3 || sealed.isEmpty {
            candidate = input.chunk() ?? []
        } else {
            candidate = sealed[Int(input.byte() ?? 0) % sealed.count]
            if op % 4 == 1, let position = input.uint16(), !candidate.isEmpty {
                candidate[position % candidate.count] ^= UInt8(1 << (position / candidate.count % 8))
            } else if op % 4 == 2 {
                candidate = Array(candidate.prefix(Int(input.byte() ?? 0)))
            }
        }
        let before = receiver.nonce
        let expectedIndex = before >= start ? Int(exactly: before - start) : nil
        let genuine = expectedIndex.flatMap { $0 < sealed.count ? sealed[$0] : nil }
        do throws(NoiseError) {
            let opened = try receiver.decrypt(candidate)
            fuzzCheck(candidate == genuine, "a message opened that is not the next real one")
            fuzzCheck(opened == plaintexts[expectedIndex!], "a real message opened to other bytes")
            fuzzCheck(receiver.nonce == before + 1, "the counter did not advance by one")
        } catch {
            fuzzCheck(receiver.nonce == before, "a failed message moved the counter")
            fuzzCheck(candidate != genuine || error.code == .nonceExhausted, "the next real message failed with \(error.code)")
            if before == UInt64.max {
                fuzzCheck(error.code == .nonceExhausted || error.code == .messageTooShort || error.code == .messageTooLarge,
                          "the last nonce was used (\(error.code))")
            }
        }
    }
}

runFuzzer { raw in
    var input = FuzzInput(raw)
    switch input.byte().map({ $0 % 3 }) {
    case 0: checkArbitraryFirstMessage(&input)
    case 1: checkRealFirstMessage(&input)
    case 2: checkTransport(&input)
    default: break
    }
}
