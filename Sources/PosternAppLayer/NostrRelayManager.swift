import BridgeConfig
import Foundation
import PosternTor
import PosternRuntime
import PosternSystem

/// What the relays said, as it arrives.
public enum NostrRelayMessage: Sendable, Hashable {
    /// An event of a subscription (verified: its ID and signature hold).
    case event(subscription: String, event: NostrEvent, relay: String)
    /// EOSE: the relay sent every stored event of the subscription; new ones follow live.
    case endOfStoredEvents(subscription: String, relay: String)
    /// The relay's answer to a published event: accepted or not, and why.
    case ok(eventID: String, accepted: Bool, message: String, relay: String)
    /// A NOTICE, for people (text from outside).
    case notice(String, relay: String)
    /// The relay closed a subscription, and why.
    case closed(subscription: String, message: String, relay: String)
}

/// A relay connection's state, for status surfaces and tests.
public enum NostrRelayState: Sendable, Hashable {
    /// Not connected and not trying (before ``NostrRelayManager/connect()``, after ``NostrRelayManager/disconnect()``).
    case idle
    /// Tor is wanted and not ready: waiting, nothing sent.
    case waitingForTor
    /// Opening the WebSocket.
    case connecting
    /// Connected: sends go out at once.
    case connected
    /// The last attempt failed; the next one is in `seconds`.
    case backingOff(seconds: Double)
    /// Too many attempts failed in a row: resting before trying again.
    case coolingDown
    /// Tor stayed not ready through every wait: closed, and never tried in the clear.
    case gaveUp(String)
}

