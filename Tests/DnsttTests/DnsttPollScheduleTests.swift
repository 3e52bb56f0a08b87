import Testing
@testable import DnsttTransport

/// The send and poll schedule on a fake millisecond clock (dnstt notes §2.4; docs/plans/DNSTT.md §2
/// "Polling"): the timer's 500 ms doubling to 10 s, its reset on any other send, tokens capped at
/// 16 and the queue at 128 with the newest dropped.
@Suite struct DnsttPollScheduleTests {
    /// When the timer's polls go out for an idle session, stepping the clock 1 ms at a time.
    @Test func idlePollsDoubleFrom500MsTo10s() {
        var schedule = DnsttPollSchedule(now: 0)
        var polls: [UInt32] = []
        for now in UInt32(0)...60_000 where schedule.next(now: now) == .poll { polls.append(now) }
        // 500, then +1 s, +2 s, +4 s, +8 s, then every 10 s.
        #expect(Array(polls.prefix(9)) == [500, 1_500, 3_500, 7_500, 15_500, 25_500, 35_500, 45_500, 55_500])
        #expect(schedule.delayMs == DnsttPollSchedule.maximumDelayMs)
    }

    @Test func nothingIsDueBeforeTheTimer() {
        var schedule = DnsttPollSchedule(now: 1_000)
        #expect(schedule.next(now: 1_000) == nil)
        #expect(schedule.next(now: 1_499) == nil)
        #expect(schedule.next(now: 1_500) == .poll)
        #expect(schedule.next(now: 1_500) == nil)
    }

    @Test func aDataSendResetsTheTimerTo500Ms() {
        var schedule = DnsttPollSchedule(now: 0)
        for now in UInt32(0)...8_000 { _ = schedule.next(now: now) }  // polls at 500, 1500, 3500, 7500
        #expect(schedule.delayMs == 8_000)
        schedule.enqueue([1, 2, 3])
        #expect(schedule.next(now: 9_000) == .data([1, 2, 3]))
        #expect(schedule.delayMs == 500)
        #expect(schedule.next(now: 9_499) == nil)
        #expect(schedule.next(now: 9_500) == .poll)
        #expect(schedule.delayMs == 1_000)
    }

    @Test func aTokenPollGoesOutAtOnceAndResetsTheTimer() {
        var schedule = DnsttPollSchedule(now: 0)
        for now in UInt32(0)...4_000 { _ = schedule.next(now: now) }
        #expect(schedule.delayMs == 4_000)
        schedule.responseCarriedPackets()
        #expect(schedule.next(now: 4_001) == .poll)
        #expect(schedule.tokens == 0)
        #expect(schedule.delayMs == 500)
        #expect(schedule.next(now: 4_002) == nil)
        #expect(schedule.next(now: 4_501) == .poll)
    }

    @Test func tokensAreCappedAt16AndDataUsesThemUp() {
        var schedule = DnsttPollSchedule(now: 0)
        for _ in 0..<40 { schedule.responseCarriedPackets() }
        #expect(schedule.tokens == 16)
        schedule.enqueue([7])
        #expect(schedule.next(now: 1) == .data([7]))
        #expect(schedule.tokens == 15)
        var polls = 0
        while schedule.next(now: 2) == .poll { polls += 1 }
        #expect(polls == 15)
        #expect(schedule.tokens == 0)
    }

    @Test func dataGoesFirstInOrderWithoutPacing() {
        var schedule = DnsttPollSchedule(now: 0)
        schedule.responseCarriedPackets()
        for byte in UInt8(0)..<5 { schedule.enqueue([byte]) }
        var sends: [DnsttPollSchedule.Send] = []
        while let send = schedule.next(now: 10) { sends.append(send) }
        #expect(sends == [.data([0]), .data([1]), .data([2]), .data([3]), .data([4])])
        #expect(schedule.tokens == 0)  // the first data query used the token
    }

    @Test func theQueueHolds128AndDropsTheNewest() {
        var schedule = DnsttPollSchedule(now: 0)
        for index in 0..<200 {
            #expect(schedule.enqueue([UInt8(index & 0xFF), UInt8(index >> 8)]) == (index < 128))
        }
        #expect(schedule.queue.count == 128)
        #expect(schedule.droppedPackets == 72)
        #expect(schedule.next(now: 0) == .data([0, 0]))
        #expect(schedule.queue.last == [127, 0])
    }

    @Test func theClockMayWrap() {
        let start = UInt32.max - 200
        var schedule = DnsttPollSchedule(now: start)
        #expect(schedule.next(now: start &+ 499) == nil)
        #expect(schedule.next(now: start &+ 500) == .poll)
    }
}
