import Testing

@Test func placeholderTransportTests() { #expect(Bool(true)) }
