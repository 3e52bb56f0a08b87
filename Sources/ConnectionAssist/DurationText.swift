import Foundation
import PosternSystem

extension Duration {
    /// Seconds as "45" or "2.5", for messages and settings.
    var wholeOrFractionalSeconds: String {
        let seconds = self.seconds
        if seconds == seconds.rounded() { return String(Int64(seconds)) }
        return String(format: "%.1f", seconds)
    }

    var secondsValue: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
