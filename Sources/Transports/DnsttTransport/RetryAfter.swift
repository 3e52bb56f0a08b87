import Foundation

/// How long a DoH link stops sending after a non-200 answer (docs/plans/DNSTT.md §2, as the
/// reference client: any other status is taken as rate limiting). `Retry-After` (RFC 9110 section
/// 10.2.3) is either delay-seconds or an HTTP-date; absent or unreadable means 10 s; whatever it
/// says is capped at 120 s, so a resolver cannot silence the link for longer (the session's own
/// silence limit decides when a resolver is gone). A date in the past means at once.
package enum RetryAfter {
    package static let defaultDelay: Duration = .seconds(10)
    package static let maximumDelay: Duration = .seconds(120)

    /// The pause `value` asks for, read against `now`.
    package static func delay(_ value: [UInt8]?, now: Date) -> Duration {
        guard let value, !value.isEmpty, value.count <= 64 else { return defaultDelay }
        let maximum = Int(maximumDelay.components.seconds)
        if value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // More digits than the cap has cannot be under it; no overflow either way.
            guard value.count <= 6 else { return maximumDelay }
            let seconds = value.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            return .seconds(min(seconds, maximum))
        }
        guard let date = httpDate(value) else { return defaultDelay }
        let seconds = date - Int64(now.timeIntervalSince1970.rounded(.down))
        return .seconds(Int(max(0, min(seconds, Int64(maximum)))))
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970 of an HTTP-date in any of RFC 9110 section 5.6.7's three forms, which a
    /// recipient must all accept: IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete
    /// RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT` and asctime `Sun Nov  6 08:49:37 1994`. The weekday
    /// is not checked (nothing depends on it). Nil for anything else.
    package static func httpDate(_ value: [UInt8]) -> Int64? {
        var tokens: [[UInt8]] = []
        var current: [UInt8] = []
        for byte in value {
            if byte == 0x20 || byte == 0x2C || byte == 0x2D || byte == 0x3A {
                if !current.isEmpty { tokens.append(current); current = [] }
            } else {
                current.append(byte)
            }
        }
        if !current.isEmpty { tokens.append(current) }
        let day, month, year, hour, minute, second: Int?
        if tokens.count == 8, String(decoding: tokens[7], as: UTF8.self) == "GMT" {
            day = number(tokens[1], digits: 1...2)
            month = monthIndex(tokens[2])
            if let four = number(tokens[3], digits: 4...4) {
                year = four
            } else if let two = number(tokens[3], digits: 2...2) {
                // RFC 850's two-digit year: RFC 9110 says a date more than 50 years ahead is in the
                // past century; with no server sending these any more, 19xx above 69 is enough.
                year = two < 70 ? 2000 + two : 1900 + two
            } else {
                year = nil
            }
            hour = number(tokens[4], digits: 2...2)
            minute = number(tokens[5], digits: 2...2)
            second = number(tokens[6], digits: 2...2)
        } else if tokens.count == 7 {
            month = monthIndex(tokens[1])
            day = number(tokens[2], digits: 1...2)
            hour = number(tokens[3], digits: 2...2)
            minute = number(tokens[4], digits: 2...2)
            second = number(tokens[5], digits: 2...2)
            year = number(tokens[6], digits: 4...4)
        } else {
            return nil
        }
        guard let day, let month, let year, let hour, let minute, let second,
              (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    private static func number(_ token: [UInt8], digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(token.count), token.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return token.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    private static func monthIndex(_ token: [UInt8]) -> Int? {
        guard token.count == 3 else { return nil }
        return months.firstIndex(of: String(decoding: token, as: UTF8.self).lowercased()).map { $0 + 1 }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (the standard era-based civil-calendar conversion, 400-year eras of 146097 days).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
