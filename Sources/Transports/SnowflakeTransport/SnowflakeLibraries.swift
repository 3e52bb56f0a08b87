internal import CSnowflakeLibraries
import PosternSystem

extension SnowflakeError.Code {
    public static let librariesMissing = Self("libraries-missing")
}

extension SnowflakeError.Kind {
    /// This machine lacks something the transport needs (a shared library).
    public static let environment = Self("environment")
}

/// libnice, GLib/GObject and usrsctp are opened on the first snowflake connection, not at process
/// start (see Sources/CSnowflakeLibraries): every entry point that calls into them checks first.
enum SnowflakeLibraries {
    static func ensureLoaded() throws(SnowflakeError) {
        if let failure = postern_snowflake_libraries_load() {
            throw SnowflakeError(code: .librariesMissing, kind: .environment,
                                 message: "snowflake needs libnice and usrsctp: \(String(cString: failure))")
        }
    }
}
