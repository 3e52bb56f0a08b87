import PosternCrypto
import Foundation
import Testing
@testable import PosternTor
@testable import PosternAppLayer

private let vectorsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors")

private func hex(_ text: String) -> [UInt8] { Hex.decode(text)! }

/// NIP-44 v2 against the published vector file (Vectors/README.md names its source and hash).
@Suite struct NIP44VectorTests {
    let v2: [String: Any]
    init() throws {
        let data = try Data(contentsOf: vectorsDirectory.appendingPathComponent("nip44.vectors.json"))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        v2 = try #require(root["v2"] as? [String: Any])
    }
    var valid: [String: Any] { v2["valid"] as! [String: Any] }
    var invalid: [String: Any] { v2["invalid"] as! [String: Any] }

    @Test func conversationKeys() throws {
        let cases = try #require(valid["get_conversation_key"] as? [[String: String]])
        #expect(cases.count == 35)
        for item in cases {
            let key = try NIP44.conversationKey(secretKey: hex(item["sec1"]!), publicKey: hex(item["pub2"]!))
            #expect(Hex.encode(key) == item["conversation_key"], "\(item)")
        }
    }

    @Test func invalidConversationKeysAreRejected() throws {
        let cases = try #require(invalid["get_conversation_key"] as? [[String: String]])
        #expect(cases.count == 8)
        for item in cases {
            #expect(throws: AppLayerError.self, "\(item["note"] ?? "")") {
                try NIP44.conversationKey(secretKey: hex(item["sec1"]!), publicKey: hex(item["pub2"]!))
            }
        }
    }

    @Test func messageKeys() throws {
        let group = try #require(valid["get_message_keys"] as? [String: Any])
        let conversation = hex(group["conversation_key"] as! String)
        let keys = try #require(group["keys"] as? [[String: String]])
        #expect(!keys.isEmpty)
        for item in keys {
            let derived = try NIP44.messageKeys(conversationKey: conversation, nonce: hex(item["nonce"]!))
            #expect(Hex.encode(derived.chachaKey) == item["chacha_key"])
            #expect(Hex.encode(derived.chachaNonce) == item["chacha_nonce"])
            #expect(Hex.encode(derived.hmacKey) == item["hmac_key"])
        }
    }

    @Test func paddedLengths() throws {
        let cases = try #require(valid["calc_padded_len"] as? [[Int]])
        #expect(cases.count == 24)
        for pair in cases { #expect(NIP44.paddedLength(pair[0]) == pair[1], "\(pair)") }
    }

    @Test func encryptDecrypt() throws {
        let cases = try #require(valid["encrypt_decrypt"] as? [[String: String]])
        #expect(cases.count == 10)
        for item in cases {
            let sec1 = hex(item["sec1"]!), sec2 = try NostrKeyPair(secretKey: hex(item["sec2"]!))
            let key = try NIP44.conversationKey(secretKey: sec1, publicKey: sec2.publicKey)
            #expect(Hex.encode(key) == item["conversation_key"])
            let payload = try NIP44.encrypt(item["plaintext"]!, conversationKey: key, nonce: hex(item["nonce"]!))
            #expect(payload == item["payload"])
            // And the other direction: sec2 with pub1 gives the same key and decrypts.
            let pub1 = try NostrKeyPair(secretKey: sec1).publicKey
            let back = try NIP44.conversationKey(secretKey: sec2.secretKey, publicKey: pub1)
            #expect(try NIP44.decrypt(item["payload"]!, conversationKey: back) == item["plaintext"])
        }
    }

    @Test func longMessages() throws {
        let cases = try #require(valid["encrypt_decrypt_long_msg"] as? [[String: Any]])
        #expect(cases.count == 3)
        for item in cases {
            let plaintext = String(repeating: item["pattern"] as! String, count: item["repeat"] as! Int)
            #expect(Hex.encode(Digest.sha256(Array(plaintext.utf8))) == item["plaintext_sha256"] as? String)
            let key = hex(item["conversation_key"] as! String)
            let payload = try NIP44.encrypt(plaintext, conversationKey: key, nonce: hex(item["nonce"] as! String))
            #expect(Hex.encode(Digest.sha256(Array(payload.utf8))) == item["payload_sha256"] as? String)
            #expect(try NIP44.decrypt(payload, conversationKey: key) == plaintext)
        }
    }

    @Test func invalidMessageLengths() throws {
        let lengths = try #require(invalid["encrypt_msg_lengths"] as? [Int])
        for length in lengths {
            #expect(throws: AppLayerError.self) {
                try NIP44.encrypt(String(repeating: "a", count: length), conversationKey: [UInt8](repeating: 1, count: 32))
            }
        }
    }

    @Test func invalidPayloadsAreRejected() throws {
        let cases = try #require(invalid["decrypt"] as? [[String: String]])
        #expect(cases.count == 12)
        for item in cases {
            #expect(throws: AppLayerError.self, "\(item["note"] ?? "")") {
                try NIP44.decrypt(item["payload"]!, conversationKey: hex(item["conversation_key"]!))
            }
        }
    }
}

/// BIP-340 against bitcoin/bips' test-vectors.csv (vectors 0-3 sign, all verify).
@Suite struct BIP340VectorTests {
    @Test func signAndVerifyVectors() throws {
        let text = try String(contentsOf: vectorsDirectory.appendingPathComponent("bip340-test-vectors.csv"), encoding: .utf8)
        let rows = text.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == 15)
        var signed = 0
        for row in rows {
            let (secret, publicKey, aux, message, signature, result) = (row[1], row[2], row[3], row[4], row[5], row[6])
            if !secret.isEmpty {
                let pair = try NostrKeyPair(secretKeyHex: secret)
                #expect(pair.publicKeyHex == publicKey.lowercased(), "vector \(row[0])")
                let produced = try pair.sign(hex(message), auxiliaryRandomness: hex(aux))
                #expect(Hex.encode(produced) == signature.lowercased(), "vector \(row[0])")
                signed += 1
            }
            let verified = NostrKeyPair.verify(signature: hex(signature), message: hex(message), publicKey: hex(publicKey))
            #expect(verified == (result == "TRUE"), "vector \(row[0]): \(row.last ?? "")")
        }
        #expect(signed == 4)
    }
}
