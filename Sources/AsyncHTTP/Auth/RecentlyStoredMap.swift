/// A dictionary that holds at most ``limit`` entries: storing a new key when it is full evicts the entry
/// stored least recently (storing an existing key again counts as recent). Reads do not count, so reading
/// needs no mutation.
///
/// Eviction is amortised O(1): the order of stores is a queue of (key, stamp) with stale stamps skipped
/// lazily, compacted when it holds twice the entries.
struct RecentlyStoredMap<Key: Hashable, Value> {
    let limit: Int
    private var entries: [Key: (value: Value, stamp: UInt64)] = [:]
    private var order: [(key: Key, stamp: UInt64)] = []
    private var orderStart = 0
    private var nextStamp: UInt64 = 0

    init(limit: Int) {
        precondition(limit > 0, "a bounded map needs room for one entry")
        self.limit = limit
    }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    subscript(key: Key) -> Value? {
        get { entries[key]?.value }
        set {
            guard let newValue else {
                entries[key] = nil
                return
            }
            let stamp = nextStamp
            nextStamp &+= 1
            entries[key] = (newValue, stamp)
            order.append((key, stamp))
            while entries.count > limit { evictOldest() }
            if order.count - orderStart > 2 * max(entries.count, 16) { compact() }
        }
    }

    mutating func removeAll() {
        entries.removeAll()
        order.removeAll()
        orderStart = 0
    }

    mutating func removeAll(where shouldRemove: (Key) -> Bool) {
        entries = entries.filter { !shouldRemove($0.key) }
        compact()
    }

    private mutating func evictOldest() {
        while orderStart < order.count {
            let (key, stamp) = order[orderStart]
            orderStart += 1
            if entries[key]?.stamp == stamp {
                entries[key] = nil
                return
            }
        }
    }

    private mutating func compact() {
        order = order[orderStart...].filter { entries[$0.key]?.stamp == $0.stamp }
        orderStart = 0
    }
}
