import Foundation
import PosternTor

/// A Nostr secret key kept in a file: 64 hex digits and a newline, created 0600 atomically
/// (temporary file, fsync, rename) when missing, in a 0700 directory.
public enum NostrKeyFile {
    /// The key in `path`, or a new one written there when the file is missing; throws when the file
    /// holds no valid key or cannot be written.
    public static func loadOrCreate(at path: String) throws(AppLayerError) -> NostrKeyPair {
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            do {
                return try NostrKeyPair(secretKeyHex: text.trimmingCharacters(in: .whitespacesAndNewlines))
            } catch {
                throw AppLayerError(error.code, kind: .usage, "key file \(path): \(error.message)")
            }
        }
        let keys = NostrKeyPair.generate()
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = path + ".tmp-\(getpid())"
        do {
            try FileManager.default.createDirectory(atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw AppLayerError(.filesystem, "cannot create key file \(path): \(String(cString: strerror(errno)))")
            }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            try handle.write(contentsOf: Data((Hex.encode(keys.secretKey) + "\n").utf8))
            try handle.synchronize()
            try handle.close()
        } catch let error as AppLayerError {
            throw error
        } catch {
            unlink(temporary)
            throw AppLayerError(.filesystem, "cannot create key file \(path): \(error)")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw AppLayerError(.filesystem, "cannot create key file \(path): \(String(cString: strerror(errno)))")
        }
        return keys
    }
}

/// A NIP-17 private message opened for its recipient.
public struct PrivateMessage: Sendable, Hashable {
    /// The sender's public key (the seal's signer, checked to be the rumor's author).
    public var sender: String
    /// The rumor's time (Unix seconds, as the sender gave it).
    public var createdAt: Int
    /// The message text; it comes from outside: escape it before a terminal shows it.
    public var content: String
}

extension NostrRelayManager {
    /// Publishes `event` and waits until a relay accepts it (that relay's URL) or `timeout` passes
    /// (nil). Refusals are reported to `refused` (relay, message) and the wait goes on. Consumes
    /// ``messages`` meanwhile.
    public func publish(_ event: NostrEvent, awaitingAcceptanceFor timeout: Duration,
                        refused: @escaping @Sendable (_ relay: String, _ message: String) -> Void = { _, _ in }) async -> String? {
        let messages = messages
        let waiting = Task { () -> String? in
            for await message in messages {
                if case .ok(event.id, let ok, let text, let relay) = message {
                    if ok { return relay }
                    refused(relay, text)
                }
            }
            return nil
        }
        publish(event)
        let timer = Task { try await Task.sleep(for: timeout); waiting.cancel() }
        let relay = await waiting.value
        timer.cancel()
        return relay
    }

    /// Subscribes to the gift wraps addressed to `recipient` and yields each message it can open,
    /// once (relays may send the same wrap twice) among the last ``maximumRememberedEventIDs`` event
    /// ids. Consumes ``messages``; ends with it.
    public func privateMessages(for recipient: NostrKeyPair, subscription: String = "postern-inbox") -> AsyncStream<PrivateMessage> {
        privateMessages(for: recipient, subscription: subscription, rememberingAtMost: Self.maximumRememberedEventIDs)
    }

    func privateMessages(for recipient: NostrKeyPair, subscription: String, rememberingAtMost capacity: Int) -> AsyncStream<PrivateMessage> {
        subscribe(id: subscription, filterJSON: "{\"kinds\":[1059],\"#p\":[\"\(recipient.publicKeyHex)\"]}")
        let messages = messages
        let (stream, continuation) = AsyncStream.makeStream(of: PrivateMessage.self)
        let reader = Task {
            var seen = SeenEventIDs(capacity: capacity)
            for await message in messages {
                guard case .event(_, let event, _) = message else { continue }
                if seen.contains(event.id) {
                    _ = seen.insert(event.id)  // seen again: among the most recent now
                    continue
                }
                // Only a wrap that opens takes a place: anyone can sign events tagged with our key,
                // and junk remembered first would push out the ids of real messages.
                guard let (sender, rumor) = try? NIP17.unwrap(event, recipient: recipient) else { continue }
                _ = seen.insert(event.id)
                continuation.yield(PrivateMessage(sender: sender, createdAt: rumor.createdAt, content: rumor.content))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in reader.cancel() }
        return stream
    }
}
