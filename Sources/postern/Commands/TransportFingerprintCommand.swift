import PosternRuntime
import TransportBase

extension Command {
    static let transportFingerprint = Command(
        name: "fingerprint",
        summary: "Show the JA3 and JA4 of the TLS hello each snowflake and webtunnel route sends",
        synopsis: "[--profile NAME]",
        details: """
        For each enabled snowflake and webtunnel bridge and each built-in one: the TLS connection it
        makes (snowflake's broker, front or AMP cache; webtunnel's server), the ClientHello profile
        its utls-imitate= or utls= asks for, the profile sent, and the JA3 and JA4 of that hello, made
        in memory: nothing is sent. A randomized profile draws a new hello for every connection, so
        its row shows one draw. --profile NAME shows one profile instead: a uTLS name
        (hellorandomizedalpn, hellorandomizednoalpn, hellorandomized, hellofirefox_auto,
        hellochrome_auto, none, ...) or Postern's own (firefox-esr, randomized, randomized-alpn,
        randomized-noalpn). Bridges are named by their ID only.
        """,
        options: [.flag("json", "print the rows as JSON"),
                  .value("profile", "NAME", "show this profile's hello (offering h2,http/1.1) instead of the routes'")],
        run: { invocation in
            try invocation.requireNoPositionals()
            let rows: [RouteTLSFingerprint]
            if let name = invocation.arguments.value("profile") {
                do throws(TransportError) {
                    rows = [try RouteTLSFingerprint.profile(named: name)]
                } catch where error.kind == .invalidInput {
                    throw invocation.usageError(error.message)
                } catch {
                    throw CommandFailure(error.message)
                }
            } else {
                let configuration = try invocation.bridgeStore().load()
                do throws(TransportError) {
                    rows = try RouteTLSFingerprint.configured(configuration)
                } catch {
                    throw CommandFailure(error.message)
                }
            }
            try invocation.render(rows, text: RouteTLSFingerprint.text(rows))
            return 0
        })
}
