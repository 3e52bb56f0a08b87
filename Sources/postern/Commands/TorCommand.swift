import BridgeConfig
import Foundation
import PosternRuntime

extension Command {
    static let tor = Command(
        name: "tor",
        summary: "Show or set whether Postern's traffic goes through Tor",
        details: "Without a command, shows the preference. On by default.",
        options: [.flag("json", "print the preference as JSON")],
        subcommands: [.torOn, .torOff],
        run: { invocation in
            try invocation.requireNoPositionals()
            let enabled = try invocation.bridgeStore().load().torEnabled
            struct Shown: Encodable { let torEnabled: Bool }
            try invocation.render(Shown(torEnabled: enabled), text: TorPreference.text(enabled: enabled))
            return 0
        })

    static let torOn = Command(
        name: "on",
        summary: "Send Postern's traffic through Tor (fail-closed)",
        run: { invocation in try setTor(true, invocation) })

    static let torOff = Command(
        name: "off",
        summary: "Stop using Tor: Postern's traffic goes direct and reveals your IP address",
        details: TorPreference.offExplanation.joined(separator: "\n"),
        run: { invocation in try setTor(false, invocation) })

    private static func setTor(_ enabled: Bool, _ invocation: Invocation) throws -> Int32 {
        try invocation.requireNoPositionals()
        let previous = try invocation.bridgeStore().update { configuration in
            let previous = configuration.torEnabled
            configuration.torEnabled = enabled
            return previous
        }
        invocation.output.print(TorPreference.text(enabled: enabled, unchanged: previous == enabled))
        return 0
    }
}
