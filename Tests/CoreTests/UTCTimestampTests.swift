import Foundation
import PosternSystem
import Testing

/// UTCTimestamp against Foundation's own `.iso8601` JSON strategy (the peer whose text it keeps):
/// the same text for the same date, each side reading the other's, and nothing malformed read.
@Suite struct UTCTimestampTests {
    struct Stamp: Codable, Equatable { var at: Date }

    static let dates: [Date] = [
        Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_796_461_800.75), Date(timeIntervalSince1970: 951_782_400),
        Date(timeIntervalSince1970: -86_401), Date(timeIntervalSince1970: 4_102_444_799), Date(timeIntervalSince1970: 1_000_000_000.999),
    ]

    @Test(arguments: dates) func writesWhatFoundationsISO8601Writes(date: Date) throws {
        let foundation = JSONEncoder()
        foundation.dateEncodingStrategy = .iso8601
        let ours = JSONEncoder()
        ours.dateEncodingStrategy = UTCTimestamp.encoding
        let theirs = String(decoding: try foundation.encode(Stamp(at: date)), as: UTF8.self)
        #expect(String(decoding: try ours.encode(Stamp(at: date)), as: UTF8.self) == theirs)
    }

    @Test(arguments: dates) func eachReadsTheOthersText(date: Date) throws {
        let whole = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        let foundationEncoder = JSONEncoder()
        foundationEncoder.dateEncodingStrategy = .iso8601
        let foundationDecoder = JSONDecoder()
        foundationDecoder.dateDecodingStrategy = .iso8601
        let ourEncoder = JSONEncoder()
        ourEncoder.dateEncodingStrategy = UTCTimestamp.encoding
        let ourDecoder = JSONDecoder()
        ourDecoder.dateDecodingStrategy = UTCTimestamp.decoding
        #expect(try ourDecoder.decode(Stamp.self, from: foundationEncoder.encode(Stamp(at: date))) == Stamp(at: whole))
        #expect(try foundationDecoder.decode(Stamp.self, from: ourEncoder.encode(Stamp(at: date))) == Stamp(at: whole))
    }

    @Test func readsOffsetsAndFractions() {
        #expect(UTCTimestamp.date("2026-12-05T09:10:00Z") == Date(timeIntervalSince1970: 1_796_461_800))
        #expect(UTCTimestamp.date("2026-12-05T10:10:00+01:00") == Date(timeIntervalSince1970: 1_796_461_800))
        #expect(UTCTimestamp.date("2026-12-05T08:40:00-0030") == Date(timeIntervalSince1970: 1_796_461_800))
        #expect(UTCTimestamp.date("2026-12-05T09:10:00.5Z") == Date(timeIntervalSince1970: 1_796_461_800.5))
        #expect(UTCTimestamp.text(Date(timeIntervalSince1970: 1_796_461_800.9)) == "2026-12-05T09:10:00Z")
    }

    @Test(arguments: ["", "2026-12-05", "2026-12-05T09:10:00", "2026-12-05 09:10:00Z", "2026-13-05T09:10:00Z",
                      "2026-02-30T09:10:00Z", "2026-12-05T24:00:00Z", "2026-12-05T09:60:00Z", "2026-12-05T09:10:00.Z",
                      "2026-12-05T09:10:00+1", "2026-12-05T09:10:00+01:0", "2026-12-05T09:10:00ZZ", "+026-12-05T09:10:00Z",
                      "2026-12-05T09:10:00+25:00", "٢٠٢٦-12-05T09:10:00Z", String(repeating: "9", count: 100)])
    func refusesWhatIsNotOneOfItsForms(text: String) {
        #expect(UTCTimestamp.date(text) == nil)
    }
}
