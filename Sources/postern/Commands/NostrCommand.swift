import PosternRuntime
import BridgeConfig
import Foundation
import PosternSystem
import PosternAppLayer
import PosternTor

extension Command {
    static let nostrSharedOptions: [OptionSpec] = [
        .value("key-file", "FILE", "the Nostr secret key, 64 hex digits (created 0600 if missing; default <config dir>/nostr-key)"),
        .value("relay", "URL", repeatable: true, "relay to use instead of the built-in and custom relays"),
    ] + OptionSpec.ownTorOptions(dataDirectory: "tor-nostr") + [
        .value("timeout", "SECONDS", "give up after this long (default 120)"),
        .flag("json", "print JSON lines"),
    ]

    static let nostr = Command(
        name: "nostr",
        summary: "Send and receive NIP-17 private messages over Nostr relays, through tor",
        details: """
        Reaches the relays through tor: the tor of a running 'postern run' when there is one (its
        status file names its SOCKS port; no second tor starts), otherwise an in-process tor of its
        own with the stored bridges and transport (connection assist with the transport auto), as
        'postern run' would. With the Tor preference off (see BRIDGE-CONFIG.md) the relays are
        reached directly: a real change in exposure.
        """,
        subcommands: [.nostrSend, .nostrListen, .nostrKey])

    static let nostrSend = Command(
        name: "send", summary: "Send a private message (NIP-17 gift wrap)", synopsis: "--to PUBKEY (- | --message-file FILE | MESSAGE)",
        details: """
        The message comes from standard input ('-') or --message-file: an argument is visible to
        every local user in the process list (/proc/PID/cmdline) and stays in shell history, so a
        MESSAGE argument is sent with a warning on standard error. One trailing newline is dropped.
        """,
        options: [.value("to", "PUBKEY", "recipient's public key, 64 hex digits"),
                  .value("message-file", "FILE", "read the message from FILE ('-' for standard input)")] + nostrSharedOptions,
        run: { invocation in try await NostrSession(invocation).send() })

    static let nostrListen = Command(
        name: "listen", summary: "Print private messages addressed to this key",
        options: [.value("count", "N", "exit after N messages (default: until interrupted or --timeout)")] + nostrSharedOptions,
        run: { invocation in try await NostrSession(invocation).listen() })

    static let nostrKey = Command(
        name: "key", summary: "Print this key's public key (creating the key if needed)",
        options: [nostrSharedOptions[0]],
        run: { invocation in
            let keys = try NostrSession(invocation).loadOrCreateKey()
            invocation.output.print(keys.publicKeyHex)
            return 0
        })
}

/// One `postern nostr` invocation: the tor it goes through, the relay manager, and the CLI's output.
struct NostrSession: Sendable {
    let invocation: Invocation

    init(_ invocation: Invocation) { self.invocation = invocation }

    func loadOrCreateKey() throws -> NostrKeyPair {
        let path = invocation.arguments.value("key-file") ?? NostrKeyFile.defaultPath(inConfigDirectory: invocation.paths.configDirectory)
        do { return try NostrKeyFile.loadOrCreate(at: path) } catch { throw CommandFailure(error.message) }
    }

    private func relays() throws -> [String] {
        let given = invocation.arguments.all("relay")
        if given.isEmpty { return try NostrRelayManager.relays(configDirectory: invocation.paths.configDirectory) }
        return try given.map { text in
            do { return try NostrRelayURL(normalizing: text).rawValue } catch { throw invocation.usageError("--relay '\(text)': \(error)") }
        }
    }

    /// Starts tor (when the preference wants it) or attaches to a running one, and connects a
    /// relay manager through it.
    private func start() async throws -> (TorRoute, NostrRelayManager) {
        let relays = try relays()
        let output = invocation.output
        let route = try await TorRoute.open(invocation, dataDirectory: invocation.paths.stateDirectory.appendingPathComponent("tor-nostr"),
                                            command: "postern nostr")
        // What happens to each relay connection (a relay that breaks the protocol, sends too much
        // or goes silent ends its connection with a typed reason) goes to stderr; relay URLs are
        // the user's public choice, not secrets.
        let manager = NostrRelayManager(activation: route.activation, relays: relays, log: { event in
            output.error("postern nostr: relay \(event)")
        })
        await manager.connect()
        return (route, manager)
    }

    func send() async throws -> Int32 {
        let arguments = invocation.arguments
        guard let recipient = arguments.value("to") else { throw invocation.usageError("send needs --to PUBKEY") }
        let recipientKey: NostrPublicKey
        do throws(AppLayerError) {
            recipientKey = try NostrPublicKey(validating: recipient)
        } catch {
            throw invocation.usageError("--to '\(recipient)': \(error.message)")
        }
        let message: String
        if let file = arguments.value("message-file") {
            guard arguments.positionals.isEmpty else { throw invocation.usageError("give the message either with --message-file or as MESSAGE, not both") }
            message = try NIP17.messageText(fromInput: InputReader.read(file, output: invocation.output).text)
        } else {
            guard arguments.positionals.count == 1 else {
                throw invocation.usageError("send takes the message on standard input (-), with --message-file FILE, or as one MESSAGE argument")
            }
            if arguments.positionals[0] == "-" {
                message = try NIP17.messageText(fromInput: InputReader.read("-", output: invocation.output).text)
            } else {
                InputReader.warnSecretOnCommandLine("a message", instead: "'postern nostr send --to PUBKEY -' (standard input) or --message-file FILE",
                                                    output: invocation.output)
                message = arguments.positionals[0]
            }
        }
        guard !message.isEmpty else { throw invocation.usageError("the message is empty") }
        let seconds = try invocation.positiveSeconds("timeout", default: 120)
        let keys = try loadOrCreateKey()
        let wrap = try NIP17.giftWrap(message: message, from: keys, to: recipientKey)
        let (tor, manager) = try await start()
        let output = invocation.output
        let accepted = await manager.publish(wrap, awaitingAcceptanceFor: .clampedSeconds(seconds)) { relay, text in
            output.error("postern nostr send: \(relay) refused: \(text)")
        }
        await manager.disconnect()
        await tor.close()
        guard let relay = accepted else { throw CommandFailure("no relay accepted the message within \(Int(seconds)) s") }
        let receipt = NostrSendReceipt(eventID: wrap.id, relay: relay)
        invocation.output.print(invocation.json ? receipt.jsonLine : receipt.text)
        return 0
    }

    func listen() async throws -> Int32 {
        let arguments = invocation.arguments
        var limit: Int?
        if let text = arguments.value("count") {
            guard let count = Int(text), count > 0 else { throw invocation.usageError("--count needs a positive number, not '\(text)'") }
            limit = count
        }
        let seconds = try invocation.positiveSeconds("timeout", default: 120)
        let keys = try loadOrCreateKey()
        let (tor, manager) = try await start()
        let inbox = await manager.privateMessages(for: keys)
        if !invocation.json { invocation.output.print("listening as \(keys.publicKeyHex)") }
        let output = invocation.output
        let json = invocation.json
        let stop = SignalWaiter(signals: [SIGINT, SIGTERM])
        let received = await PrivateMessage.read(inbox, limit: limit, timeout: .clampedSeconds(seconds),
                                                 interrupted: { await stop.wait() },
                                                 received: { message in output.print(json ? message.jsonLine : message.text) })
        await manager.disconnect()
        await tor.close()
        if let limit, received < limit { throw CommandFailure("received \(received) of \(limit) messages") }
        return 0
    }
}
