import BridgeConfig
import Foundation
import PosternAppLayer

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
            let listing = NostrRelayListing(try invocation.bridgeStore().load())
            try invocation.render(listing, text: listing.text)
            return 0
        })

    static let relaysAdd = Command(
        name: "add",
        summary: "Add custom relays",
        synopsis: "URL...",
        details: "Each URL is added or reported on its own; the exit status is 1 if any was not added.",
        run: { invocation in
            try changeRelays(invocation) { configuration, inputs in configuration.addRelays(inputs) }
        })

    static let relaysRemove = Command(
        name: "remove",
        summary: "Remove custom relays (in any form that normalizes to them)",
        synopsis: "URL...",
        details: "Each URL is removed or reported on its own; the exit status is 1 if any was not removed.",
        run: { invocation in
            try changeRelays(invocation) { configuration, inputs in configuration.removeRelays(inputs) }
        })

    /// Applies `change` to the URLs under one lock; each URL is changed or reported on its own.
    private static func changeRelays(_ invocation: Invocation,
                                     _ change: (inout BridgeConfiguration, [String]) -> NostrRelayChangeReport) throws -> Int32 {
        let inputs = try invocation.requirePositionals("at least one relay URL")
        let report = try invocation.bridgeStore().update { configuration in change(&configuration, inputs) }
        invocation.output.print(report.text)
        return report.failed ? 1 : 0
    }
}