/// Nostr relays over the proxied WebSocket (NIP-01 REQ/EVENT/EOSE/CLOSE/OK).
///
/// Every relay connection takes its route from ``NetworkActivationService``: with the Tor
/// preference on it waits for readiness (3 waits, then gives up and stays closed); sends made
/// meanwhile queue (``FailClosedQueue``, 200) and go out once connected. Subscriptions waiting for a
/// connection are kept per relay (64 at most, 600 s each). Reconnects back off 1 s doubling to
/// 300 s with ±20% jitter; after 10 attempts a relay cools down for 600 s.
///
/// A relay is a peer like any other (docs/SECURITY.md, "Caps and deadlines"): a message is at most
/// ``WebSocketConnection/maximumInboundMessageBytes`` (a bigger one closes the connection with
/// 1009, then the relay is retried with backoff); invalid JSON, unknown messages and events that do
/// not verify are dropped; at most ``maximumQueuedMessages`` parsed messages wait for the consumer of
/// ``messages`` (newer ones are dropped and logged, so an endless stream costs bounded memory); at
/// most ``maximumSubscriptions`` subscriptions per relay; an inbox (``privateMessages(for:subscription:)``)
/// remembers the ids of at most ``maximumRememberedEventIDs`` events to drop wraps sent again.
public actor NostrRelayManager {
    /// The built-in relays' URLs.
    public static let builtinRelays: [String] = NostrRelayURL.builtin.map(\.rawValue)
    /// Seconds before the first reconnect, doubling.
    public static let initialBackoff = 1.0
    /// The longest wait between reconnects, in seconds.
    public static let maximumBackoff = 300.0
    /// Failed attempts in a row before a relay cools down.
    public static let attemptsBeforeCooldown = 10
    /// Seconds a relay rests after too many failed attempts.
    public static let cooldown = 600.0
    /// Subscriptions kept per relay while it is not connected.
    public static let pendingSubscriptionCap = 64
    /// Seconds a subscription waits for its relay to connect before it is dropped.
    public static let pendingSubscriptionTTL = 600.0
    /// Parsed messages that wait for the consumer of ``messages``; newer ones are dropped.
    public static let maximumQueuedMessages = 4096
    /// Open subscriptions per relay.
    public static let maximumSubscriptions = 256
    /// Event ids an inbox remembers (64 hex digits each: about 1 MiB in all), the least recently
    /// seen forgotten first; a wrap sent again after its id was forgotten is yielded again.
    public static let maximumRememberedEventIDs = 8192

    /// The relays private messages go to: built-ins plus the user's custom relays.
    public static func relays(for configuration: BridgeConfiguration) -> [String] {
        configuration.allRelays.map(\.rawValue)
    }

    /// The relays of the settings directory `configDirectory` (the built-ins alone when its store
    /// cannot be read).
    public static func relays(configDirectory: URL) throws(BridgeConfigError) -> [String] {
        let store = try BridgeStore(directory: configDirectory.path, rules: Transports.argumentRules)
        return relays(for: (try? store.load()) ?? BridgeConfiguration())
    }

    private final class Relay {
        let url: String
        var state: NostrRelayState = .idle
        var connection: WebSocketConnection?
        var queue = FailClosedQueue<String>()
        /// Active subscriptions: re-sent on every (re)connect.
        var subscriptions: [String: String] = [:]
        var pendingSince: [String: Date] = [:]
        var task: Task<Void, Never>?
        var attempts = 0
        init(url: String) { self.url = url }
    }

    private let activation: NetworkActivationService
    private let log: AppLayerLogger?
    private var relays: [String: Relay] = [:]
    private let messagesContinuation: AsyncStream<NostrRelayMessage>.Continuation
    /// Messages dropped because the consumer of ``messages`` fell ``maximumQueuedMessages`` behind.
    public private(set) var droppedMessages = 0
    /// Everything every relay says. One consumer.
    public nonisolated let messages: AsyncStream<NostrRelayMessage>

    /// A manager of `relays` (WebSocket URLs) whose connections follow `activation`; `log` gets
    /// what the host should know. Nothing connects before ``connect()``.
    public init(activation: NetworkActivationService, relays: [String], log: AppLayerLogger? = nil) {
        self.activation = activation
        self.log = log
        (messages, messagesContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(Self.maximumQueuedMessages))
        for url in relays { self.relays[url] = Relay(url: url) }
    }

    /// The state of `relay`'s connection; nil for a relay this manager does not hold.
    public func state(of relay: String) -> NostrRelayState? { relays[relay]?.state }
    /// Messages queued for `relay` until it connects.
    public func queuedCount(for relay: String) -> Int { relays[relay]?.queue.count ?? 0 }
    /// Subscriptions waiting for `relay` to connect.
    public func pendingSubscriptionCount(for relay: String) -> Int { relays[relay]?.pendingSince.count ?? 0 }

    /// Starts a connection task per relay.
    public func connect() {
        for relay in relays.values where relay.task == nil {
            relay.task = Task { await self.run(relay.url) }
        }
    }

    /// Closes every connection and stops reconnecting; ``messages`` ends.
    public func disconnect() async {
        for relay in relays.values {
            relay.task?.cancel()
            relay.task = nil
            if let connection = relay.connection { await connection.close() }
            relay.connection = nil
            relay.state = .idle
        }
    }

    /// Publishes to every relay (or `only` those): sent now where connected, queued elsewhere.
    public func publish(_ event: NostrEvent, only: [String]? = nil) {
        sendToRelays("[\"EVENT\",\(event.json)]", only: only)
    }

    /// Opens a subscription (`filter` is a NIP-01 filter object as JSON).
    public func subscribe(id: String, filterJSON: String, only: [String]? = nil) {
        let request = "[\"REQ\",\(NostrJSON.quote(id)),\(filterJSON)]"
        for relay in targets(only) {
            if relay.subscriptions[id] == nil && relay.subscriptions.count >= Self.maximumSubscriptions {
                log?(AppLayerLogEvent(component: "nostr \(relay.url)",
                                      message: "subscription \(id) refused: \(Self.maximumSubscriptions) subscriptions are open"))
                continue
            }
            if relay.connection == nil && relay.subscriptions[id] == nil {
                // Pending: cap 64 per relay, oldest pending dropped.
                if relay.pendingSince.count >= Self.pendingSubscriptionCap,
                   let oldest = relay.pendingSince.min(by: { $0.value < $1.value })?.key {
                    relay.pendingSince[oldest] = nil
                    relay.subscriptions[oldest] = nil
                }
                relay.pendingSince[id] = Date()
            }
            relay.subscriptions[id] = request
            if let connection = relay.connection { try? connection.send(.text(request)) }
        }
    }

    /// Closes the subscription `id` on every relay (CLOSE), and forgets it.
    public func unsubscribe(id: String) {
        for relay in relays.values where relay.subscriptions.removeValue(forKey: id) != nil {
            relay.pendingSince[id] = nil
            try? relay.connection?.send(.text("[\"CLOSE\",\(NostrJSON.quote(id))]"))
        }
    }

    private func targets(_ only: [String]?) -> [Relay] {
        guard let only else { return Array(relays.values) }
        return only.compactMap { relays[$0] }
    }

    private func sendToRelays(_ text: String, only: [String]?) {
        for relay in targets(only) {
            if let connection = relay.connection, (try? connection.send(.text(text))) != nil { continue }
            if let line = relay.queue.enqueue(text) { log?(AppLayerLogEvent(component: "nostr \(relay.url)", message: line)) }
        }
    }

    // MARK: Connection loop

    private func run(_ url: String) async {
        guard let relay = relays[url], let address = URL(string: url) else { return }
        while !Task.isCancelled {
            relay.state = await activation.torWanted ? .waitingForTor : .connecting
            let route: NetworkRoute
            do {
                route = try await activation.routeWaitingForTor()
            } catch {
                relay.state = .gaveUp(error.message)
                log?(AppLayerLogEvent(component: "nostr \(url)", message: error.message))
                return
            }
            relay.state = .connecting
            relay.attempts += 1
            do {
                let connection = try await WebSocketConnection.connect(to: address, route: route, isolation: "nostr|\(address.host ?? url)")
                relay.connection = connection
                relay.state = .connected
                relay.attempts = 0
                flush(relay, over: connection)
                do {
                    for try await message in connection.messages { handle(message, from: url) }
                } catch {
                    log?(AppLayerLogEvent(component: "nostr \(url)", message: "connection ended: \(error)"))
                }
                relay.connection = nil
            } catch {
                log?(AppLayerLogEvent(component: "nostr \(url)", message: "connect failed: \(error.message)"))
            }
            if Task.isCancelled { return }
            let delay: Double
            if relay.attempts >= Self.attemptsBeforeCooldown {
                relay.attempts = 0
                relay.state = .coolingDown
                delay = Self.cooldown
            } else {
                delay = Self.backoff(attempt: max(1, relay.attempts))
                relay.state = .backingOff(seconds: delay)
            }
            try? await Task.sleep(for: .seconds(delay))
        }
    }

    /// 1 s doubling to 300 s, then ±20% jitter.
    public static func backoff(attempt: Int, jitter: Double = Double.random(in: -0.2...0.2)) -> Double {
        let base = min(maximumBackoff, initialBackoff * pow(2, Double(max(0, attempt - 1))))
        return base * (1 + jitter)
    }

    private func flush(_ relay: Relay, over connection: WebSocketConnection) {
        let now = Date()
        for (id, since) in relay.pendingSince where now.timeIntervalSince(since) > Self.pendingSubscriptionTTL {
            relay.subscriptions[id] = nil
        }
        relay.pendingSince.removeAll()
        for request in relay.subscriptions.values { try? connection.send(.text(request)) }
        for text in relay.queue.drain() { try? connection.send(.text(text)) }
    }

    private func handle(_ message: WebSocketMessage, from relay: String) {
        guard case .text(let text) = message, let parsed = NostrRelayMessage(parsing: text, relay: relay) else { return }
        if case .dropped = messagesContinuation.yield(parsed) {
            droppedMessages += 1
            if droppedMessages == 1 || droppedMessages % 1000 == 0 {
                log?(AppLayerLogEvent(component: "nostr \(relay)",
                                      message: "\(droppedMessages) messages dropped: the reader is \(Self.maximumQueuedMessages) behind"))
            }
        }
    }
}

