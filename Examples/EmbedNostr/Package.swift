// swift-tools-version: 6.0
import PackageDescription

// An app that embeds Postern: see docs/EMBEDDING.md.
let package = Package(
    name: "EmbedNostr",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "Postern", path: "../..")],
    targets: [
        .executableTarget(name: "EmbedNostr", dependencies: [
            .product(name: "PosternRuntime", package: "Postern"),
            .product(name: "PosternAppLayer", package: "Postern"),
            .product(name: "BridgeConfig", package: "Postern"),
        ], path: "Sources"),
    ]
)
