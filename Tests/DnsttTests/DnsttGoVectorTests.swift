import Foundation
import PosternCrypto
import Testing
import TurboTunnel
@testable import DnsttTransport

/// Vectors/dnstt-go.json, written by Tests/Support/dnstt-testbed/vectors (its header lists every
/// field): Noise from flynn/noise 1.0.0 and KCP from kcp-go 5.6.1, the libraries dnstt links, and DNS
/// messages from the test bed's Go codec, which that tool first checks against the dnstt notes'
/// §7.2 vectors. Our codecs must produce and read the same bytes.
struct DnsttGoVectors: Decodable {
    struct Capacity: Decodable { var domain: String; var queryCapacity: Int; var clientKCPMTU: Int }
    struct Query: Decodable {
        var name: String
        var clientIDHex: String
        var paddingHex: String
        var packetHex: String?
        var id: UInt16
        var domain: String
        var payloadHex: String
        var qname: String
        var wireHex: String
    }
    struct Response: Decodable {
        var name: String
        var queryWireHex: String
        var packetsHex: [String]
        var rcode: Int
        var wireHex: String
        var payloadHex: String
    }
    struct TXT: Decodable { var name: String; var payloadHex: String; var rdataHex: String }
    struct Split: Decodable { var name: String; var payloadHex: String; var packetsHex: [String] }
    struct Message: Decodable { var plaintextHex: String; var ciphertextHex: String; var framedHex: String }
    struct ChunkedWrite: Decodable { var plaintextLength: Int; var framesHex: [String] }
    struct Noise: Decodable {
        var prologueHex: String
        var serverStaticPrivateHex: String
        var serverStaticPublicHex: String
        var clientEphemeralPrivateHex: String
        var serverEphemeralPrivateHex: String
        var message1Hex: String
        var message2Hex: String
        var handshakeHashHex: String
        var clientToServer: [Message]
        var serverToClient: [Message]
        var chunkedWrite: ChunkedWrite
        var matchesNotes: Bool
    }
    struct Segment: Decodable {
        var conv: UInt32
        var cmd: UInt8
        var frg: UInt8
        var wnd: UInt16
        var ts: UInt32
        var sn: UInt32
        var una: UInt32
        var dataHex: String
    }
    struct Packet: Decodable { var direction: String; var hex: String; var segments: [Segment] }
    struct KCP: Decodable { var conv: UInt32; var clientMTU: Int; var serverMTU: Int; var packets: [Packet] }

    var capacities: [Capacity]
    var queries: [Query]
    var responses: [Response]
    var txtPayloads: [TXT]
    var splitPackets: [Split]
    var noise: Noise
    var kcp: KCP
    var kcpInQuery: Query

    static func load() throws -> DnsttGoVectors {
        let url = try #require(Bundle.module.url(forResource: "dnstt-go", withExtension: "json", subdirectory: "Vectors"))
        return try JSONDecoder().decode(DnsttGoVectors.self, from: Data(contentsOf: url))
    }
}

@Suite struct DnsttGoVectorTests {
    let vectors: DnsttGoVectors

    init() throws { vectors = try DnsttGoVectors.load() }

    @Test func capacitiesAndClientMTUs() throws {
        #expect(vectors.capacities.count >= 4)
        for entry in vectors.capacities {
            let domain = try #require(DnsName(parsing: entry.domain), "\(entry.domain)")
            #expect(DnsttWire.capacity(domain: domain) == entry.queryCapacity, "\(entry.domain)")
            #expect(try DnsttWire.mtu(domain: domain) == entry.clientKCPMTU, "\(entry.domain)")
        }
    }

    @Test func queriesAreByteEqual() throws {
        #expect(vectors.queries.count >= 6)
        for query in vectors.queries + [vectors.kcpInQuery] {
            let domain = try #require(DnsName(parsing: query.domain))
            let clientID = try ClientID(bytes: bytes(hex: query.clientIDHex))
            let payload = try DnsttWire.queryPayload(clientID: clientID, padding: bytes(hex: query.paddingHex),
                                                     packet: query.packetHex.map { bytes(hex: $0) })
            #expect(hex(payload) == query.payloadHex, "\(query.name)")
            let name = try DnsttWire.queryName(payload: payload, domain: domain)
            #expect(name.description == query.qname, "\(query.name)")
            #expect(hex(DnsttWire.queryMessage(id: query.id, name: name).encoded) == query.wireHex, "\(query.name)")
            // The server's reading of the name gives back the ClientID and the packet.
            let reading = try #require(DnsttWire.serverReading(of: name, domain: domain), "\(query.name)")
            #expect(reading.clientID == clientID)
            #expect(reading.packets == (query.packetHex.map { [bytes(hex: $0)] } ?? []), "\(query.name)")
        }
    }

