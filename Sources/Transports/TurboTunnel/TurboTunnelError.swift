import PosternSystem

/// The one public error type of the Turbo Tunnel layer (KCP, smux, ClientID) that snowflake and dnstt
/// share. Every message names the peer with the label its owner passed in (snowflake: "the snowflake
/// proxy or server"), so a transport's log lines read as they did before the layer was shared. Each
/// transport maps these codes into its own error type, keeping the raw value.
public typealias TurboTunnelError = CodedError<TurboTunnelErrorDomain>

public enum TurboTunnelErrorDomain: ErrorDomain {
    public static var defaultKind: TurboTunnelError.Kind { .protocolViolation }
}

extension TurboTunnelError.Code {
    /// A KCP segment with an unknown command, a length beyond the packet, or a payload over the cap.
    public static let kcpMalformed = Self("kcp-malformed")
    /// A KCP segment of another conversation than the session's.
    public static let kcpWrongConversation = Self("kcp-wrong-conversation")
    /// An smux frame with an unknown command.
    public static let smuxMalformed = Self("smux-malformed")
    /// An smux frame whose version is not 2.
    public static let smuxWrongVersion = Self("smux-wrong-version")
    /// The peer sent more stream data than the window we granted (bytes the reader has not read yet).
    public static let smuxWindowExceeded = Self("smux-window-exceeded")
    /// A ClientID that is not 8 bytes (our own input).
    public static let clientIDLength = Self("client-id-length")
}
