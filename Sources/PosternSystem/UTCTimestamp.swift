import FoundationEssentials
import Glibc

/// Dates in our JSON files (the run status, connection assist's memory and last route) as ISO 8601
/// in UTC, "2026-12-05T09:10:00Z": the text JSONEncoder's `.iso8601` strategy writes, made and read
/// with the C library's gmtime_r/timegm instead. Foundation's `.iso8601` formats through a
/// Gregorian `Calendar`, which looks up the current time zone and locale through ICU; in `postern
/// run` writing the status file that way brought ICU's time-zone, locale and calendar code and
/// data into memory (docs/PERFORMANCE.md, Memory). Same text both ways, so files written before
/// read the same, and readers using `.iso8601` read ours.
public enum UTCTimestamp {
    /// Whole seconds (the fraction is dropped, as `.iso8601` does).
    public static func text(_ date: Date) -> String {
        // Years 1...9999: what the four-digit form can hold.
        let seconds = min(max(date.timeIntervalSince1970.rounded(.down), -62_135_596_800), 253_402_300_799)
        var time = time_t(seconds.isFinite ? seconds : 0)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = String(parts.tm_year + 1900)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
            + "T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// The date of "YYYY-MM-DDTHH:MM:SS" with an optional fraction of a second and "Z", "+HH:MM",
    /// "-HH:MM", "+HHMM" or "-HHMM"; nil for anything else, or a day that does not exist.
    public static func date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 64 else { return nil }
        func digits(_ start: Int, _ count: Int) -> Int32? {
            guard start + count <= bytes.count else { return nil }
            var value: Int32 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            return value
        }
        guard let year = digits(0, 4), bytes[4] == 0x2D, let month = digits(5, 2), bytes[7] == 0x2D,
              let day = digits(8, 2), bytes[10] == 0x54 || bytes[10] == 0x74,
              let hour = digits(11, 2), bytes[13] == 0x3A, let minute = digits(14, 2), bytes[16] == 0x3A,
              let second = digits(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == 0x2E {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offset: Int32 = 0
        switch bytes[index] {
        case 0x5A, 0x7A:  // Z
            guard index + 1 == bytes.count else { return nil }
        case 0x2B, 0x2D:  // + or -
            let sign: Int32 = bytes[index] == 0x2B ? 1 : -1
            let rest = bytes.count - index - 1
            guard let offsetHours = digits(index + 1, 2), offsetHours < 24 else { return nil }
            let offsetMinutes: Int32?
            if rest == 5, bytes[index + 3] == 0x3A { offsetMinutes = digits(index + 4, 2) } else if rest == 4 { offsetMinutes = digits(index + 3, 2) } else { offsetMinutes = nil }
            guard let offsetMinutes, offsetMinutes < 60 else { return nil }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        default:
            return nil
        }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = min(second, 59)
        let time = timegm(&parts)
        // timegm moves 31 February to March: a day that does not exist is refused instead.
        guard parts.tm_mday == day, parts.tm_mon == month - 1 else { return nil }
        return Date(timeIntervalSince1970: Double(time) + Double(second - min(second, 59)) + fraction - Double(offset))
    }

    /// JSONEncoder's strategy for these dates.
    public static var encoding: JSONEncoder.DateEncodingStrategy {
        .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(text(date))
        }
    }

    /// JSONDecoder's strategy for these dates.
    public static var decoding: JSONDecoder.DateDecodingStrategy {
        .custom { decoder in
            let container = try decoder.singleValueContainer()
            let string = try container.decode(String.self)
            guard let date = UTCTimestamp.date(string) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date: \(PlainText.visible(String(string.prefix(64))))")
            }
            return date
        }
    }
}
