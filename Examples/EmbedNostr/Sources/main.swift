// Embeds a Postern session with a pasted obfs4 bridge and sends one NIP-17 private message to a
// relay (a .onion one works: names resolve at the far end). Walkthrough: docs/EMBEDDING.md.
//
//   EmbedNostr RELAY_URL RECIPIENT_PUBKEY < input
//   input: the bridge line (as BridgeDB or a friend gives it), then the message.
// Environment: EMBED_SOCKS_PORT (default 39050), EMBED_TOR_OPTIONS (a file of extra tor options,
// for private test networks). The bridge and the message never go on the command line.
import Foundation
import PosternAppLayer
import PosternRuntime

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("EmbedNostr: \(message)\n".utf8))
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else { fail("usage: EmbedNostr RELAY_URL RECIPIENT_PUBKEY < bridge line, then message", status: 64) }
let input = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
    .split(separator: "\n", maxSplits: 1).map(String.init)
guard input.count == 2 else { fail("standard input needs the bridge line, then the message", status: 64) }

// 1. Settings in memory: the pasted bridge, and its transport as the route.
let settings = InMemorySettings()
do {
    let bridge = try BridgeLine.parse(input[0], rules: Transports.argumentRules).line
    try settings.update { configuration in
        _ = try configuration.add(bridge)
        configuration.transport = TransportSelection(bridge.transport)
    }
} catch { fail("the bridge line: \(error)", status: 64) }

// 2. The session: tor, the obfs4 transport, SOCKS on loopback.
let state = FileManager.default.temporaryDirectory.appendingPathComponent("embed-nostr-\(getpid())")
defer { try? FileManager.default.removeItem(at: state) }
var options = SessionOptions(dataDirectory: state.appendingPathComponent("tor"))
do {
    options.socks = try SocksEndpoint(port: UInt16(ProcessInfo.processInfo.environment["EMBED_SOCKS_PORT"] ?? "") ?? 39050)
    if let file = ProcessInfo.processInfo.environment["EMBED_TOR_OPTIONS"] {
        options.torOptions = try TorOption.parseLines(String(contentsOfFile: file, encoding: .utf8))
    }
} catch { fail("options: \(error)", status: 64) }
let session: PosternSession
do {
    session = try await PosternSession.start(settings: .inMemory(settings, stateDirectory: state),
                                             transports: try Transports.registry(), options: options)
} catch { fail("\(error)") }

// 3. Wait for tor, then publish the gift wrap through the session and wait for the relay's OK.
guard await session.awaitReady(timeout: .seconds(180)) else { await session.stop(); fail("tor did not get ready") }
let keys = NostrKeyPair.generate()
let wrap = try NIP17.giftWrap(message: input[1], from: keys, to: arguments[2].lowercased())
let relays = NostrRelayManager(session: session, relays: [arguments[1]])
await relays.connect()
await relays.publish(wrap)
let accepted = Task {
    for await message in relays.messages {
        if case .ok(wrap.id, let ok, _, let relay) = message { return ok ? relay : nil }
    }
    return nil
}
let timer = Task { try await Task.sleep(for: .seconds(180)); accepted.cancel() }
let relay = await accepted.value
timer.cancel()
await relays.disconnect()
await session.stop()
guard let relay else { fail("the relay did not accept the message") }
print("sent \(wrap.id) from \(keys.publicKeyHex) (accepted by \(relay))")
