import Foundation
import TransportBase
import TransportWire

/// Runs `process`, which must dial `listener`, and returns what its first connection sent up to
/// the end of its first TLS record: a client's first flight, its ClientHello. The waits are
/// bounded (`acceptWithin` for the connection, `readWithin` for each read); the process is killed
/// once the record is in or a wait ran out.
func firstRecord(sentBy process: Process, to listener: LoopbackListener, acceptWithin: Duration,
                 readWithin: Duration) async throws -> [UInt8] {
    try process.run()
    defer {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
    let connection = try await withDeadline(acceptWithin, expired: { listener.close() }) { try await listener.accept() }
    defer { connection.close() }
    var flight: [UInt8] = []
    while flight.count < 5 || flight.count < 5 + (Int(flight[3]) << 8 | Int(flight[4])) {
        let bytes = try await withDeadline(readWithin, expired: { connection.close() }) { try await connection.read(maximumCount: 65536) }
        guard !bytes.isEmpty else { break }
        flight += bytes
    }
    return flight
}
