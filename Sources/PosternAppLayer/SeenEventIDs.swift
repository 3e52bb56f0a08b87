/// The ids of the events an inbox has already handled, so a gift wrap that relays send again (or
/// that several relays send) is yielded once; at most `capacity` ids, so an inbox that listens for
/// months does not grow without end.
///
/// Two generations of `capacity / 2` ids: an id seen again moves into the current one, and when the
/// current one is full the previous one is forgotten. What is forgotten is thus the ids not seen
/// for longest; one of them arriving again is taken as new.
struct SeenEventIDs: Sendable {
    let capacity: Int
    private var current: Set<String> = []
    private var previous: Set<String> = []

    init(capacity: Int) {
        precondition(capacity >= 2, "two generations of at least one id each")
        self.capacity = capacity
    }

    var count: Int { current.count + previous.count }

    func contains(_ id: String) -> Bool { current.contains(id) || previous.contains(id) }

    /// Whether `id` is new; either way it is now among the most recently seen.
    mutating func insert(_ id: String) -> Bool {
        if current.contains(id) { return false }
        let wasKnown = previous.remove(id) != nil
        if current.count >= capacity / 2 {
            previous = current
            current = []
        }
        current.insert(id)
        return !wasKnown
    }
}
