// The client side of one smux v2 stream with snowflake's (and dnstt's) settings: the stream is opened with a SYN
// (ID 3, as smux-go's client counter gives it), data goes out in PSH frames of at most 32768 bytes
// and only within the peer's window (initially 262144 bytes; v2 flow control), received bytes are
// acknowledged with UPD frames (consumed so far, our 1 MiB window) after the first read and whenever
// half a window has been read since the last UPD, and a NOP on stream 0 goes out every 10 s.
//
// Honest flow control, as smux-go: "consumed" is what the local reader (tor) has actually read
// (`consume`), not what has arrived. So a peer that respects the window has at most streamBuffer
// bytes waiting for tor, and one that sends more is cut off with smux-window-exceeded: bytes held
// for a slow reader are capped at streamBuffer (1 MiB) per stream.
//
// Hostile input: every counter that smux wraps (sent, consumed, the peer's consumed) uses wrapping
// arithmetic; a window update's window is taken as given (a lie can only stall our own sending);
// frames for other streams (smux-go's server never opens one), SYNs and NOPs are ignored, so the
// stream count of a session is 1 by construction; a UPD with a malformed payload is ignored.
//
// Pure logic like KCPControlBlock: frames in, frames out; the owner serialises access.

package struct SmuxStreamState {
    package static let initialPeerWindow: UInt32 = 262_144
    package static let streamBuffer: UInt32 = 1_048_576
    static let keepAliveIntervalMs: UInt32 = 10_000

    package let streamID: UInt32
    /// The window we grant the peer: bytes received and not yet read (streamBuffer; the fuzz
    /// target uses a small one to reach it).
    package let receiveWindow: UInt32
    package private(set) var peerWindow = SmuxStreamState.initialPeerWindow
    package private(set) var peerConsumed: UInt32 = 0
    package private(set) var sent: UInt32 = 0
    package private(set) var consumed: UInt32 = 0
    /// Stream bytes received from the peer (mod 2³²).
    package private(set) var received: UInt32 = 0
    private var consumedSinceUpdate: UInt32 = 0
    private var pendingOut: [UInt8] = []
    package private(set) var peerFinished = false
    private(set) var finishQueued = false
    private var lastKeepAlive: UInt32?
    /// Names the sender in error messages.
    let peer: String

    package init(streamID: UInt32 = 3, receiveWindow: UInt32 = SmuxStreamState.streamBuffer, peer: String = "the peer") {
        self.streamID = streamID
        self.receiveWindow = receiveWindow
        self.peer = peer
    }

    /// The SYN that opens the stream.
    package var openFrame: SmuxFrame { SmuxFrame(command: .syn, streamID: streamID) }

    /// Bytes accepted from the user but not yet sent (window closed).
    package var backlog: Int { pendingOut.count }

    package mutating func enqueue(_ bytes: [UInt8]) { pendingOut += bytes }

    package mutating func finish() { finishQueued = true }

    /// Frames that may go out now: PSH within the peer's window, then FIN when everything is sent.
    package mutating func outgoingFrames(now: UInt32) -> [SmuxFrame] {
        var frames: [SmuxFrame] = []
        if let last = lastKeepAlive {
            if timeDiff(now, last) >= Int32(Self.keepAliveIntervalMs) {
                frames.append(SmuxFrame(command: .nop, streamID: 0))
                lastKeepAlive = now
            }
        } else {
            lastKeepAlive = now
        }
        while !pendingOut.isEmpty {
            let inFlight = sent &- peerConsumed
            guard peerWindow > inFlight else { break }
            let allowed = Int(min(peerWindow - inFlight, UInt32(SmuxFrame.maxFrameSize)))
            let take = min(allowed, pendingOut.count)
            frames.append(SmuxFrame(command: .push, streamID: streamID, payload: Array(pendingOut[..<take])))
            pendingOut.removeFirst(take)
            sent &+= UInt32(take)
        }
        if finishQueued && pendingOut.isEmpty {
            frames.append(SmuxFrame(command: .fin, streamID: streamID))
            finishQueued = false
        }
        return frames
    }

    /// Bytes received but not read by the local reader yet; at most streamBuffer.
    package var unread: UInt32 { received &- consumed }

    /// The local reader has read `count` more bytes: the window update to send, if one is due
    /// (after the first read, then whenever half a window has been read since the last one).
    package mutating func consume(_ count: Int) -> SmuxFrame? {
        let n = UInt32(clamping: min(count, Int(unread)))
        guard n > 0 else { return nil }
        let firstRead = consumed == 0
        consumed &+= n
        consumedSinceUpdate &+= n
        guard firstRead || consumedSinceUpdate >= receiveWindow / 2 else { return nil }
        consumedSinceUpdate = 0
        return .update(streamID: streamID, consumed: consumed, window: receiveWindow)
    }

    /// Handles one frame from the peer; returns the data for the user, and frames to send back.
    /// Data beyond the window we granted (streamBuffer unread bytes) is a protocol violation.
    package mutating func receive(_ frame: SmuxFrame) throws(TurboTunnelError) -> (data: [UInt8], replies: [SmuxFrame]) {
        switch frame.command {
        case .push where frame.streamID == streamID:
            let n = UInt32(frame.payload.count)
            guard n > 0 else { return ([], []) }
            guard unread <= receiveWindow, receiveWindow - unread >= n else {
                throw TurboTunnelError(code: .smuxWindowExceeded, kind: .protocolViolation,
                                       message: "\(peer) sent more stream data than the \(receiveWindow)-byte window allows")
            }
            received &+= n
            return (frame.payload, [])
        case .update where frame.streamID == streamID:
            if let update = frame.windowUpdate {
                peerConsumed = update.consumed
                peerWindow = update.window
            }
        case .fin where frame.streamID == streamID:
            peerFinished = true
        default:
            break  // NOP, SYN from the peer, frames of other streams: nothing to do
        }
        return ([], [])
    }
}
