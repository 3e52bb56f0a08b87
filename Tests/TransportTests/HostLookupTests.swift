import Testing
@testable import TransportBase

/// The system host lookup, with names that never leave this machine (/etc/hosts's localhost).
@Suite struct HostLookupTests {
    @Test func localhostResolvesFromTheHostsFile() async throws {
        let addresses = try await HostLookup.addresses(of: "localhost", port: 853, timeout: .seconds(10), label: "the test host")
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { $0.isLoopback && $0.port == 853 })
        #expect(addresses.contains { $0.description == "127.0.0.1:853" })
    }

    /// A lookup in a cancelled task ends at once with a typed error naming the label, not the host.
    @Test func aCancelledLookupEndsWithATypedError() async throws {
        let lookup = Task { () async throws(TransportError) -> [TransportEndpoint] in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await HostLookup.addresses(of: "localhost", port: 1, timeout: .seconds(30), label: "the test host")
        }
        guard case .failure(let failure) = await lookup.result, let error = failure as? TransportError else {
            Issue.record("a cancelled lookup returned addresses or an untyped error")
            return
        }
        #expect(error.code == .hostLookupFailed)
        #expect(error.kind == .cancelled)
        #expect(error.message.contains("the test host"))
        #expect(!error.message.contains("localhost"))
    }
}
