import Testing
@testable import SnowflakeTransport
@testable import TurboTunnel

@Suite struct EncapsulationTests {
    let vectors = GoVectors.shared

    @Test func tokenMatchesUpstream() {
        #expect(hex(TurboTunnel.token) == vectors.turbotunnelTokenHex)
        let id = ClientID.random()
        #expect(id.carrierPreamble.count == 16)
        #expect(Array(id.carrierPreamble.prefix(8)) == TurboTunnel.token)
    }

    @Test func dataPrefixesMatchGoWriter() throws {
        let data = vectors.encapsulation.filter { $0.kind == "data" }
        #expect(data.count >= 10)
        for vector in data {
            #expect(hex(try Encapsulation.dataPrefix(length: vector.length)) == vector.prefixHex, "length \(vector.length)")
            if let encoded = vector.encodedHex {
                #expect(hex(try Encapsulation.encodeData(pattern(vector.length))) == encoded)
            }
        }
    }

    @Test func spotChecksFromTheSpec() throws {
        #expect(try Encapsulation.dataPrefix(length: 5) == [0x85])
        #expect(try Encapsulation.dataPrefix(length: 100) == [0xc0, 0x64])
        #expect(try Encapsulation.dataPrefix(length: 1400) == [0xca, 0x78])
        #expect(throws: SnowflakeError.self) { try Encapsulation.dataPrefix(length: Encapsulation.maxChunkLength + 1) }
    }

    @Test func paddingMatchesGoWriter() {
        let padding = vectors.encapsulation.filter { $0.kind == "padding" }
        #expect(padding.count >= 5)
        for vector in padding {
            let ours = Encapsulation.encodePadding(total: vector.length)
            #expect(ours.count == vector.length)
            #expect(hex(Array(ours.prefix(3))) == vector.prefixHex, "padding \(vector.length)")
            if let encoded = vector.encodedHex { #expect(hex(ours) == encoded, "padding \(vector.length)") }
        }
    }

    @Test func decoderReadsGoStreamInAnySplit() throws {
        let stream = bytes(hex: vectors.encapsulationStream.hex)
        let expected = vectors.encapsulationStream.packetsHex
        for pieceSize in [1, 2, 3, 7, 64, stream.count] {
            var decoder = Encapsulation.Decoder()
            var packets: [String] = []
            var offset = 0
            while offset < stream.count {
                decoder.append(stream[offset..<min(offset + pieceSize, stream.count)])
                offset += pieceSize
                while let packet = try decoder.nextPacket() { packets.append(hex(packet)) }
            }
            #expect(packets == expected, "pieces of \(pieceSize)")
        }
    }

    @Test func decoderAcceptsNonMinimalPrefixesAndTruncates() throws {
        var decoder = Encapsulation.Decoder(maxPacketSize: 4)
        // 4 as a two-byte prefix (valid, not minimal), padding with a 3-byte prefix, then 6 bytes of data.
        decoder.append([0xc0, 0x04, 1, 2, 3, 4, 0x40, 0x80, 0x01, 0xaa, 0x86, 1, 2, 3, 4, 5, 6])
        #expect(try decoder.nextPacket() == [1, 2, 3, 4])
        #expect(try decoder.nextPacket() == [1, 2, 3, 4])
        #expect(try decoder.nextPacket() == nil)
    }

    @Test func decoderRejectsFourBytePrefix() {
        var decoder = Encapsulation.Decoder()
        decoder.append([0xc0, 0x80, 0x80, 0x01])
        #expect(throws: SnowflakeError.self) { try decoder.nextPacket() }
    }
}

@Suite struct KCPSegmentTests {
    let vectors = GoVectors.shared

    @Test func everyCapturedPacketRoundTrips() throws {
        #expect(vectors.kcp.packets.count >= 5)
        for packet in vectors.kcp.packets {
            let raw = bytes(hex: packet.hex)
            #expect(raw.count <= KCPSegment.mtu)
            let segments = try KCPSegment.decodePacket(raw, conversation: vectors.kcp.conv)
            #expect(!segments.isEmpty)
            #expect(segments.flatMap(\.encoded) == raw)
            for segment in segments {
                #expect(segment.fragment == 0, "stream mode never fragments")
            }
        }
    }

