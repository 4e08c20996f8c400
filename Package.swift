// swift-tools-version: 6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Wormhole",
    // Synchronization's Mutex needs macOS 15 / iOS 18.
    platforms: [.macOS(.v15), .iOS(.v18), .watchOS(.v11), .tvOS(.v18), .visionOS(.v2)],
    products: [
        .library(name: "Wormhole", targets: ["Wormhole"]),
        // SwiftUI's property wrapper and WidgetKit's reloads, apart: an app that uses neither links neither.
        .library(name: "WormholeUI", targets: ["WormholeUI"]),
        // The relay to another device (the Apple Watch, through WatchConnectivity), apart: an app that does not
        // relay links neither it nor WatchConnectivity.
        .library(name: "WormholeRelay", targets: ["WormholeRelay"]),
        // The bridge to other hosts, through a NATS server with JetStream, apart: an app that stays on one device
        // links none of it.
        .library(name: "WormholeBridge", targets: ["WormholeBridge"]),
        .executable(name: "wormhole", targets: ["WormholeTool"]),
    ],
    targets: [
        // The library in two targets: the engine (the platform seam, the container's files, the byte formats and
        // codecs, storage, transport and the center: one process in one container) and, above it, the API, which
        // re-exports the engine's public types. The compiler refuses the engine any use of the API. The engine's
        // own layers stay folders (.ci/layers.py): split into targets, they cost a notification half as much again,
        // since a `package` declaration is neither inlined nor specialized in another target.
        .target(name: "WormholeEngine", swiftSettings: strictSettings),
        .target(name: "Wormhole", dependencies: ["WormholeEngine"], swiftSettings: strictSettings),
        .target(name: "WormholeUI", dependencies: ["Wormhole"], swiftSettings: strictSettings),
        .target(name: "WormholeRelay", dependencies: ["Wormhole"], swiftSettings: strictSettings),
        // The bridge shares the relay's files in the container (its state, its posted log) and speaks NATS's
        // client protocol, written here.
        .target(name: "WormholeBridge", dependencies: ["WormholeRelay"], swiftSettings: strictSettings),
        // The `wormhole` tool. Its folder is not named `wormhole`: on a case-insensitive file system (a Mac's
        // default) that would be the library's folder.
        .executableTarget(name: "WormholeTool", dependencies: ["Wormhole", "WormholeBridge"], swiftSettings: strictSettings),
        .executableTarget(
            name: "wormhole-bench",
            dependencies: ["Wormhole", "WormholeBridge"],
            path: "Benchmarks/WormholeBench",
            swiftSettings: strictSettings
        ),
        .target(
            name: "WormholeTestSupport", dependencies: ["WormholeRelay"], path: "Tests/WormholeTestSupport",
            swiftSettings: strictSettings),
        .executableTarget(
            name: "wormhole-chaos",
            dependencies: ["Wormhole", "WormholeTestSupport"],
            path: "Tests/WormholeChaos",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "wormhole-static-check",
            dependencies: ["Wormhole", "WormholeTestSupport"],
            path: "Tests/WormholeStaticCheck",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "wormhole-test-peer",
            dependencies: ["Wormhole", "WormholeTestSupport"],
            path: "Tests/WormholeTestPeer",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "wormhole-relay-peer",
            dependencies: ["Wormhole", "WormholeRelay", "WormholeTestSupport"],
            path: "Tests/WormholeRelayPeer",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "WormholeTests",
            dependencies: [
                "Wormhole", "WormholeUI", "WormholeRelay", "WormholeBridge", "WormholeTestSupport", "WormholeTool", "wormhole-test-peer", "wormhole-relay-peer",
                "wormhole-chaos", "wormhole-bench",
            ],
            resources: [.copy("Corpus"), .copy("CorpusNATS")],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