    @Test func responsesGiveThePacketsOrAreRefused() throws {
        #expect(vectors.responses.count >= 5)
        for response in vectors.responses {
            let query = try DnsMessage(decoding: bytes(hex: response.queryWireHex))
            let domain = try #require(query.questions.first?.name.labels.suffix(3)).map { $0 }
            let zone = try #require(DnsName(labels: domain))
            let message = try DnsMessage(decoding: bytes(hex: response.wireHex))
            if response.rcode == 0 {
                let payload = try DnsttWire.responsePayload(message, domain: zone)
                #expect(hex(payload) == response.payloadHex, "\(response.name)")
                #expect(DnsttWire.packets(in: payload).map { hex($0) } == response.packetsHex, "\(response.name)")
            } else {
                #expect(throws: DnsttError.self, "\(response.name)") { try DnsttWire.responsePayload(message, domain: zone) }
            }
        }
    }

    @Test func txtStringsAndPacketSplitting() throws {
        for entry in vectors.txtPayloads {
            #expect(hex(DnsttWire.encodeTXT(bytes(hex: entry.payloadHex))) == entry.rdataHex, "\(entry.name)")
            #expect(hex(try DnsttWire.decodeTXT(bytes(hex: entry.rdataHex))) == entry.payloadHex, "\(entry.name)")
        }
        for entry in vectors.splitPackets {
            #expect(DnsttWire.packets(in: bytes(hex: entry.payloadHex)).map { hex($0) } == entry.packetsHex, "\(entry.name)")
        }
    }

    /// flynn/noise's handshake and transport messages, with the ephemerals it was given.
    @Test func noiseMatchesFlynn() throws {
        let noise = vectors.noise
        #expect(noise.matchesNotes)
        #expect(bytes(hex: noise.prologueHex) == DnsttNoise.prologue)
        let initiator = try NoiseNKInitiator(serverPublicKey: bytes(hex: noise.serverStaticPublicHex), prologue: DnsttNoise.prologue,
                                             ephemeralPrivateKey: bytes(hex: noise.clientEphemeralPrivateHex))
        let responder = try NoiseNKResponder(staticPrivateKey: bytes(hex: noise.serverStaticPrivateHex), prologue: DnsttNoise.prologue,
                                             ephemeralPrivateKey: bytes(hex: noise.serverEphemeralPrivateHex))
        let first = try DnsttNoise.firstMessage(initiator)
        #expect(hex(first) == "0030" + noise.message1Hex)
        #expect(try responder.readHandshake(bytes(hex: noise.message1Hex)).isEmpty)
        let (message2, _, _) = try responder.writeHandshake(payload: [])
        #expect(hex(message2) == noise.message2Hex)
        let (send, receive) = try DnsttNoise.finish(initiator, message: bytes(hex: noise.message2Hex))
        #expect(hex(initiator.handshakeHash) == noise.handshakeHashHex)

        #expect(!noise.clientToServer.isEmpty && !noise.serverToClient.isEmpty)
        for message in noise.clientToServer {
            let framed = try DnsttNoise.seal(bytes(hex: message.plaintextHex), with: send)
            #expect(hex(framed) == message.framedHex)
            #expect(message.framedHex.hasSuffix(message.ciphertextHex))
        }
        var decoder = NoiseFrameDecoder()
        for message in noise.serverToClient {
            decoder.append(bytes(hex: message.framedHex))
            let contents = try #require(try decoder.nextMessage())
            #expect(hex(contents) == message.ciphertextHex)
            #expect(hex(try DnsttNoise.open(contents, with: receive)) == message.plaintextHex)
        }
        // One 5000-byte server write, cut by flynn's side into 4096 + 904 bytes of plaintext.
        var total = 0
        for frame in noise.chunkedWrite.framesHex {
            decoder.append(bytes(hex: frame))
            let contents = try #require(try decoder.nextMessage())
            let plaintext = try DnsttNoise.open(contents, with: receive)
            #expect(plaintext.count <= DnsttNoise.maximumPlaintextChunk)
            total += plaintext.count
        }
        #expect(total == noise.chunkedWrite.plaintextLength)
        #expect(try decoder.nextMessage() == nil)
    }

    /// Real kcp-go traffic with dnstt's settings: our KCP decoder reads every packet as kcp-go's
    /// listener and client did, and each packet fits the sender's MTU.
    @Test func kcpGoPacketsDecode() throws {
        let kcp = vectors.kcp
        #expect(kcp.packets.contains { $0.direction == "c2s" } && kcp.packets.contains { $0.direction == "s2c" })
        for packet in kcp.packets {
            let raw = bytes(hex: packet.hex)
            #expect(raw.count <= (packet.direction == "c2s" ? kcp.clientMTU : kcp.serverMTU))
            let segments = try KCPSegment.decodePacket(raw, conversation: kcp.conv)
            #expect(segments.count == packet.segments.count)
            for (ours, theirs) in zip(segments, packet.segments) {
                #expect(ours.conversation == theirs.conv)
                #expect(ours.command.rawValue == theirs.cmd)
                #expect(ours.fragment == theirs.frg)
                #expect(ours.window == theirs.wnd)
                #expect(ours.timestamp == theirs.ts)
                #expect(ours.sequenceNumber == theirs.sn)
                #expect(ours.unacknowledged == theirs.una)
                #expect(hex(ours.payload) == theirs.dataHex)
            }
            var encoded: [UInt8] = []
            for segment in segments { segment.encode(into: &encoded) }
            #expect(encoded == raw)
        }
    }
}