    @Test func capturedConversationCarriesTheClientWrites() throws {
        let conv = vectors.kcp.conv
        var pushed: [UInt32: [UInt8]] = [:]
        var acked: Set<UInt32> = []
        var serverUna: UInt32 = 0
        for packet in vectors.kcp.packets {
            for segment in try KCPSegment.decodePacket(bytes(hex: packet.hex), conversation: conv) {
                switch (packet.direction, segment.command) {
                case ("c2s", .push): pushed[segment.sequenceNumber] = segment.payload
                case ("s2c", .ack): acked.insert(segment.sequenceNumber)
                default: break
                }
                if packet.direction == "s2c" { serverUna = max(serverUna, segment.unacknowledged) }
            }
        }
        // Stream mode: the client's writes arrive as consecutive sequence numbers, in order, with
        // payloads of at most MTU - header bytes.
        let stream = pushed.keys.sorted().flatMap { pushed[$0]! }
        #expect(stream == vectors.kcp.clientWritesHex.flatMap { bytes(hex: $0) })
        #expect(pushed.keys.sorted() == Array(0..<UInt32(pushed.count)))
        #expect(pushed.values.allSatisfy { $0.count <= KCPSegment.mtu - KCPSegment.headerSize })
        // The server confirms every segment, by an ACK or by its una moving past it.
        #expect(pushed.keys.allSatisfy { acked.contains($0) || $0 < serverUna })
        #expect(serverUna == UInt32(pushed.count))
        // The first packet is the PUSH of "hello", sn 0, una 0, full window (65535 minus nothing queued).
        let first = try KCPSegment.decodePacket(bytes(hex: vectors.kcp.packets[0].hex))
        #expect(first.count == 1)
        #expect(first[0].command == .push && first[0].sequenceNumber == 0 && first[0].unacknowledged == 0)
        #expect(first[0].payload == Array("hello".utf8))
        #expect(first[0].window == 65535)
    }

    @Test func rejectsForeignConversationAndUnknownCommand() {
        let segment = KCPSegment(conversation: 7, command: .ack, window: 1, timestamp: 2, sequenceNumber: 3, unacknowledged: 4)
        #expect(throws: TurboTunnelError.self) { try KCPSegment.decodePacket(segment.encoded, conversation: 8) }
        var bad = segment.encoded
        bad[4] = 85
        #expect(throws: TurboTunnelError.self) { try KCPSegment.decodePacket(bad) }
        var short = KCPSegment(conversation: 7, command: .push, window: 1, timestamp: 2, sequenceNumber: 3,
                               unacknowledged: 4, payload: [1, 2, 3]).encoded
        short.removeLast()
        #expect(throws: TurboTunnelError.self) { try KCPSegment.decodePacket(short) }
    }

    @Test func windowProbeAndTellEncode() throws {
        for command in [KCPSegment.Command.windowProbe, .windowTell] {
            let segment = KCPSegment(conversation: 0x01020304, command: command, window: 0x1234, timestamp: 5,
                                     sequenceNumber: 6, unacknowledged: 7)
            #expect(Array(segment.encoded.prefix(8)) == [0x04, 0x03, 0x02, 0x01, command.rawValue, 0, 0x34, 0x12])
            #expect(try KCPSegment.decodePacket(segment.encoded) == [segment])
        }
    }
}

@Suite struct SmuxFrameTests {
    let vectors = GoVectors.shared

    @Test func capturedFramesDecodeAndReencode() throws {
        var commands: [String] = []
        for write in vectors.smux.writes {
            var decoder = SmuxFrame.Decoder()
            let raw = bytes(hex: write.hex)
            decoder.append(raw)
            let frame = try #require(try decoder.nextFrame())
            #expect(try decoder.nextFrame() == nil)
            #expect(frame.encoded == raw)
            commands.append("\(write.direction) \(frame.command) \(frame.streamID)")
        }
        // SYN of stream 3, PSH, the server's UPD after its first read, the echo, the client's UPD,
        // both FINs, then a client keepalive NOP on stream 0.
        #expect(commands == ["c2s SYN 3", "c2s PSH 3", "s2c UPD 3", "s2c PSH 3", "c2s UPD 3", "s2c FIN 3",
                             "c2s FIN 3", "c2s NOP 0"])
    }

    @Test func updateCarriesConsumedAndWindow() throws {
        let upd = try #require(vectors.smux.writes.first { $0.direction == "s2c" && bytes(hex: $0.hex)[1] == 4 })
        var decoder = SmuxFrame.Decoder()
        decoder.append(bytes(hex: upd.hex))
        let frame = try #require(try decoder.nextFrame())
        let update = try #require(frame.windowUpdate)
        #expect(update.consumed == 5)
        #expect(update.window == 1_048_576)
        #expect(SmuxFrame.update(streamID: 3, consumed: 5, window: 1_048_576) == frame)
    }

    @Test func rejectsVersionOneAndUnknownCommand() {
        var decoder = SmuxFrame.Decoder()
        decoder.append([1, 0, 0, 0, 3, 0, 0, 0])
        #expect(throws: TurboTunnelError.self) { try decoder.nextFrame() }
        var decoder2 = SmuxFrame.Decoder()
        decoder2.append([2, 9, 0, 0, 3, 0, 0, 0])
        #expect(throws: TurboTunnelError.self) { try decoder2.nextFrame() }
    }

    @Test func decoderWaitsForWholeFrame() throws {
        let frame = SmuxFrame(command: .push, streamID: 3, payload: Array(repeating: 7, count: 300))
        var decoder = SmuxFrame.Decoder()
        let raw = frame.encoded
        decoder.append(raw.prefix(100))
        #expect(try decoder.nextFrame() == nil)
        decoder.append(raw.dropFirst(100))
        #expect(try decoder.nextFrame() == frame)
    }
}

