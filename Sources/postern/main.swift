import Foundation

let root = Command(
    name: "postern",
    summary: "Postern: an embedded Tor client that gets through censorship.",
    details: "Serves a fail-closed SOCKS5 listener on 127.0.0.1:39050 backed by an in-process tor.",
    subcommands: [.run, .status, .ab, .bridges, .transport, .tor, .relays, .config, .nostr, .geo, .ptClient])

let code = await Dispatcher.main(root: root, arguments: Array(CommandLine.arguments.dropFirst()), output: Output())
exit(code)
