import BridgeConfig
import Foundation
import PosternAppLayer

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
            if invocation.json {
                struct Shown: Encodable { let torEnabled: Bool }
                try invocation.output.json(Shown(torEnabled: enabled))
            } else {
                invocation.output.print((["tor: \(enabled ? "on" : "off")"] + (enabled ? torOnExplanation : torOffExplanation))
                    .joined(separator: "\n"))
            }
            return 0
        })

    static let torOn = Command(
        name: "on",
        summary: "Send Postern's traffic through Tor (fail-closed)",
        run: { invocation in try setTor(true, invocation) })

    static let torOff = Command(
        name: "off",
        summary: "Stop using Tor: Postern's traffic goes direct and reveals your IP address",
        details: torOffExplanation.joined(separator: "\n"),
        run: { invocation in try setTor(false, invocation) })

    static let torOnExplanation = [
        "Postern's traffic (relay WebSockets, directory fetches) waits for Tor: nothing is sent until",
        "Tor is connected, and nothing goes around it (fail-closed).",
    ]

    static let torOffExplanation = [
        "With Tor off, Postern's app traffic (relay WebSockets, directory fetches) goes DIRECT:",
        "  - the servers it talks to see your IP address;",
        "  - anyone watching your network sees that you talk to them.",
        "The SOCKS listener (127.0.0.1:39050) is not served while Tor is off.",
        "Turn Tor back on with 'postern tor on'.",
    ]

    private static func setTor(_ enabled: Bool, _ invocation: Invocation) throws -> Int32 {
        try invocation.requireNoPositionals()
        let previous = try invocation.bridgeStore().update { configuration in
            let previous = configuration.torEnabled
            configuration.torEnabled = enabled
            return previous
        }
        let state = enabled ? "on" : "off"
        let first = previous == enabled ? "tor: \(state) (it already was)" : "tor: \(state)"
        invocation.output.print(([first] + (enabled ? torOnExplanation : torOffExplanation)).joined(separator: "\n"))
        return 0
    }
}
