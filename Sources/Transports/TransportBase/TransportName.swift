import BridgeConfig

/// The one transport vocabulary: a pluggable transport's name is BridgeConfig's ``TransportName``
/// (a C identifier of at most 64 bytes, as in bridge lines and ClientTransportPlugin), whether it
/// comes from a bridge line, a managed plugin's CMETHOD line or a registry. Named here too so that
/// code that sees only TransportBase needs no second import.
public typealias TransportName = BridgeConfig.TransportName
