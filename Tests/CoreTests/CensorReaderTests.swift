import ConnectionAssist
import PosternLinkSpec
import Testing
import TransportBase

/// Every rule of CensorReader's table from synthetic flow reports (what the bed's censors produce:
/// docs/plans/CENSOR-AWARE-ASSIST.md's table of fet, freeze and burst), and the guards against
/// naming a cause the evidence does not carry.
@Suite struct CensorReaderTests {
    private static let start = ContinuousClock.now
    private let bridge = try! TransportEndpoint(parsing: "192.0.2.10:443")
    private let otherBridge = try! TransportEndpoint(parsing: "192.0.2.11:443")

    private func flow(_ peer: TransportEndpoint, connected: Bool = true, sent: Int = 0, received: Int = 0,
                      firstWrite: Duration? = nil, lastWrite: Duration? = nil, lastRead: Duration? = nil, age: Duration,
                      error: TransportError.Code? = nil, open: Bool = false, endedByPeer: Bool = false,
                      startedAfter: Duration = .zero) -> FlowReport {
        let counts = FlowCounts(started: Self.start + startedAfter, bytesSent: sent, bytesReceived: received,
                                connectedAfter: connected ? .milliseconds(20) : nil, firstWriteAfter: firstWrite,
                                lastWriteAfter: lastWrite ?? firstWrite, lastReadAfter: lastRead, age: age)
        return FlowReport(peer: peer, origin: .transport, throughProxy: false, counts: counts,
                          error: error.map { TransportError(code: $0, kind: .network, message: "test") }, isOpen: open, endedByPeer: endedByPeer)
    }

    /// fet: our obfs4 packet, a reset 31 ms later with nothing back.
    private func fetReset(_ peer: TransportEndpoint) -> FlowReport {
        flow(peer, sent: 1200, firstWrite: .milliseconds(25), age: .milliseconds(56), error: .connectionReset)
    }

