/// The send queue of one relay while Tor is wanted and not ready (or the relay is reconnecting):
/// at most 200 entries, the oldest dropped first; the first drop and every 10th after it are
/// reported (drops 1, 11, 21, ...) so a flood cannot flood the log too.
public struct FailClosedQueue<Element: Sendable>: Sendable {
    /// The capacity when none is given: 200 entries.
    public static var defaultCapacity: Int { 200 }

    /// The most entries kept; older ones are dropped.
    public let capacity: Int
    /// The entries waiting, oldest first.
    public private(set) var elements: [Element] = []
    /// Entries dropped so far because the queue was full.
    public private(set) var droppedCount = 0

    /// An empty queue holding at most `capacity` entries.
    public init(capacity: Int = FailClosedQueue.defaultCapacity) {
        self.capacity = capacity
    }

    /// Appends; returns a log line when this append dropped an entry that must be reported.
    @discardableResult
    public mutating func enqueue(_ element: Element) -> String? {
        elements.append(element)
        guard elements.count > capacity else { return nil }
        elements.removeFirst(elements.count - capacity)
        droppedCount += 1
        guard (droppedCount - 1) % 10 == 0 else { return nil }
        return "send queue full (\(capacity)): dropped the oldest message (\(droppedCount) dropped so far)"
    }

    /// Takes every entry, oldest first, leaving the queue empty.
    public mutating func drain() -> [Element] {
        defer { elements.removeAll() }
        return elements
    }

    /// The entries waiting.
    public var count: Int { elements.count }
    /// True when nothing waits.
    public var isEmpty: Bool { elements.isEmpty }
}
