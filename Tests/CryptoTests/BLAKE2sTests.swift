import COpenSSL
import Foundation
import PosternCrypto
import Testing

/// Vectors/blake2s-python.json, written by Tests/Support/noise-vectors/blake2s_vectors.py with
/// Python's hashlib and hmac.
struct BLAKE2sVectors: Decodable {
    struct Hash: Decodable { var message: String; var key: String; var outputLength: Int; var digest: String }
    struct MAC: Decodable { var key: String; var message: String; var mac: String }
    struct HKDF: Decodable { var chainingKey: String; var inputKeyMaterial: String; var outputs: [String] }
    var rfc7693SelfTest: String
    var hashes: [Hash]
    var hmacs: [MAC]
    var hkdfs: [HKDF]

    static func load() throws -> BLAKE2sVectors {
        let url = try #require(Bundle.module.url(forResource: "blake2s-python", withExtension: "json", subdirectory: "Vectors"))
        return try JSONDecoder().decode(BLAKE2sVectors.self, from: Data(contentsOf: url))
    }
}

@Suite struct BLAKE2sTests {
    /// RFC 7693 Appendix B: BLAKE2s-256("abc").
    @Test func rfc7693AppendixB() {
        #expect(Hex.encode(BLAKE2s.hash(Array("abc".utf8)))
                == "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982")
    }

    /// RFC 7693 Appendix E: the self-test's hash of 48 digests (four lengths, six inputs, keyed and
    /// unkeyed), whose expected value the RFC prints.
    @Test func rfc7693AppendixESelfTest() {
        func sequence(_ length: Int, _ seed: UInt32) -> [UInt8] {
            var a = 0xDEAD_4BAD &* seed
            var b: UInt32 = 1
            return (0..<length).map { _ in
                let t = a &+ b
                a = b
                b = t
                return UInt8(t >> 24)
            }
        }
        var digests: [UInt8] = []
        for outputLength in [16, 20, 28, 32] {
            for inputLength in [0, 3, 64, 65, 255, 1024] {
                let input = sequence(inputLength, UInt32(inputLength))
                digests += BLAKE2s.hash(input, key: [], outputLength: outputLength)
                digests += BLAKE2s.hash(input, key: sequence(outputLength, UInt32(outputLength)), outputLength: outputLength)
            }
        }
        #expect(Hex.encode(BLAKE2s.hash(digests))
                == "6a411f08ce25adcdfb02aba641451cec53c598b24f4fc787fbdc88797f4c1dfe")
    }

    @Test func hashesMatchPythonHashlib() throws {
        let vectors = try BLAKE2sVectors.load()
        #expect(vectors.hashes.count > 140)
        for vector in vectors.hashes {
            let digest = BLAKE2s.hash(Hex.decode(vector.message), key: Hex.decode(vector.key), outputLength: vector.outputLength)
            #expect(Hex.encode(digest) == vector.digest, "message of \(vector.message.count / 2) bytes, key of \(vector.key.count / 2)")
        }
    }

    /// OpenSSL's EVP_blake2s256 (the oracle only; PosternCrypto does not link OpenSSL) on every length
    /// from 0 to 600 bytes, over block boundaries, with bytes from a seeded generator.
    @Test func hashesMatchOpenSSL() {
        var generator = SplitMix64(seed: 0x7693)
        for length in 0...600 {
            let message = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            var digest = [UInt8](repeating: 0, count: 32)
            var digestLength: UInt32 = 0
            let ok = EVP_Digest(message, message.count, &digest, &digestLength, EVP_blake2s256(), nil)
            #expect(ok == 1 && digestLength == 32)
            #expect(BLAKE2s.hash(message) == digest, "length \(length)")
        }
    }

    @Test func partsHashAsTheirConcatenation() {
        let a = [UInt8](repeating: 0xAA, count: 40), b = [UInt8](repeating: 0xBB, count: 70)
        #expect(BLAKE2s.hash(a, b) == BLAKE2s.hash(a + b))
        #expect(BLAKE2s.hash(parts: [a, [], b]) == BLAKE2s.hash(a + b))
        #expect(BLAKE2s.hmac(key: a, b, a) == BLAKE2s.hmac(key: a, b + a))
    }

    @Test func hmacMatchesPythonHmac() throws {
        let vectors = try BLAKE2sVectors.load()
        #expect(vectors.hmacs.count == 42)
        for vector in vectors.hmacs {
            #expect(Hex.encode(BLAKE2s.hmac(key: Hex.decode(vector.key), Hex.decode(vector.message))) == vector.mac,
                    "key of \(vector.key.count / 2) bytes, message of \(vector.message.count / 2)")
        }
    }

    @Test func noiseHKDFMatchesPython() throws {
        let vectors = try BLAKE2sVectors.load()
        #expect(vectors.hkdfs.count == 4)
        for vector in vectors.hkdfs {
            let outputs = BLAKE2s.hkdf(chainingKey: Hex.decode(vector.chainingKey), inputKeyMaterial: Hex.decode(vector.inputKeyMaterial),
                                       outputCount: vector.outputs.count)
            #expect(outputs.map(Hex.encode) == vector.outputs)
        }
    }
}

/// A small seeded generator (SplitMix64) so the OpenSSL comparison covers the same bytes every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
