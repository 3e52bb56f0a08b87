import PosternSystem
import BridgeConfig
import Foundation

extension Command {
    static let relays = Command(
        name: "relays",
        summary: "List, add and remove custom Nostr relays",
        details: """
        Postern always uses its built-in relays; you can add up to \(NostrRelayURL.maximumCustom) more.
        Addresses are normalized (a bare host gets wss://, ports 443/80 are dropped, ...); .onion
        relays are accepted.
        """,
        subcommands: [.relaysList, .relaysAdd, .relaysRemove])

    static let relaysList = Command(
        name: "list",
        summary: "List the built-in and custom relays",
        options: [.flag("json", "print the list as JSON")],
        run: { invocation in
            try invocation.requireNoPositionals()
            let configuration = try invocation.bridgeStore().load()
            if invocation.json {
                struct Listing: Encodable { let builtin: [String]; let custom: [String]; let maximumCustom: Int }
                try invocation.output.json(Listing(builtin: NostrRelayURL.builtin.map(\.rawValue),
                                                   custom: configuration.customRelays.map(\.rawValue),
                                                   maximumCustom: NostrRelayURL.maximumCustom))
            } else {
                let rows = NostrRelayURL.builtin.map { [$0.rawValue, "built-in"] } + configuration.customRelays.map { [$0.rawValue, "custom"] }
                invocation.output.print(PlainText.table(header: ["RELAY", "KIND"], rows: rows))
                invocation.output.print("\(NostrRelayURL.builtin.count) built-in, \(configuration.customRelays.count) custom (up to \(NostrRelayURL.maximumCustom) custom)")
            }
            return 0
        })

    static let relaysAdd = Command(
        name: "add",
        summary: "Add custom relays",
        synopsis: "URL...",
        details: "Each URL is added or reported on its own; the exit status is 1 if any was not added.",
        run: { invocation in
            try changeRelays(invocation, verb: "added") { (configuration: inout BridgeConfiguration, text: String) throws(BridgeConfigError) -> String in
                try configuration.addRelay(text).rawValue
            }
        })

    static let relaysRemove = Command(
        name: "remove",
        summary: "Remove custom relays (in any form that normalizes to them)",
        synopsis: "URL...",
        details: "Each URL is removed or reported on its own; the exit status is 1 if any was not removed.",
        run: { invocation in
            try changeRelays(invocation, verb: "removed") { (configuration: inout BridgeConfiguration, text: String) throws(BridgeConfigError) -> String in
                let relay = try NostrRelayURL(normalizing: text)
                try configuration.removeRelay(text)
                return relay.rawValue
            }
        })

    private static func changeRelays(_ invocation: Invocation, verb: String,
                                     _ change: (inout BridgeConfiguration, String) throws(BridgeConfigError) -> String) throws -> Int32 {
        let inputs = try invocation.requirePositionals("at least one relay URL")
        var lines: [String] = []
        var failures = 0
        try invocation.bridgeStore().update { configuration in
            for input in inputs {
                do throws(BridgeConfigError) {
                    lines.append("\(verb) \(try change(&configuration, input))")
                } catch {
                    failures += 1
                    lines.append("not \(verb): \(input): \(error.message)")
                }
            }
        }
        let succeeded = inputs.count - failures
        var summary = "\(verb) \(PlainText.counted(succeeded, "relay"))"
        if failures > 0 { summary += "; \(failures) not \(verb)" }
        invocation.output.print((lines + [summary]).joined(separator: "\n"))
        return failures > 0 ? 1 : 0
    }
}
