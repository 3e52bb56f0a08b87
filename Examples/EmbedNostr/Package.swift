// swift-tools-version: 6.0
import PackageDescription

// An app that embeds Postern: see docs/EMBEDDING.md. PosternRuntime re-exports what the app names
// of the modules below it (bridge lines, settings, tor options), so it needs no other product.
let package = Package(
    name: "EmbedNostr",
    // Linux only: Glibc, epoll and the in-process tor core; no Apple platform is declared because none
    // is supported.
    dependencies: [.package(name: "Postern", path: "../..")],
    targets: [
        .executableTarget(name: "EmbedNostr", dependencies: [
            .product(name: "PosternRuntime", package: "Postern"),
            .product(name: "PosternAppLayer", package: "Postern"),
        ], path: "Sources"),
    ]
)
