/// A TLS 1.2 ClientHello with common ECDHE suites, enough for tor's OpenSSL to answer with a
/// ServerHello: what the snowflake tests send through a session to show bytes reach the bridge.
public func tlsClientHello() -> [UInt8] {
    func be16(_ n: Int) -> [UInt8] { [UInt8((n >> 8) & 0xff), UInt8(n & 0xff)] }
    var body: [UInt8] = [0x03, 0x03]
    body += (0..<32).map { _ in UInt8.random(in: 0...255) }
    body.append(0)  // no session ID
    let suites: [UInt16] = [0xc02f, 0xc030, 0xc02b, 0xc02c, 0x009e, 0x002f, 0x0035]
    body += be16(suites.count * 2) + suites.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    body += [1, 0]  // compression: null
    var extensions: [UInt8] = []
    func ext(_ type: UInt16, _ data: [UInt8]) { extensions += [UInt8(type >> 8), UInt8(type & 0xff)] + be16(data.count) + data }
    ext(0x000a, be16(4) + [0x00, 0x1d, 0x00, 0x17])                     // supported_groups: x25519, P-256
    ext(0x000b, [1, 0])                                                 // ec_point_formats: uncompressed
    ext(0x000d, be16(8) + [0x04, 0x01, 0x08, 0x04, 0x04, 0x03, 0x02, 0x01]) // signature_algorithms
    body += be16(extensions.count) + extensions
    let handshake: [UInt8] = [0x01, 0, UInt8(body.count >> 8), UInt8(body.count & 0xff)] + body
    return [0x16, 0x03, 0x01] + be16(handshake.count) + handshake
}
