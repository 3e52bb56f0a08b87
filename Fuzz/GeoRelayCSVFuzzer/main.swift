// The geo relay directory's CSV (GeoRelayCSV.parse): header, exactly 3 fields a row, host rules,
// coordinates in range; one bad row rejects the whole file.
//
// Invariants, trapping when broken:
//   - an accepted file has 1...5,000 relays, every host ASCII, lower-case and not a local name,
//     every coordinate finite and in range;
//   - the accepted relays, written back as a CSV, parse to the same relays;
//   - appending one bad row to an accepted file makes the whole file rejected.
import Foundation
import FuzzSupport
import PosternAppLayer

func csv(_ relays: [GeoRelay]) -> Data {
    Data(("Relay URL,Latitude,Longitude\n" + relays.map { "\($0.host),\($0.latitude),\($0.longitude)\n" }.joined()).utf8)
}

func checkGeoCSV(_ input: UnsafeRawBufferPointer) {
    let data = Data(input)
    guard let relays = try? GeoRelayCSV.parse(data) else { return }
    fuzzCheck(!relays.isEmpty && relays.count <= GeoRelayCSV.maximumRows, "relay count \(relays.count)")
    for relay in relays {
        let hostName = relay.host.split(separator: ":").first.map(String.init) ?? ""
        fuzzCheck(relay.host.allSatisfy(\.isASCII) && relay.host == relay.host.lowercased(), "host not ASCII lower-case")
        fuzzCheck(hostName != "localhost" && !hostName.hasSuffix(".local") && !hostName.hasSuffix(".internal")
                  && !hostName.hasSuffix(".localhost"), "a local host name was accepted")
        fuzzCheck((-90...90).contains(relay.latitude) && (-180...180).contains(relay.longitude), "coordinate out of range")
    }
    fuzzCheck((try? GeoRelayCSV.parse(csv(relays))) == relays, "accepted relays do not round-trip through CSV")
    var spoiled = csv(relays)
    spoiled.append(contentsOf: Array("wss://localhost,0,0\n".utf8))
    fuzzCheck((try? GeoRelayCSV.parse(spoiled)) == nil, "one bad row did not reject the file")
}

runFuzzer(checkGeoCSV)
