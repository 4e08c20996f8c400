import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// The registry entry a listener mends as it keeps house: written as the observers are when it writes, never as
/// they were when it looked, and never with a durable center's observers gone while the center goes away.
///
/// The listener keeps house as soon as the registry changes (its watch tells it), so it mends while observers
/// are added and while a center goes: each test has a mend look first and then find things changed, as happens
/// when the listener's thread is preempted between the two.
@Suite("Registry entries mended as the listener keeps house", .throttled)
struct RegistryMendTests {
    private let x = Subscription(name: "x", object: nil)
    private let y = Subscription(name: "y", object: nil)

    /// A membership of its own, with no listener thread that would mend the entry beside the test's own mend.
    private func membership(_ container: TemporaryContainer, _ identity: Identity) throws -> (Membership, Registry) {
        let opened = try Container(path: container.path)
        let registry = Registry(container: opened) {}
        let settings = EndpointSettings(
            maximumSpoolSize: 1 << 20, maximumContainerSpoolSize: 4 << 20, transport: .sequencedPacket, marksPostsAsRelayed: false)
        let membership = Membership(
            container: opened, identity: identity, transport: .sequencedPacket, registry: registry, counters: Counters(),
            fanout: Fanout(container: opened, settings: settings) {})
        return (membership, registry)
    }

    @Test("a mend writes the subscriptions as they are when it writes: one added while it looked is not lost")
    func writesWhatIsCurrent() throws {
        let container = TemporaryContainer()
        let (membership, registry) = try membership(container, .ephemeral)
        let id: UInt64 = 0x5eed
        var asked = 0
        // Its entry is missing (lost, or not written yet): the mend writes one.
        let mended = membership.mend(id) {
            asked += 1
            // As the listener looked, only x was observed; y was added before it wrote.
            return asked == 1 ? [x] : [x, y]
        }
        #expect(mended)
        #expect(asked == 2, "asked again as it writes")
        let entry = try #require(try registry.currentEntry(id))
        #expect(Set(entry.subscriptions) == [x, y], "not the set it saw as it looked")
    }

    @Test("a durable center that goes away between its listener's look and its write keeps its entry as it was")
    func durableCenterGoingAway() throws {
        let container = TemporaryContainer()
        let (membership, registry) = try membership(container, .durable("d"))
        let id: UInt64 = 0xd
        // The entry as the last run left it: the mend has something to write.
        let last = RegistryEntry(
            listener: id, pid: 1, subscriptions: [x, y], identity: "d", lastSeen: Int64(Date().timeIntervalSince1970),
            transport: .sequencedPacket)
        try registry.write(last)
        var asked = 0
        let mended = membership.mend(id) {
            asked += 1
            // It looked while the center observed x and y; then the center went, its observers removed without
            // publishing (the registration is the last run's again: nil), before it wrote.
            return asked == 1 ? [x, y] : nil
        }
        #expect(mended)
        #expect(asked == 2, "asked again as it writes")
        // Not written with no subscriptions: posters go on spooling x and y for the identity.
        #expect(try registry.currentEntry(id) == last)
    }

    @Test("observers removed without publishing: a durable center keeps its last run's entry, an ephemeral one lists the rest")
    func registrationAfterRemoval() throws {
        let container = TemporaryContainer()
        let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "d")
        durable.addObserver(forName: .init("x"), object: nil, queue: nil) { _ in }
        #expect(durable.endpoint.reception.registration() == [x])
        durable.endpoint.remove(publish: false) { _ in true }
        #expect(durable.endpoint.reception.registration() == nil)
        // An observer added again speaks for the registration again.
        durable.addObserver(forName: .init("y"), object: nil, queue: nil) { _ in }
        #expect(durable.endpoint.reception.registration() == [y])

        let ephemeral = try GroupNotificationCenter(containerURL: container.url)
        ephemeral.addObserver(forName: .init("x"), object: nil, queue: nil) { _ in }
        ephemeral.addObserver(forName: .init("y"), object: nil, queue: nil) { _ in }
        ephemeral.endpoint.remove(publish: false) { $0.subscription == x }
        #expect(ephemeral.endpoint.reception.registration() == [y])
    }
}
