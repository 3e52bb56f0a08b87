import PosternRuntime
import Foundation
import TransportBase

extension Command {
    static let ptClient = Command(
        name: "pt-client",
        summary: "Serve Postern's transports to an ordinary tor as a pt-spec managed proxy",
        details: """
        For tor's configuration: ClientTransportPlugin obfs4 exec /path/to/postern pt-client
        (likewise snowflake and webtunnel, or all three: ClientTransportPlugin obfs4,snowflake,webtunnel
        exec /path/to/postern pt-client). Speaks pluggable-transport spec 1.0 on stdin/stdout (TOR_PT_* environment variables) and
        exits when stdin closes. Not meant to be run by hand.
        """,
        run: { invocation in
            guard invocation.arguments.positionals.isEmpty else {
                throw invocation.usageError("unexpected argument '\(invocation.arguments.positionals[0])'")
            }
            return await ManagedClientProxy.run(registry: try Transports.registry(),
                                                environment: ProcessInfo.processInfo.environment)
        })
}
