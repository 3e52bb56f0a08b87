import PosternCrypto
import Foundation
import Testing
import TransportBase
@testable import Obfs4Transport

// Vectors made by running lyrebird v0.5.0's obfs4 code (its handshake and framing with fixed keys).

private func hex(_ text: String) -> [UInt8] { hexBytes(text.replacingOccurrences(of: " ", with: "")) }
private func hexString(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

private enum VectorA {
    static let b = hex("a83fdd04eb9ed77a2b38d86092a09a1cecfb93a7bdec0da35e542775b2e7af6e")
    static let B = hex("e79a617a4d7838ecfb2fb97fa4de488eae4e304be991676c16c55bf562ae2424")
    static let nodeID = hex("000102030405060708090a0b0c0d0e0f10111213")
    static let x = hex("308ff4f3a0ebe8c1a93bcd40d67e3eec6b856aa5c07ef6d5a3d3cedf13dcf150")
    static let X = hex("5003bbab0036cb9f9e50e73ca07b319de32d4ee2589247b98eb361ce1183be42")
    static let y = hex("881f9ad60e0833a627f0c47f5aafbdcb0b5471800eaeaa1e678291b947e4295c")
    static let Y = hex("ea4c43068ebafcbc8d0262947f36a06852bfd030d804b6d3be3ab46342ea6438")
    static let keySeed = "05b858d18df21a01566c74d39a5b091b4415f103c05851e77e79b274132dc5b5"
    static let auth = "dc71f8ded2e56f829f1b944c1e94357fa8b7987f10211a017e2d1f2455092917"
    static let okm = """
    85aac2f77cdbb70592324264104956451ecb8fd1dd9aadd5c7528bc05d2fd0bf\
    345d37323ccb9fef8a602da3b1b3ec6a71a39fdeab451580b2d8808c48669bad\
    e6e7677a12fccbeae61b693ee41e907c298b86e92ea1383b3bda2c46cb76e160\
    5dcedc41c910e24b2f0263e882b19a8cf52ebcd78d68fd26cca5e76554a51f60\
    42cce9818364b93b222bfdb03a0d4538
    """
}

@Suite struct Obfs4NtorVectors {
    @Test func vectorAPublicKeysMatchSecrets() throws {
        #expect(try Sodium.x25519Base(scalar: VectorA.b) == VectorA.B)
        #expect(try Sodium.x25519Base(scalar: VectorA.x) == VectorA.X)
        #expect(try Sodium.x25519Base(scalar: VectorA.y) == VectorA.Y)
    }

    @Test func vectorAClientAndServerAgree() throws {
        let client = try Obfs4Ntor.client(clientSecret: VectorA.x, clientPublic: VectorA.X, serverPublic: VectorA.Y,
                                          identityKey: VectorA.B, nodeID: VectorA.nodeID)
        #expect(hexString(client.keySeed) == VectorA.keySeed)
        #expect(hexString(client.auth) == VectorA.auth)
        let server = try Obfs4Ntor.server(serverSecret: VectorA.y, serverPublic: VectorA.Y, identitySecret: VectorA.b,
                                          identityKey: VectorA.B, nodeID: VectorA.nodeID, clientPublic: VectorA.X)
        #expect(server.keySeed == client.keySeed)
        #expect(server.auth == client.auth)
        #expect(hexString(Obfs4Ntor.expand(keySeed: client.keySeed)) == VectorA.okm)
    }

    @Test func vectorAFrames() throws {
        let okm = hex(VectorA.okm)
        var clientToServer = FrameEncoder(keys: DirectionKeys(keyMaterial: okm[0..<72]))
        #expect(hexString(try clientToServer.frame(type: 0, payload: Array("hello".utf8))) == "544f53631e5dc0ff78a173c77ae49e44aa6d2b339ce7db20d515")
        #expect(hexString(try clientToServer.frame(type: 0, payload: Array("world".utf8))) == "eb61b4aa2ec2bcb8c8e4665d56ee17ab776500675352718a8162")
        var serverToClient = FrameEncoder(keys: DirectionKeys(keyMaterial: okm[72..<144]))
        let seedFrame = try serverToClient.frame(type: 1, payload: Array(0..<24))
        #expect(hexString(seedFrame) == "a9210b8e4f822a86a2005174932b506b69cf63f92fc9160269d76205eadb1a1fdc957d27ad13d41c458c8dba5d")

        var decoder = FrameDecoder(keys: DirectionKeys(keyMaterial: okm[72..<144]))
        decoder.append(seedFrame)
        #expect(try decoder.nextPacket() == DecodedPacket(type: 1, payload: Array(0..<24)))
        #expect(try decoder.nextPacket() == nil)
        #expect(!decoder.hasPartialFrame)
    }

    @Test func hkdfMatchesRFC5869CaseOne() {
        let okm = Digest.hkdfSHA256(inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22), salt: Array(0...12),
                             info: Array(0xf0...0xf9), length: 42)
        #expect(hexString(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }
}

@Suite struct Elligator2Vectors {
    @Test func sqrtMinusOneSquaresToMinusOne() {
        #expect(FieldElement.sqrtMinusOne.squared() == -FieldElement.one)
    }

    @Test func fieldInverseAndCanonicalForm() {
        let value = FieldElement(bytes: hex("5003bbab0036cb9f9e50e73ca07b319de32d4ee2589247b98eb361ce1183be42"))
        #expect(value * value.inverted() == FieldElement.one)
        // p itself (2^255 − 19) is non-canonical zero.
        let p = FieldElement(bytes: hex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"))
        #expect(p.canonicalBytes == [UInt8](repeating: 0, count: 32))
    }

    @Test func vectorCKeyGeneration() throws {
        let first = try #require(try RepresentableKeyPair.derive(fromSeed: hex("535846116a4275b42abf2b1257e264ab42fcf264b244174e7bc6b0a57a544dd9")))
        #expect(hexString(first.secretKey) == "10558bca44b0020489373f5912c3951617f6ee6336bda2ed488c56f84121b14d")
        #expect(hexString(first.representative) == "4341e0b290c11ad9d295372798d0a5397a510970ad891ac54fdfe75340e36598")
        #expect(hexString(first.publicKey) == "8562ea8f9bdad24c9769b51f295755745be3080eec484017344f9de7a1ca7871")

        #expect(try RepresentableKeyPair.derive(fromSeed: hex("0acec0978e1fbe1ff292527d7c9eb1ed03cd1d39f7a9c8d643bcb82deccc1e26")) == nil)

        let server = try #require(try RepresentableKeyPair.derive(fromSeed: hex("932038397b3b6a16e9bb7ecdd35a1e7a1eb3d54a695aaf348240c1863d930454")))
        #expect(hexString(server.secretKey) == "a6cd768f68444262bf79ba2e5778281e7c345d0c40aeb6a6c193ae62289a68b4")
        #expect(hexString(server.representative) == "af2a6cf092fad21eeb6485f88b68dc94571d9332bb891a020b9779c8533e6925")
        #expect(hexString(server.publicKey) == "a4e9491760515f00ef763db36fff70ecf56cd7051939339d00d05e7947ef412b")

        let third = try #require(try RepresentableKeyPair.derive(fromSeed: hex("ecc225bfec64ad3e3cab7ad6cfe2990bac58f0c1a398d69ae816989f3b9557ce")))
        #expect(hexString(third.secretKey) == "423e9fd269484755da2c9c20caf3a202aa6760709e4942e81f288da0849f2362")
        #expect(hexString(third.representative) == "bda4c05031f5333c9f644371295a4fbd2e1e6000f88b4aaa66b8bbbd6da795ba")
        #expect(hexString(third.publicKey) == "f6ea6c1a4106b9215bdd91d19d9cf91321a155555ced0e3c1cf2eb40fabf717c")
        #expect(hexString(try Sodium.x25519Base(scalar: third.secretKey)) == "ef7a29be4ffb86b941cc02d1275652f151634fe7de6cc9e6b351484c832c3d51")
    }

    @Test func decodeClearsBothTopBits() {
        let u = Elligator2.decode(representative: hex("8781b04fefa49473ca5943ab23a14689dad56f8118d5869ad378c079fd2f4079"))
        #expect(hexString(u) == "a946c3dd16d99b8c38972584ca599da53e32e8b13c1e9a408ff22fdb985c2d79")
    }

    @Test func representativesRoundTripAndCarryRandomTopBits() throws {
        var topBits = Set<UInt8>()
        for _ in 0..<64 {
            let pair = try RepresentableKeyPair.generate()
            #expect(Elligator2.decode(representative: pair.representative) == pair.publicKey)
            topBits.insert(pair.representative[31] & 0xC0)
            // The dirty key gives the same shared secret as the clean one.
            let peer = SecureRandom.bytes(32)
            let clean = try Sodium.x25519Base(scalar: pair.secretKey)
            #expect(try Sodium.x25519(scalar: peer, point: pair.publicKey) == Sodium.x25519(scalar: peer, point: clean))
        }
        #expect(topBits.count > 1)
        // The old-bridge retry clears bit 254 (0x40 of the last byte) and keeps bit 255 random.
        var bit255 = Set<UInt8>()
        for _ in 0..<16 {
            let retryKey = try RepresentableKeyPair.generate(clearTweakBit254: true)
            #expect(retryKey.representative[31] & 0x40 == 0)
            #expect(Elligator2.decode(representative: retryKey.representative, clearingBit254: false) == retryKey.publicKey)
            bit255.insert(retryKey.representative[31] & 0x80)
        }
        #expect(bit255.count == 2)
    }
}

@Suite struct SipHashDRBGVectors {
    @Test func vectorD() {
        var zero = SipHashDRBG(seed: [UInt8](repeating: 0, count: 24))
        #expect([zero.nextInt63(), zero.nextInt63(), zero.nextInt63()] == [7432626515892259304, 5773523046280711756, 4537542203639783680])
        var other = SipHashDRBG(seed: hex("0c10867722204c856e78315d669449dcb6e66f2fe5247a80"))
        #expect([other.nextInt63(), other.nextInt63(), other.nextInt63()] == [9059004827137905928, 6853924365612632173, 1485252377529977150])
    }

    @Test func streamingStateEqualsOneShotSipHashOfHistory() {
        let seed = Array(UInt8(0)..<24)
        var drbg = SipHashDRBG(seed: seed)
        var history = Array(seed[16..<24])
        for _ in 0..<40 {
            let block = drbg.nextBlock()
            let expected = Sodium.sipHash24(key: Array(seed[0..<16]), message: history)
            #expect(block == expected)
            for shift in stride(from: 0, to: 64, by: 8) { history.append(UInt8(truncatingIfNeeded: block >> UInt64(shift))) }
        }
    }
}

@Suite struct HandshakeVectorB {
    static let identity = try! Obfs4ServerIdentity(nodeID: VectorA.nodeID, publicKey: VectorA.B)

    static func clientKey() throws -> RepresentableKeyPair {
        try #require(try RepresentableKeyPair.derive(fromSeed: hex("535846116a4275b42abf2b1257e264ab42fcf264b244174e7bc6b0a57a544dd9")))
    }

    static let request = hex("""
    4341e0b290c11ad9d295372798d0a5397a510970ad891ac54fdfe75340e36598\
    000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\
    202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f\
    404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f\
    60616263 03724390e9a06b701e629eba0db9fea7 3a66bfb0f22cdfcb31afaf9a1e52293d
    """)
    static let response = hex("""
    af2a6cf092fad21eeb6485f88b68dc94571d9332bb891a020b9779c8533e6925\
    b1849c11c0aa2bddd5da9b6a297d9c157f4f2c5dab35b75281b34418fdea1d8c\
    00010203040506070809 28d97f32be417f78d6c95853b46d5b56 e30e1a2481360c676286db549c39cffa
    """)
    static let seedFrame = hex("0fe2b422fd0802ab004c22c9a0664085c5639ff574b72d743e8c3654573f96b63a167e61df17b407c24517e923")
    static let okm = """
    ba6cf067aebfac0ae7d01e60a7697858368625f2235f684f29c3585c910a7afd\
    0f55d2b64cd806521fd882566521630c0b7f5a59d0e4aa3cb6ff309d94b39a68\
    5bd8a868f3ee2b3b447c63948a4c6e7de978d45be08938b357210fd740250cc0\
    1e6b12c71715caacd82a009a5c8ce9fbcf2e4055abd0b0f32e94f9cc2fdea9fb\
    c16779f115e7fcfe22c88cbab1be06ea
    """

    static func handshake() throws -> ClientHandshake {
        ClientHandshake(identity: identity, keyPair: try clientKey(), padding: Array(0..<100), epochHour: "480000")
    }

    @Test func clientRequestIsByteExact() throws {
        #expect(Self.request.count == 164)
        #expect(try Self.handshake().request() == Self.request)
    }

    @Test func serverResponseVerifiesAndYieldsKeysAndSeedFrame() throws {
        let handshake = try Self.handshake()
        #expect(Self.response.count == 106)
        // Partial responses ask for more bytes.
        #expect(try handshake.parseResponse(Array(Self.response.prefix(95))) == nil)
        #expect(try handshake.parseResponse(Array(Self.response.prefix(105))) == nil)
        let outcome = try #require(try handshake.parseResponse(Self.response + Self.seedFrame))
        #expect(hexString(outcome.keyMaterial) == Self.okm)
        #expect(outcome.remainder == Self.seedFrame)

        var decoder = FrameDecoder(keys: DirectionKeys(keyMaterial: outcome.keyMaterial[72..<144]))
        decoder.append(outcome.remainder)
        #expect(try decoder.nextPacket() == DecodedPacket(type: 1, payload: Array(0..<24)))

        var encoder = FrameEncoder(keys: DirectionKeys(keyMaterial: outcome.keyMaterial[0..<72]))
        #expect(hexString(try encoder.frame(type: 0, payload: Array("hello".utf8))) == "df2b5e9741b880ce5138a613ffa7e358d2e1041573223d8f1872")
        #expect(hexString(try encoder.frame(type: 0, payload: [], paddingLength: 4)) == "a5a4e232062b8df5ea8a93e0c1b7c8256ef529c5ef06277d2a")
    }

    @Test func tamperedResponsesAreRejectedWithTypedErrors() throws {
        let handshake = try Self.handshake()
        var badMAC = Self.response
        badMAC[badMAC.count - 1] ^= 1
        #expect { try handshake.parseResponse(badMAC) } throws: { ($0 as? TransportError)?.code == .obfs4ServerMACMismatch }

        // A wrong E (clock far off) also fails the MAC.
        let skewed = ClientHandshake(identity: Self.identity, keyPair: try Self.clientKey(), padding: Array(0..<100), epochHour: "480002")
        #expect { try skewed.parseResponse(Self.response) } throws: { ($0 as? TransportError)?.code == .obfs4ServerMACMismatch }

        // Garbage without a mark: waits below 8192 bytes, fails at 8192.
        let garbage = SecureRandom.bytes(8191)
        #expect(try handshake.parseResponse(garbage) == nil)
        #expect { try handshake.parseResponse(garbage + [0]) } throws: { ($0 as? TransportError)?.code == .obfs4ServerMarkNotFound }
    }

    @Test func wrongIdentityKeyGivesAuthMismatch() throws {
        // Same NODEID/B for the MAC key but a different server ephemeral → AUTH no longer matches.
        var response = Self.response
        response[40] ^= 0x01   // inside AUTH; MAC_S covers it, so recompute the MAC for the tampered bytes
        let markPosition = 32 + 32 + 10
        let mac = Array(Digest.hmacSHA256(key: Self.identity.hmacKey, Array(response[0..<markPosition + 16]), Array("480000".utf8)).prefix(16))
        response.replaceSubrange((markPosition + 16)..<(markPosition + 32), with: mac)
        #expect { try Self.handshake().parseResponse(response) } throws: { ($0 as? TransportError)?.code == .obfs4AuthMismatch }
    }
}
