import Foundation
import Testing
import PosternRuntime

/// Routes are typed in the API and stay bare strings on the wire: status files and `--json`
/// lines read as before, and files written before the type existed still decode.
@Suite struct RouteNameTests {
    @Test func encodesAsItsStringAndDecodesBack() throws {
        let names: [RouteName] = [.direct, .connectionAssist, RouteName("bridges (obfs4, built-in)")]
        let data = try JSONEncoder().encode(names)
        #expect(String(decoding: data, as: UTF8.self) == #"["direct","connection assist","bridges (obfs4, built-in)"]"#)
        #expect(try JSONDecoder().decode([RouteName].self, from: data) == names)
        #expect(RouteName(rawValue: "direct") == "direct")
        #expect("\(RouteName("bridges (snowflake)"))" == "bridges (snowflake)")
    }

    @Test func statusRecordKeepsTheRouteAsAString() throws {
        let record = RunStatusRecord(pid: 7, status: TorStatus(), socks: .default, route: "bridges (obfs4)", phases: [])
        let object = try #require(JSONSerialization.jsonObject(with: RunStatusRecord.encoder().encode(record)) as? [String: Any])
        #expect(object["route"] as? String == "bridges (obfs4)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("postern-route-name-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("run-status.json")
        try record.write(to: file)
        #expect(try RunStatusRecord.read(from: file).route == "bridges (obfs4)")
    }
}
