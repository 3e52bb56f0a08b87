internal import CNghttp2

/// Continuations to resume once the session's lock is released (never inside it: a resumed task
/// may come straight back for the lock).
struct HTTP2Completions {
    var items: [(CheckedContinuation<Result<HTTP2Response, WireError>, Never>, Result<HTTP2Response, WireError>)] = []

    func resumeAll() {
        for (continuation, result) in items { continuation.resume(returning: result) }
    }
}

/// One nghttp2 client session on memory buffers and the state of its streams: the only owner of
/// the nghttp2_session, deleted in deinit. Not thread-safe: HTTP2Connection calls it only under its
/// lock; nghttp2 calls the callbacks below synchronously from mem_recv and mem_send, on that thread,
/// with this object as user data.
final class HTTP2Session {
    private struct Stream {
        var bodyLimit: Int
        var status: Int?
        var headers: [HTTP2Header] = []
        var headerBytes = 0
        var body: [UInt8] = []
        /// The request body not yet handed to nghttp2.
        var outgoing: [UInt8]
        var outgoingOffset = 0
        /// Set when the stream ended or was refused before its waiter arrived.
        var result: Result<HTTP2Response, WireError>?
        var waiter: CheckedContinuation<Result<HTTP2Response, WireError>, Never>?
        /// A cap or the deadline ended it on our side; nghttp2 still reports its close later.
        var failure: WireError?
    }

    private let session: OpaquePointer
    private var streams: [Int32: Stream] = [:]
    private var completions = HTTP2Completions()
    /// Set once the connection failed; every later request fails with it.
    private var connectionFailure: WireError?

