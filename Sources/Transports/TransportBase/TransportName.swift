import PosternLinkSpec

/// The one transport vocabulary: a pluggable transport's name is PosternLinkSpec's ``TransportName``
/// (a C identifier of at most 64 bytes, as in bridge lines and ClientTransportPlugin), whether it
/// comes from a bridge line, a managed plugin's CMETHOD line or a registry. Named here too so that
/// code that sees only TransportBase (its SOCKS listener, a plugin's handshake) needs no second import.
public typealias TransportName = PosternLinkSpec.TransportName