@Suite struct BrokerMessageTests {
    let vectors = GoVectors.shared

    @Test func sessionDescriptionSerialisesLikeGo() throws {
        let d = vectors.sessionDescription
        #expect(SessionDescription(type: d.type, sdp: d.sdp).serialized == d.serialized)
        #expect(try SessionDescription(serialized: d.serialized) == SessionDescription(type: d.type, sdp: d.sdp))
    }

    @Test func pollRequestsEncodeByteForByte() {
        #expect(vectors.pollRequests.count == 3)
        for vector in vectors.pollRequests {
            let nat: NATType = switch vector.nat {
            case "restricted": .restricted
            case "unrestricted": .unrestricted
            default: .unknown
            }
            let ours = ClientPollRequest(serializedOffer: vector.offer, nat: nat, fingerprint: vector.fingerprint)
            #expect(String(decoding: ours.encoded, as: UTF8.self) == vector.encoded)
        }
    }

    @Test func pollResponsesDecode() throws {
        for vector in vectors.pollResponses {
            let response = try ClientPollResponse(decoding: Array(vector.encoded.utf8))
            if vector.error.isEmpty {
                #expect(response == .answer(try SessionDescription(serialized: vector.answer)))
            } else {
                #expect(response == .error(vector.error))
                #expect(throws: SnowflakeError.self) { try response.requireAnswer() }
            }
        }
        #expect(throws: SnowflakeError.self) { try ClientPollResponse(decoding: Array("{}".utf8)) }
        #expect(throws: SnowflakeError.self) { try ClientPollResponse(decoding: Array("{\"answer\":\"{\\\"type\\\":\\\"bogus\\\",\\\"sdp\\\":\\\"\\\"}\"}".utf8)) }
        #expect(throws: SnowflakeError.self) { try ClientPollResponse(decoding: Array("not json".utf8)) }
    }

    @Test func ampPathDecodesGoEncoding() throws {
        #expect(try AMPEncoding.decodePath(vectors.ampPath.path) == Array(vectors.ampPath.data.utf8))
        let ours = AMPEncoding.encodePath(Array(vectors.ampPath.data.utf8))
        #expect(ours.hasPrefix("0") && ours.split(separator: "/").count == 2)
        #expect(try AMPEncoding.decodePath(ours) == Array(vectors.ampPath.data.utf8))
        #expect(AMPEncoding.encodePath([0xfb, 0xff], cacheBreaker: [0xff, 0xfe]) == "0__4/-_8")
    }

    @Test func ampArmorDecodesGoEncoder() throws {
        let decoded = try AMPEncoding.decodeArmor(Array(vectors.ampArmor.encoded.utf8))
        #expect(decoded == Array(vectors.ampArmor.body.utf8))
        #expect(throws: SnowflakeError.self) { try AMPEncoding.decodeArmor(Array("<pre>0AAAA<pre></pre></pre>".utf8)) }
        #expect(throws: SnowflakeError.self) { try AMPEncoding.decodeArmor(Array("</pre>".utf8)) }
        #expect(throws: SnowflakeError.self) { try AMPEncoding.decodeArmor(Array("<pre>1AAAA</pre>".utf8)) }
        #expect(throws: SnowflakeError.self) { try AMPEncoding.decodeArmor(Array("<pre>0AAAA".utf8)) }
        #expect(try AMPEncoding.decodeArmor(Array("<!-- <pre> --><PRE class=x>0YW\n Jj\n</pre>".utf8)) == Array("abc".utf8))
    }
}