    init(settings: HTTP2ClientSettings) throws(WireError) {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw WireError(.http2Failed, kind: .failure, "nghttp2 could not allocate its callbacks")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let user else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
            return HTTP2Session.from(user).header(stream: frame.pointee.hd.stream_id,
                                                  name: UnsafeBufferPointer(start: name, count: nameLength),
                                                  value: UnsafeBufferPointer(start: value, count: valueLength))
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, streamID, data, length, user in
            guard let user else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
            HTTP2Session.from(user).data(stream: streamID, UnsafeBufferPointer(start: data, count: length), session: session)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, user in
            guard let user else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
            HTTP2Session.from(user).closed(stream: streamID, errorCode: errorCode)
            return 0
        }

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw WireError(.http2Failed, kind: .failure, "nghttp2 could not allocate its options")
        }
        defer { nghttp2_option_del(option) }
        // The server cannot open streams (no push) nor make nghttp2 queue unbounded answers: these
        // are nghttp2's flood limits, stated here so they do not depend on its defaults.
        nghttp2_option_set_max_outbound_ack(option, 1000)
        nghttp2_option_set_max_settings(option, 32)
        nghttp2_option_set_max_continuations(option, 8)
        nghttp2_option_set_peer_max_concurrent_streams(option, UInt32(HTTP2Connection.maximumConcurrentRequests))

        var created: OpaquePointer?
        // `self` is not yet complete, so the user data is set right after creation.
        guard nghttp2_session_client_new2(&created, callbacks, nil, option) == 0, let created else {
            throw WireError(.http2Failed, kind: .failure, "nghttp2 could not create a session")
        }
        session = created
        nghttp2_session_set_user_data(session, Unmanaged.passUnretained(self).toOpaque())

        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue), value: settings.headerTableSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: settings.enablePush ? 1 : 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: settings.initialWindowSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue), value: settings.maxFrameSize),
        ]
        guard nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count) == 0 else {
            throw WireError(.http2Failed, kind: .invalidInput, "nghttp2 refused the HTTP/2 settings")
        }
        if settings.connectionWindowIncrement > 0 {
            let window = Int32(clamping: Int64(settings.connectionWindowIncrement) + 65_535)
            guard nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, window) == 0 else {
                throw WireError(.http2Failed, kind: .invalidInput, "nghttp2 refused the connection window")
            }
        }
    }

    deinit { nghttp2_session_del(session) }

    private static func from(_ user: UnsafeMutableRawPointer) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(user).takeUnretainedValue()
    }

    /// True once nghttp2 wants neither to read nor to write: the connection is over (GOAWAY both ways).
    var isFinished: Bool { nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 }

    // MARK: Requests

    /// Queues `request` on a new stream; its bytes leave with the next ``takeOutbound()``.
    func submit(_ request: HTTP2Request, bodyLimit: Int) throws(WireError) -> Int32 {
        if let connectionFailure { throw connectionFailure }
        guard streams.count < HTTP2Connection.maximumConcurrentRequests else {
            throw WireError(.http2TooLarge, kind: .failure,
                            "more than \(HTTP2Connection.maximumConcurrentRequests) HTTP/2 requests are in flight on one connection")
        }
        // Firefox's pseudo-header order (m, p, a, s), then the fields.
        let fields = [(":method", request.method), (":path", request.path), (":authority", request.authority), (":scheme", request.scheme)]
            + request.headers.map { ($0.name, $0.value) }
        for (name, value) in fields where name.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 })
            || value.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) {
            throw WireError(.http2Failed, kind: .invalidInput, "an HTTP/2 header field contains NUL, CR or LF")
        }
        // One buffer for every name and value: nghttp2_submit_request copies the pairs before it returns.
        var bytes: [UInt8] = []
        var spans: [(name: Range<Int>, value: Range<Int>)] = []
        for (name, value) in fields {
            let nameStart = bytes.count
            bytes += name.utf8
            let valueStart = bytes.count
            bytes += value.utf8
            spans.append((nameStart..<valueStart, valueStart..<bytes.count))
        }
        let hasBody = request.body != nil
        let streamID: Int32 = bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            var nva = spans.map { span in
                nghttp2_nv(name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                           namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            guard hasBody else {
                return nghttp2_submit_request(session, nil, &nva, nva.count, nil, nil)
            }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil)) { _, streamID, buffer, length, flags, _, user in
                guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                return HTTP2Session.from(user).nextBodyChunk(stream: streamID, into: buffer, capacity: length, flags: flags)
            }
            return nghttp2_submit_request(session, nil, &nva, nva.count, &provider, nil)
        }
        guard streamID > 0 else {
            throw WireError(.http2Failed, kind: .failure, "nghttp2 refused the request (\(Self.describe(streamID)))")
        }
        streams[streamID] = Stream(bodyLimit: max(0, bodyLimit), outgoing: request.body ?? [])
        return streamID
    }

    /// Registers the waiter for `streamID`'s response; returns the result at once when it is already known.
    func await(_ streamID: Int32,
               _ waiter: CheckedContinuation<Result<HTTP2Response, WireError>, Never>) -> Result<HTTP2Response, WireError>? {
        guard var stream = streams[streamID] else {
            return .failure(connectionFailure ?? WireError(.http2Failed, kind: .network, "the HTTP/2 stream is gone"))
        }
        if let result = stream.result {
            streams[streamID] = nil
            return result
        }
        stream.waiter = waiter
        streams[streamID] = stream
        return nil
    }

    /// Ends `streamID` on our side (deadline, a failed write): resets it and fails its request.
    func cancel(_ streamID: Int32, _ error: WireError) -> HTTP2Completions {
        if streams[streamID] != nil {
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
            finish(streamID, .failure(error))
        }
        return takeCompletions()
    }

    /// Fails every request in flight and every later one.
    func failAll(_ error: WireError) -> HTTP2Completions {
        if connectionFailure == nil { connectionFailure = error }
        for streamID in Array(streams.keys) { finish(streamID, .failure(error)) }
        return takeCompletions()
    }

    // MARK: Bytes

    /// Everything nghttp2 has to send now.
    func takeOutbound() throws(WireError) -> [UInt8] {
        var output: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            if count < 0 { throw WireError(.http2Failed, kind: .protocolViolation, "HTTP/2 output failed (\(Self.describe(Int32(clamping: count))))") }
            guard count > 0, let data else { return output }
            output.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
        }
    }

    struct Received {
        var finished: HTTP2Completions
        /// The connection cannot go on: the server broke the protocol.
        var error: WireError?
    }

    /// Feeds the server's bytes; the responses they complete come back to be resumed.
    func receive(_ bytes: [UInt8]) -> Received {
        let consumed = bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
        var error: WireError?
        if consumed < 0 {
            error = WireError(.http2Failed, kind: .protocolViolation,
                              "the server broke the HTTP/2 protocol (\(Self.describe(Int32(clamping: consumed))))")
            if let error { for streamID in Array(streams.keys) { finish(streamID, .failure(error)) } }
            if connectionFailure == nil { connectionFailure = error }
        }
        return Received(finished: takeCompletions(), error: error)
    }

    // MARK: Callbacks (under the lock, from mem_recv / mem_send)

    private func header(stream streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard var stream = streams[streamID], stream.failure == nil else { return 0 }
        stream.headerBytes += name.count + value.count + 32
        guard stream.headerBytes <= HTTP2Connection.maximumHeaderBytes, stream.headers.count < HTTP2Connection.maximumHeaderCount else {
            stream.failure = WireError(.http2TooLarge, kind: .protocolViolation,
                                       "the HTTP/2 response's header block is larger than \(HTTP2Connection.maximumHeaderBytes) bytes or \(HTTP2Connection.maximumHeaderCount) fields")
            streams[streamID] = stream
            // Resets this stream only; the connection goes on.
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        let nameText = String(decoding: name, as: UTF8.self)
        let valueText = String(decoding: value, as: UTF8.self)
        if nameText == ":status" {
            // nghttp2 has checked it is three digits; a 1xx is an interim response, replaced by the final one.
            stream.status = Int(valueText)
            if let status = stream.status, (100..<200).contains(status) { stream.headers = [] }
        } else {
            stream.headers.append(HTTP2Header(name: nameText, value: valueText))
        }
        streams[streamID] = stream
        return 0
    }

    private func data(stream streamID: Int32, _ bytes: UnsafeBufferPointer<UInt8>, session: OpaquePointer?) {
        guard var stream = streams[streamID], stream.failure == nil else { return }
        guard stream.body.count + bytes.count <= stream.bodyLimit else {
            stream.failure = WireError(.http2TooLarge, kind: .protocolViolation, "the HTTP/2 response's body is larger than \(stream.bodyLimit) bytes")
            streams[streamID] = stream
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
            return
        }
        stream.body.append(contentsOf: bytes)
        streams[streamID] = stream
    }

    private func closed(stream streamID: Int32, errorCode: UInt32) {
        guard let stream = streams[streamID] else { return }
        if let failure = stream.failure {
            finish(streamID, .failure(failure))
        } else if errorCode == NGHTTP2_NO_ERROR.rawValue, let status = stream.status, status >= 200 {
            finish(streamID, .success(HTTP2Response(status: status, headers: stream.headers, body: stream.body)))
        } else {
            let reason = errorCode == NGHTTP2_NO_ERROR.rawValue ? "ended the stream without a final response"
                : "reset the stream (\(String(cString: nghttp2_http2_strerror(errorCode))))"
            finish(streamID, .failure(WireError(.http2Failed, kind: .protocolViolation, "the HTTP/2 server \(reason)")))
        }
    }

    private func nextBodyChunk(stream streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, capacity: Int,
                               flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard var stream = streams[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = min(capacity, stream.outgoing.count - stream.outgoingOffset)
        if count > 0 {
            stream.outgoing.withUnsafeBufferPointer { source in
                buffer.update(from: source.baseAddress! + stream.outgoingOffset, count: count)
            }
        }
        stream.outgoingOffset += count
        if stream.outgoingOffset == stream.outgoing.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            stream.outgoing = []
            stream.outgoingOffset = 0
        }
        streams[streamID] = stream
        return count
    }

    // MARK: Completion

    /// Records the stream's result: resumes its waiter (after the lock) or keeps the result for it.
    private func finish(_ streamID: Int32, _ result: Result<HTTP2Response, WireError>) {
        guard var stream = streams[streamID], stream.result == nil else { return }
        if let waiter = stream.waiter {
            completions.items.append((waiter, result))
            streams[streamID] = nil
        } else {
            stream.result = result
            stream.waiter = nil
            streams[streamID] = stream
        }
    }

    private func takeCompletions() -> HTTP2Completions {
        let taken = completions
        completions = HTTP2Completions()
        return taken
    }

    private static func describe(_ code: Int32) -> String { String(cString: nghttp2_strerror(code)) }
}
