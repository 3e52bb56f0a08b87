/// The argument rules of meek_lite (lyrebird v0.5.0, transports/meeklite), a transport Postern has no
/// module for: it runs only as an external plugin (lyrebird or obfs4proxy). Its rules live here,
/// next to the rulebook, because there is no Postern transport module to hold them and no dial-time
/// check to share them with; a future meek_lite module would take them over.
public struct MeekLiteArgumentRules: BridgeArgumentRules {
    public init() {}

    public var transport: TransportName { .meekLite }
    /// The client connects to `url=` (or `front=`), never to the bridge address.
    public var acceptsHostNameAddress: Bool { true }

    public func review(_ review: inout BridgeArgumentReview) throws(BridgeArgumentProblem) {
        review.warnAboutUnknownKeys(known: ["url", "front", "utls"])
        guard let url = review["url"] else {
            throw BridgeArgumentProblem(.missingURL, key: "url", "a meek_lite bridge needs url= (the meek server)")
        }
        guard BridgeArgumentSyntax.isHTTPURL(url) else {
            throw BridgeArgumentProblem(.badURL, key: "url", "url must be an http:// or https:// URL with a host")
        }
        if let front = review["front"], !BridgeArgumentSyntax.isHostName(front) {
            throw BridgeArgumentProblem(.badFront, key: "front", "front must be a domain name")
        }
        if let name = review["utls"], !BridgeArgumentSyntax.isLyrebirdUTLSName(name, allowEmpty: false) {
            throw BridgeArgumentProblem(.badUTLS, key: "utls", "not a uTLS ClientHello name lyrebird knows (for example HelloRandomizedALPN, or none)")
        }
    }
}
