// swift-tools-version: 6.0
import PackageDescription

// The shopping-cart example's shared logic, and a pair of programs that run it on Linux (or macOS) as the app and
// its widget would, in a package of its own so that Wormhole's own targets stay as they are.
//
//     cd Examples && swift run cart-widget-side    # in one terminal, first
//     cd Examples && swift run cart-app-side       # in another
//
// CartApp, CartWidget and CartShare import SwiftUI, WidgetKit and UIKit: they are files to copy into an Xcode
// project (README.md), not targets here.
let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "WormholeExamples",
    // As Wormhole's own: Synchronization's Mutex needs macOS 15 / iOS 18.
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(name: "Wormhole", path: ".."),
    ],
    targets: [
        .target(
            name: "CartShared", dependencies: [.product(name: "Wormhole", package: "Wormhole")],
            path: "CartShared", swiftSettings: settings),
        .executableTarget(
            name: "cart-app-side",
            dependencies: ["CartShared", .product(name: "Wormhole", package: "Wormhole")],
            path: "CartPair/AppSide", swiftSettings: settings),
        .executableTarget(
            name: "cart-widget-side",
            dependencies: ["CartShared", .product(name: "Wormhole", package: "Wormhole")],
            path: "CartPair/WidgetSide", swiftSettings: settings),
    ],
    swiftLanguageModes: [.v6]
)
