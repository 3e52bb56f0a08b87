import Foundation

/// Vectors/snowflake-go.json: wire formats captured from Debian's Go snowflake 2.5.1, kcp-go 5.6.1,
/// smux 1.5.16 and pion/webrtc v3 by Tests/Support/snowflake-testbed/vectors/main.go.
struct GoVectors: Decodable {
    struct EncapsulationVector: Decodable {
        var kind: String
        var length: Int
        var prefixHex: String
        var encodedHex: String?
    }
    struct Stream: Decodable {
        var hex: String
        var packetsHex: [String]
    }
    struct Description: Decodable {
        var type: String
        var sdp: String
        var serialized: String
    }
    struct PollRequest: Decodable {
        var offer: String
        var nat: String
        var fingerprint: String
        var encoded: String
    }
    struct PollResponse: Decodable {
        var answer: String
        var error: String
        var encoded: String
    }
    struct AMPPath: Decodable {
        var path: String
        var data: String
    }
    struct AMPArmor: Decodable {
        var body: String
        var encoded: String
    }
    struct Packet: Decodable {
        var direction: String
        var hex: String
    }
    struct KCP: Decodable {
        var conv: UInt32
        var clientWritesHex: [String]
        var packets: [Packet]
    }
    struct Smux: Decodable {
        var writes: [Packet]
    }

    var source: String
    var turbotunnelTokenHex: String
    var encapsulation: [EncapsulationVector]
    var encapsulationStream: Stream
    var sessionDescription: Description
    var pollRequests: [PollRequest]
    var pollResponses: [PollResponse]
    var ampPath: AMPPath
    var ampArmor: AMPArmor
    var pionOfferSerialized: String
    var kcp: KCP
    var smux: Smux

    static let shared: GoVectors = {
        guard let url = Bundle.module.url(forResource: "snowflake-go", withExtension: "json", subdirectory: "Vectors"),
              let data = try? Data(contentsOf: url),
              let vectors = try? JSONDecoder().decode(GoVectors.self, from: data) else {
            fatalError("Vectors/snowflake-go.json is missing or malformed")
        }
        return vectors
    }()
}

func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(hex.utf8.count / 2)
    var high: UInt8?
    for c in hex.utf8 {
        let v: UInt8 = c <= 57 ? c - 48 : (c | 0x20) - 87
        if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
    }
    return out
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Bytes i mod 251, as the vector tool fills data chunks.
func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8($0 % 251) }
}
