import Synchronization
import TransportBase

/// A few ready-made client ephemeral keys, so a dial does not spend its time on Elligator2
/// rejection sampling (about two tries of field exponentiations plus an Ed25519 multiplication).
///
/// Each key is handed out once and the cache refills in the background. Keys made ahead of time are
/// also what spec §3.1 asks for: the number of retries must not show in the handshake's timing.
final class EphemeralKeyCache: Sendable {
    static let shared = EphemeralKeyCache(capacity: 4)

    private let capacity: Int
    private let state = Mutex<(keys: [RepresentableKeyPair], refilling: Bool)>(([], false))

    init(capacity: Int) { self.capacity = capacity }

    /// A fresh key pair, never handed out before.
    func take() throws(TransportError) -> RepresentableKeyPair {
        let cached = state.withLock { state -> RepresentableKeyPair? in
            state.keys.isEmpty ? nil : state.keys.removeFirst()
        }
        refillInBackground()
        if let cached { return cached }
        return try RepresentableKeyPair.generate()
    }

    private func refillInBackground() {
        let start = state.withLock { state -> Bool in
            guard !state.refilling, state.keys.count < capacity else { return false }
            state.refilling = true
            return true
        }
        guard start else { return }
        Task.detached(priority: .utility) { [self] in
            while true {
                guard let key = try? RepresentableKeyPair.generate() else { break }
                let full = state.withLock { state -> Bool in
                    state.keys.append(key)
                    return state.keys.count >= capacity
                }
                if full { break }
            }
            state.withLock { $0.refilling = false }
        }
    }
}
