internal import CCurl
import Foundation
import PosternSystem
import Synchronization

/// Makes libcurl's connection to the SOCKS listener itself, and hands it over only once the kernel
/// says the listener that accepted it is ours (``LoopbackServerAccount``); nothing is sent before.
///
/// An attached session's listener is proven ours before it is used (RunningSession), but the
/// connection is made after that proof: had the run died and another account bound the freed port
/// in between, the socks5h CONNECT, with the name of the destination, would go to that account. The
/// check has to be on the connection itself, after connect and before libcurl's SOCKS greeting, and
/// libcurl offers no hook there; so libcurl's open-socket callback connects the socket (with a
/// deadline) and checks it, and its sockopt callback tells libcurl the socket is already connected.
/// Own sessions get the same check (their listener is in this process, so it always passes).
final class OwnSocksConnector: Sendable {
    let timeout: Duration
    /// Why the last connection was refused; read after the transfer to explain libcurl's error.
    private let refusal = Mutex<String?>(nil)

    init(timeout: Duration) { self.timeout = timeout }

    var lastRefusal: String? { refusal.withLock { $0 } }

    /// Installs the callbacks on `handle`; the handle must not outlive `self` (CurlHandle holds it).
    func install(on handle: UnsafeMutableRawPointer) throws(AppLayerError) {
        try CurlHandle.check(ccurl_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, Unmanaged.passUnretained(self).toOpaque()),
                             "curl open-socket data")
        try CurlHandle.check(ccurl_setopt_opensocket_function(handle) { context, purpose, address in
            guard let context, let address, purpose == CURLSOCKTYPE_IPCXN else { return CURL_SOCKET_BAD }
            return Unmanaged<OwnSocksConnector>.fromOpaque(context).takeUnretainedValue().connect(address)
        }, "curl open-socket function")
        try CurlHandle.check(ccurl_setopt_sockopt_function(handle) { _, _, purpose in
            purpose == CURLSOCKTYPE_IPCXN ? Int32(CURL_SOCKOPT_ALREADY_CONNECTED) : Int32(CURL_SOCKOPT_OK)
        }, "curl sockopt function")
    }

    /// A connected socket whose server end is our account's, or CURL_SOCKET_BAD (the reason kept).
    private func connect(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let target = address.pointee
        let descriptor = socket(target.family, target.socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), target.protocol)
        guard descriptor >= 0 else { return refuse("no socket: \(String(cString: strerror(errno)))", nil) }
        let started = withUnsafeMutablePointer(to: &address.pointee.addr) { Glibc.connect(descriptor, $0, target.addrlen) }
        if started != 0 {
            guard errno == EINPROGRESS else { return refuse("cannot connect to the SOCKS listener: \(String(cString: strerror(errno)))", descriptor) }
            var events = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            var ready: Int32
            repeat { ready = poll(&events, 1, max(1, milliseconds)) } while ready < 0 && errno == EINTR
            guard ready > 0 else { return refuse("the SOCKS listener did not accept within \(timeout)", descriptor) }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length)
            guard failure == 0 else { return refuse("cannot connect to the SOCKS listener: \(String(cString: strerror(failure)))", descriptor) }
        }
        if let failure = LoopbackServerAccount.failure(connected: descriptor) {
            return refuse("the SOCKS listener is not ours (\(failure)); nothing was sent", descriptor)
        }
        refusal.withLock { $0 = nil }
        return descriptor
    }

    private func refuse(_ reason: String, _ descriptor: Int32?) -> curl_socket_t {
        if let descriptor { close(descriptor) }
        refusal.withLock { $0 = reason }
        return CURL_SOCKET_BAD
    }
}
