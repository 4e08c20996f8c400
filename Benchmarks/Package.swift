// swift-tools-version: 6.1
import PackageDescription

// Wormhole's benchmarks that count allocations, in a package of their own so that Wormhole depends on nothing.
//
//     cd Benchmarks && swift package benchmark
let package = Package(
    name: "WormholeBenchmarks",
    // As Wormhole's own: Synchronization's Mutex needs macOS 15.
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Wormhole", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "Codec",
            dependencies: [
                .product(name: "Wormhole", package: "Wormhole"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Codec",
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
