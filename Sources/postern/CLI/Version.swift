import PosternTor

enum PosternVersion {
    static let string = "0.1.0"
    static var torCore: String { TorManager.torVersion }
}
