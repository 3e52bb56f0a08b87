import CSodium

/// Hex and the digests Core and the app layer share (libsodium); `package`: not Postern's API.
package enum Hex {
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    package static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

/// SHA-256, HMAC-SHA256 and HKDF (RFC 5869) from libsodium.
package enum Digest {
    package static func sha256(_ data: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(data)
        var out = [UInt8](repeating: 0, count: 32)
        crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
        return out
    }

    package static func hmacSHA256(key: [UInt8], _ parts: [UInt8]...) -> [UInt8] {
        var state = crypto_auth_hmacsha256_state()
        crypto_auth_hmacsha256_init(&state, key, key.count)
        for part in parts { crypto_auth_hmacsha256_update(&state, part, UInt64(part.count)) }
        var out = [UInt8](repeating: 0, count: 32)
        crypto_auth_hmacsha256_final(&state, &out)
        return out
    }

    package static func hkdfExtract(salt: [UInt8], inputKeyMaterial: [UInt8]) -> [UInt8] {
        hmacSHA256(key: salt, inputKeyMaterial)
    }

    package static func hkdfExpand(pseudoRandomKey: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        var output: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            previous = hmacSHA256(key: pseudoRandomKey, previous, info, [counter])
            output += previous
            counter += 1
        }
        return Array(output.prefix(length))
    }
}
