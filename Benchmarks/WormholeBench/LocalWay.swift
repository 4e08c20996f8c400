// Foundation's NotificationCenter inside one process: the ceiling users know, with no process boundary.
import Foundation
import Synchronization

enum LocalWay {
    static let name = "Foundation NotificationCenter, in-process"

    /// Post → observer latency, posts a second to one observer, and to eight observers.
    static func measure(_ payload: Payload, counts: Counts) -> Row {
        let center = NotificationCenter()
        let arrived = Mutex<UInt64>(0)
        let token = center.addObserver(forName: .init("local"), object: nil, queue: nil) { _ in
            arrived.withLock { $0 = monotonicNanoseconds() }
        }
        var samples: [UInt64] = []
        for _ in 0..<counts.rounds {
            let start = monotonicNanoseconds()
            center.post(name: .init("local"), object: nil, userInfo: payload.userInfo)
            samples.append(arrived.withLock { $0 } - start)
        }
        let start = monotonicNanoseconds()
        for _ in 0..<counts.flood { center.post(name: .init("local"), object: nil, userInfo: payload.userInfo) }
        let rate = Double(counts.flood) / (Double(monotonicNanoseconds() - start) / 1e9)
        center.removeObserver(token)

        let fanned = Mutex(0)
        let tokens = (0..<8).map { _ in
            center.addObserver(forName: .init("fan"), object: nil, queue: nil) { _ in fanned.withLock { $0 += 1 } }
        }
        let fanStart = monotonicNanoseconds()
        for _ in 0..<counts.fanOut { center.post(name: .init("fan"), object: nil, userInfo: payload.userInfo) }
        let fanRate = Double(counts.fanOut) / (Double(monotonicNanoseconds() - fanStart) / 1e9)
        tokens.forEach(center.removeObserver)
        let fanOut = FanOutResult(rate: fanRate, posterKiB: 0, sinkKiB: 0)
        return Row(mechanism: name, label: name, payload: payload.label, latency: Percentiles(nanoseconds: samples), rate: rate, fanOut: fanOut)
    }
}