    @Test func aResetAfterTheFirstPacketThenSilenceIsAProtocolBlock() throws {
        let evidence = CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [fetReset(bridge)],
                                             confirmations: [bridge: .silent], otherRouteAnswered: true)
        let diagnosis = try #require(CensorReader.diagnose(evidence))
        #expect(diagnosis.technique == .protocolBlock)
        #expect(diagnosis.confidence == .likely)
        #expect(diagnosis.rulesOutRoute)
        #expect(diagnosis.observed == "reset 31 ms after our first packet, nothing came back, then the address went silent")
        #expect(diagnosis.passes.contains(.webtunnel) && diagnosis.passes.contains(.snowflake) && !diagnosis.passes.contains(.obfs4))
        #expect(!diagnosis.description.contains("192.0.2"))
        // Two addresses alike: seen.
        let both = CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [fetReset(bridge), fetReset(otherBridge)],
                                         confirmations: [bridge: .silent, otherBridge: .silent], otherRouteAnswered: true)
        #expect(CensorReader.diagnose(both)?.confidence == .seen)
    }

    /// The confirm connect went out before the censor's drop of the address took hold (it
    /// answered), and tor's redial a second later got no SYN-ACK: the address went silent after
    /// all. A silent connect from before the reset says nothing of the kind.
    @Test func aLaterSilentConnectConfirmsTheBlockEvenAfterAnAnsweredConfirm() throws {
        let redial = flow(bridge, connected: false, age: .seconds(10), error: .timedOut, startedAfter: .seconds(1))
        let evidence = CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [fetReset(bridge), redial],
                                             confirmations: [bridge: .answered], otherRouteAnswered: true)
        let diagnosis = try #require(CensorReader.diagnose(evidence))
        #expect(diagnosis.technique == .protocolBlock)
        #expect(diagnosis.observed.hasSuffix("then the address went silent"))
        let before = flow(bridge, connected: false, age: .seconds(10), error: .timedOut)
        let earlier = CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false,
                                            flows: [before, flow(bridge, sent: 1200, firstWrite: .milliseconds(25), age: .milliseconds(56),
                                                                 error: .connectionReset, startedAfter: .seconds(1))],
                                            confirmations: [bridge: .answered], otherRouteAnswered: true)
        #expect(CensorReader.diagnose(earlier)?.technique == .inconclusive)
        // Another address's silence is not this one's.
        let elsewhere = CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false,
                                              flows: [fetReset(bridge), flow(otherBridge, connected: false, age: .seconds(10), error: .timedOut, startedAfter: .seconds(1))],
                                              confirmations: [bridge: .answered], otherRouteAnswered: true)
        #expect(CensorReader.diagnose(elsewhere)?.technique == .inconclusive)
    }

    @Test func aResetWhoseAddressStillAnswersNamesNoCause() throws {
        let evidence = CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [fetReset(bridge)],
                                             confirmations: [bridge: .answered], otherRouteAnswered: true)
        let diagnosis = try #require(CensorReader.diagnose(evidence))
        #expect(diagnosis.technique == .inconclusive)
        #expect(!diagnosis.rulesOutRoute)
        #expect(diagnosis.meaning.isEmpty)
    }

    @Test func oneResetWithoutItsConfirmationNamesNothingYet() {
        let unconfirmed = CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [fetReset(bridge)], otherRouteAnswered: true)
        #expect(CensorReader.diagnose(unconfirmed) == nil)
        // Silent afterwards, but nothing else answered either: the network may be down.
        let offline = CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [fetReset(bridge)],
                                            confirmations: [bridge: .silent], otherRouteAnswered: false)
        #expect(CensorReader.diagnose(offline) == nil)
    }

    @Test func silenceAfterAClientHelloWhileOtherTLSPassesIsAFingerprintBlock() throws {
        let silent = flow(bridge, sent: 1800, firstWrite: .milliseconds(25), age: .seconds(5), error: .connectionClosed)
        let diagnosis = try #require(CensorReader.diagnose(CensorReader.Evidence(
            transport: .webtunnel, firstPacketIsTLS: true, flows: [silent], otherRouteAnswered: true, otherTLSPassed: true)))
        #expect(diagnosis.technique == .fingerprintBlock)
        #expect(diagnosis.observed.hasPrefix("no reply to our first packet within 4 s"))
        #expect(diagnosis.rulesOutRoute)
        // Without another TLS handshake that passed, nothing is claimed.
        #expect(CensorReader.diagnose(CensorReader.Evidence(transport: .webtunnel, firstPacketIsTLS: true, flows: [silent],
                                                            otherRouteAnswered: true)) == nil)
    }

    @Test func dataThatStopsOnAnOpenConnectionIsAFreeze() throws {
        // freeze: ~14.5 KB came, then nothing for 20 s while tor kept writing.
        let frozen = flow(bridge, sent: 3000, received: 14_480, firstWrite: .milliseconds(30), lastWrite: .seconds(15),
                          lastRead: .milliseconds(400), age: .seconds(20), open: true)
        let one = try #require(CensorReader.diagnose(CensorReader.Evidence(transport: .vanilla, firstPacketIsTLS: true, flows: [frozen],
                                                                            otherRouteAnswered: true)))
        #expect(one.technique == .freeze && one.confidence == .likely && one.rulesOutRoute)
        #expect(one.observed == "data stopped after ~14 KB; the connection stayed open")
        #expect(one.passes == [.snowflake, .webtunnel])
        let again = flow(otherBridge, sent: 2000, received: 15_100, firstWrite: .milliseconds(30), lastWrite: .seconds(12),
                         lastRead: .milliseconds(500), age: .seconds(19), open: true)
        #expect(CensorReader.diagnose(CensorReader.Evidence(transport: .vanilla, firstPacketIsTLS: true, flows: [frozen, again],
                                                            otherRouteAnswered: true))?.confidence == .seen)
        // A peer that closed after its answer is not a freeze, nor one we stopped writing to.
        let closedByPeer = flow(bridge, sent: 3000, received: 14_480, firstWrite: .milliseconds(30), lastWrite: .seconds(15),
                                lastRead: .milliseconds(400), age: .seconds(20), endedByPeer: true)
        let idle = flow(bridge, sent: 3000, received: 14_480, firstWrite: .milliseconds(30), lastWrite: .milliseconds(300),
                        lastRead: .milliseconds(400), age: .seconds(20), open: true)
        #expect(CensorReader.diagnose(CensorReader.Evidence(transport: .vanilla, firstPacketIsTLS: true, flows: [closedByPeer],
                                                            otherRouteAnswered: true)) == nil)
        #expect(CensorReader.diagnose(CensorReader.Evidence(transport: .vanilla, firstPacketIsTLS: true, flows: [idle],
                                                            otherRouteAnswered: true)) == nil)
    }

    /// The freeze as the bed's censor made it during tor's bootstrap: the consensus stopped after
    /// ~12 KB and tor had nothing more to write (its next write came 11 to 30 s later). Tor's own
    /// connection counts as waited on once the bootstrap has stood still for the stall time too; a
    /// probe's connection never does, nor tor's before the bootstrap has waited that long.
    @Test func dataThatStopsWhileTorWaitsIsAFreezeWithoutAnotherWrite() throws {
        let frozen = flow(bridge, sent: 9000, received: 12_300, firstWrite: .milliseconds(30), lastWrite: .milliseconds(1400),
                          lastRead: .milliseconds(1480), age: .seconds(8), open: true)
        func evidence(_ flows: [FlowReport], waited: Duration?) -> CensorReader.Evidence {
            CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: flows, otherRouteAnswered: true,
                                  torWithoutProgress: waited)
        }
        #expect(CensorReader.diagnose(evidence([frozen], waited: nil)) == nil, "no write after the stop, tor's wait unknown")
        #expect(CensorReader.diagnose(evidence([frozen], waited: .seconds(5))) == nil, "tor has not waited the stall time yet")
        let diagnosis = try #require(CensorReader.diagnose(evidence([frozen], waited: .seconds(7))))
        #expect(diagnosis.technique == .freeze && diagnosis.confidence == .likely && diagnosis.rulesOutRoute)
        #expect(diagnosis.observed == "data stopped after ~12 KB; the connection stayed open")
        // The bytes themselves must have stopped for the stall time, however long tor waited.
        let recent = flow(bridge, sent: 9000, received: 12_300, firstWrite: .milliseconds(30), lastWrite: .milliseconds(1400),
                          lastRead: .seconds(4), age: .seconds(8), open: true)
        #expect(CensorReader.diagnose(evidence([recent], waited: .seconds(30))) == nil)
        // A probe's connection is nobody's wait.
        let counts = frozen.counts
        let probe = FlowReport(peer: bridge, origin: .probe, throughProxy: false, counts: counts, error: nil, isOpen: true, endedByPeer: false)
        #expect(CensorReader.diagnose(evidence([probe], waited: .seconds(30))) == nil)
        // A tagged tor dial is tor's too.
        let tagged = FlowReport(peer: bridge, origin: .transport(.obfs4), throughProxy: false, counts: counts, error: nil, isOpen: true,
                                endedByPeer: false)
        #expect(CensorReader.diagnose(evidence([tagged], waited: .seconds(7)))?.technique == .freeze)
    }

    @Test func refusedEverywhereIsWordedAsObservedNeverAsDead() throws {
        let refused = flow(bridge, connected: false, age: .milliseconds(2), error: .connectionRefused)
        let diagnosis = try #require(CensorReader.diagnose(CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [refused],
                                                                                  otherRouteAnswered: true)))
        #expect(diagnosis.technique == .refusedEverywhere)
        #expect(diagnosis.observed == "refused on its address (closed ports, or a censor refusing for them)")
        #expect(!diagnosis.description.contains("dead") && !diagnosis.description.contains("nothing listens"))
    }

    @Test func silenceAtConnectIsAnAddressBlockOnlyWhileOthersAnswer() throws {
        let silent = [flow(bridge, connected: false, age: .seconds(3), error: .timedOut),
                      flow(otherBridge, connected: false, age: .seconds(3), error: .timedOut)]
        let blocked = try #require(CensorReader.diagnose(CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: silent,
                                                                                otherRouteAnswered: true)))
        #expect(blocked.technique == .addressBlock && blocked.rulesOutRoute)
        #expect(blocked.observed == "no answer from any of its 2 addresses while others answer")
        let everything = try #require(CensorReader.diagnose(CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: silent,
                                                                                   otherRouteAnswered: false)))
        #expect(everything.technique == .nothingAnswers && !everything.rulesOutRoute)
    }

    @Test func anUntrustedCertificateIsInterceptionAtOnce() throws {
        let error = TransportError(code: TransportError.Code(rawValue: "webtunnel-tls-failed"), kind: .protocolViolation,
                                   message: "TLS failed: certificate verify failed: unable to get local issuer certificate")
        let diagnosis = try #require(CensorReader.diagnose(CensorReader.Evidence(transport: .webtunnel, firstPacketIsTLS: true, flows: [],
                                                                                  dialErrors: [error], otherRouteAnswered: true)))
        #expect(diagnosis.technique == .interception && diagnosis.rulesOutRoute)
        #expect(diagnosis.passes == [.obfs4, .snowflake])
    }

    @Test func slowDataIsAThrottleThatKeepsTheRoute() throws {
        let slow = flow(bridge, sent: 50_000, received: 400_000, firstWrite: .milliseconds(30), lastWrite: .seconds(19),
                        lastRead: .seconds(20), age: .seconds(20), open: true)
        let diagnosis = try #require(CensorReader.diagnose(CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [slow],
                                                                                  otherRouteAnswered: true)))
        #expect(diagnosis.technique == .throttle && !diagnosis.rulesOutRoute)
        #expect(diagnosis.observed == "works, slowly: data came at ~160 kbit/s")
    }

    @Test func aHealthyConnectionNamesNothing() {
        let fine = flow(bridge, sent: 40_000, received: 2_000_000, firstWrite: .milliseconds(30), lastWrite: .seconds(2),
                        lastRead: .seconds(2), age: .seconds(2), open: true)
        #expect(CensorReader.diagnose(CensorReader.Evidence(transport: .obfs4, firstPacketIsTLS: false, flows: [fine], otherRouteAnswered: true)) == nil)
    }
}
