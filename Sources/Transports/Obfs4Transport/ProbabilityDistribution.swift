import PosternCrypto
/// A weighted distribution over an integer range, shaped like lyrebird's `probdist.WeightedDist`:
/// a seed picks 1–100 distinct values with random weights; samples use the system CSPRNG.
///
/// The value set is derived with our own use of the seeded SipHash DRBG, not Go's `math/rand`, so
/// it is not bit-identical to lyrebird (the peer never checks it; spec §9).
struct WeightedDistribution: Sendable {
    /// The values a sample can take: 1–100 of them, chosen by the seed.
    let values: [Int]
    private let cumulativeWeights: [Double]

    init(seed: some Collection<UInt8>, minimum: Int, maximum: Int) {
        precondition(seed.count == 24 && maximum >= minimum)
        var drbg = SipHashDRBG(seed: seed)
        let range = maximum - minimum + 1
        let count = min(range, 1 + Int(drbg.nextInt63() % 100))
        var chosen = Set<Int>()
        var values: [Int] = []
        while values.count < count {
            let candidate = minimum + Int(drbg.nextInt63() % Int64(range))
            if chosen.insert(candidate).inserted { values.append(candidate) }
        }
        var total = 0.0
        var cumulative: [Double] = []
        for _ in values {
            total += Double(drbg.nextInt63() >> 10) / Double(1 << 53) + 1e-9
            cumulative.append(total)
        }
        self.values = values
        self.cumulativeWeights = cumulative.map { $0 / total }
    }

    func sample() -> Int {
        let draw = Double(SecureRandom.uniform(UInt32.max)) / Double(UInt32.max)
        var low = 0, high = cumulativeWeights.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulativeWeights[middle] < draw { low = middle + 1 } else { high = middle }
        }
        return values[low]
    }
}
