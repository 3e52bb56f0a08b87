// The PT SOCKS5 server's negotiation (greeting, RFC 1929 sub-negotiation carrying the pt-spec §5
// argument string, CONNECT) run from memory: the fuzzer's bytes are what tor would send, delivered in
// fuzzer-chosen pieces, through the same code the listener runs (`PTSocksFuzzEntry`).
//
// Invariants, trapping when broken:
//   - raw input: the outcome does not depend on how the bytes are split into reads; an accepted
//     request has a non-zero port, its arguments round-trip through their description, and the
//     replies written are exactly method choice (+ auth success);
//   - a request built the way tor builds it (arguments escaped, split after 255 bytes into
//     username and password, a lone NUL password when nothing is left) is accepted with exactly the
//     arguments and target that were encoded, and whatever early data it read unaltered.
import Dispatch
import FuzzSupport
import Synchronization
import TransportBase

/// A client connection in memory: reads return the input in the given piece sizes, writes are kept.
final class MemoryConnection: TransportConnection {
    private struct State {
        var pieces: [ArraySlice<UInt8>]
        var written: [UInt8] = []
    }
    private let state: Mutex<State>

    init(_ input: [UInt8], sizes: [UInt8]) { state = Mutex(State(pieces: pieces(of: input, sizes: sizes))) }

    var written: [UInt8] { state.withLock { $0.written } }

    func read(maximumCount: Int) async throws -> [UInt8] {
        state.withLock { state in
            guard !state.pieces.isEmpty else { return [] }
            let piece = state.pieces.removeFirst()
            guard piece.count > maximumCount else { return Array(piece) }
            state.pieces.insert(piece.dropFirst(maximumCount), at: 0)
            return Array(piece.prefix(maximumCount))
        }
    }
    func write(_ bytes: [UInt8]) async throws { state.withLock { $0.written += bytes } }
    func closeWrite() async {}
    func close() {}
}

/// A transport that accepts any arguments and remembers them (a dial is never reached here).
final class RecordingTransport: PluggableTransport {
    let name = TransportName("fuzz")!
    let seen = Mutex<TransportArguments?>(nil)
    func configuration(from arguments: TransportArguments) throws(TransportError) -> TransportArguments {
        seen.withLock { $0 = arguments }
        return arguments
    }
    func dial(_ endpoint: TransportEndpoint, configuration: TransportArguments, context: DialContext) async throws -> any TransportConnection {
        fatalError("the negotiation never dials")
    }
}

struct Outcome: Equatable {
    var target: TransportEndpoint?
    var early: [UInt8] = []
    var arguments: TransportArguments?
    var written: [UInt8]
}

/// Runs one negotiation to its end (the callback is synchronous; the negotiation is async).
func negotiate(_ input: [UInt8], sizes: [UInt8]) -> Outcome {
    let connection = MemoryConnection(input, sizes: sizes)
    let transport = RecordingTransport()
    let result = Mutex<Outcome?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        var outcome = Outcome(written: [])
        if let (target, early) = try? await PTSocksFuzzEntry.negotiate(client: connection, transport: transport) {
            outcome.target = target
            outcome.early = early
        }
        outcome.arguments = transport.seen.withLock { $0 }
        outcome.written = connection.written
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return result.withLock { $0! }
}

func checkRaw(_ input: inout FuzzInput) {
    let sizes = input.chunk() ?? []
    let request = input.rest()
    let outcome = negotiate(request, sizes: sizes)
    // Bytes after the request ("early data") depend on the reads by nature; the rest must not.
    var whole = negotiate(request, sizes: [])
    whole.early = outcome.early
    fuzzCheck(outcome == whole, "the outcome depends on how the bytes were split")
    guard let target = outcome.target else { return }
    fuzzCheck(target.port != 0, "port 0 accepted")
    if let arguments = outcome.arguments, !arguments.pairs.isEmpty {
        fuzzCheck((try? TransportArguments(parsing: arguments.description)) == arguments, "arguments do not round-trip")
        fuzzCheck(outcome.written == [5, 2, 1, 0], "replies for an authenticated request: \(outcome.written)")
    } else {
        fuzzCheck(outcome.written == [5, 0] || outcome.written == [5, 2, 1, 0], "replies: \(outcome.written)")
    }
}

func checkEncoded(_ input: inout FuzzInput) {
    var pairs: [TransportArguments.Pair] = []
    let pairCount = Int(input.byte() ?? 0) % 6
    for _ in 0..<pairCount {
        guard let key = input.chunk(), let value = input.chunk(), !key.isEmpty else { break }
        pairs.append(TransportArguments.Pair(key: String(decoding: key, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
    }
    let arguments = TransportArguments(pairs)
    let ipv6 = (input.byte() ?? 0) & 1 == 1
    let address = input.take(ipv6 ? 16 : 4) + [UInt8](repeating: 1, count: ipv6 ? 16 : 4)
    let port = max(1, input.uint16() ?? 443)
    let early = input.chunk() ?? []
    let sizes = input.rest()

    var request: [UInt8]
    let encoded = Array(arguments.description.utf8)
    if encoded.isEmpty {
        request = [5, 1, 0]
    } else {
        guard encoded.count <= 510 else { return }
        let username = Array(encoded.prefix(255))
        let password = encoded.count > 255 ? Array(encoded.dropFirst(255)) : [0]
        // pt-spec §5's one ambiguity: a remainder that is exactly one NUL reads as "no password".
        guard encoded.count <= 255 || password != [0] else { return }
        request = [5, 1, 2, 1, UInt8(username.count)] + username + [UInt8(password.count)] + password
    }
    request += [5, 1, 0, ipv6 ? 4 : 1] + Array(address.prefix(ipv6 ? 16 : 4)) + [UInt8(port >> 8), UInt8(port & 0xFF)] + early

    let outcome = negotiate(request, sizes: sizes)
    let expected = ipv6 ? try? TransportEndpoint(ipv6: Array(address.prefix(16)), port: UInt16(port))
                        : try? TransportEndpoint(ipv4: Array(address.prefix(4)), port: UInt16(port))
    fuzzCheck(outcome.target != nil && outcome.target == expected, "a well-formed request was refused or misread: \(outcome.written)")
    // What arrived with the request is handed on; what comes in later reads is relayed later.
    fuzzCheck(early.starts(with: outcome.early), "early data altered")
    fuzzCheck((outcome.arguments ?? TransportArguments()) == arguments, "the arguments arrived changed")
}

func checkSocks(_ raw: UnsafeRawBufferPointer) {
    var input = FuzzInput(raw)
    guard let mode = input.byte() else { return }
    if mode & 1 == 0 { checkRaw(&input) } else { checkEncoded(&input) }
}

runFuzzer(checkSocks)
