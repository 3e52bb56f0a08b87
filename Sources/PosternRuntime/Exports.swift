// What an app that embeds a session names, re-exported so that `import PosternRuntime` is enough
// (Examples/EmbedNostr imports nothing else of Postern's): the transport vocabulary and the
// settings it edits whole, and of the modules below the session only the types its API shows.
// The tor embedding itself (TorManager) stays behind the session.
@_exported import BridgeConfig
@_exported import PosternLinkSpec
@_exported import struct PosternSystem.CodedError
@_exported import protocol PosternSystem.ErrorDomain
@_exported import struct PosternSystem.ErrorCode
@_exported import struct PosternSystem.ErrorKind
@_exported import struct PosternTor.ConnectionProblem
@_exported import struct PosternTor.SocksEndpoint
@_exported import struct PosternTor.TorOption
@_exported import enum PosternTor.TorState
@_exported import struct PosternTor.TorStatus
@_exported import protocol PosternTor.TorReadinessSource
@_exported import typealias PosternTor.TorCoreError
@_exported import enum ConnectionAssist.AssistEvent
@_exported import struct ConnectionAssist.AssistRoute
@_exported import struct ConnectionAssist.AssistSnapshot
@_exported import struct ConnectionAssist.AssistStrategy
@_exported import struct ConnectionAssist.ProbeResult
@_exported import struct ConnectionAssist.RouteChoice
@_exported import struct ConnectionAssist.RouteFailure
@_exported import struct ConnectionAssist.RouteLimits
@_exported import struct ConnectionAssist.RouteLimitTable
@_exported import struct ConnectionAssist.RouteName
@_exported import protocol TransportBase.PluggableTransport
@_exported import struct TransportBase.TransportEvent
@_exported import struct TransportBase.TransportRegistry
