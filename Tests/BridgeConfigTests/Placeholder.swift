import Testing

@Test func placeholderBridgeConfigTests() { #expect(Bool(true)) }