extension NostrRelayMessage {
    // The rule for this decoder, as for every decoder of network input in Postern: no byte from
    // the relay may trap, hang or grow memory without a stated cap. A message is at most the
    // WebSocket cap (512 KiB) when it gets here; JSONSerialization refuses deep nesting with an
    // error; every array index is behind a count check; numbers arrive as NSNumber, whose intValue
    // saturates rather than traps (a created_at of 1e300 just fails the id check).
    /// One relay → client message (NIP-01 EVENT, EOSE, OK, NOTICE, CLOSED); nil for anything else,
    /// including events that fail their id or signature check (a relay cannot forge). The
    /// relay's own texts (an OK's or CLOSED's message, a NOTICE) are for people and arrive with
    /// their control characters made visible (`PlainText.visible`), so a refusal printed as it is
    /// cannot steer a terminal; an event's content is the sender's and is kept exact. `package`
    /// access: the manager and the `NostrMessageFuzzer` target use it.
    package init?(parsing text: String, relay: String) {
        guard let array = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any],
              let type = array.first as? String else { return nil }
        switch type {
        case "EVENT" where array.count >= 3:
            guard let subscription = array[1] as? String, let event = try? NostrEvent(jsonObject: array[2]), event.isValid else { return nil }
            self = .event(subscription: subscription, event: event, relay: relay)
        case "EOSE" where array.count >= 2:
            guard let subscription = array[1] as? String else { return nil }
            self = .endOfStoredEvents(subscription: subscription, relay: relay)
        case "OK" where array.count >= 3:
            guard let id = array[1] as? String else { return nil }
            let accepted = (array[2] as? Bool) ?? ((array[2] as? NSNumber)?.boolValue ?? false)
            self = .ok(eventID: id, accepted: accepted, message: Self.relayText(array, 3), relay: relay)
        case "NOTICE" where array.count >= 2:
            self = .notice(Self.relayText(array, 1), relay: relay)
        case "CLOSED" where array.count >= 2:
            self = .closed(subscription: Self.relayText(array, 1), message: Self.relayText(array, 2), relay: relay)
        default:
            return nil
        }
    }

    /// The string at `index` of a relay's message, control characters made visible; "" when it is
    /// missing or not a string.
    private static func relayText(_ array: [Any], _ index: Int) -> String {
        index < array.count ? PlainText.visible(array[index] as? String ?? "") : ""
    }
}
