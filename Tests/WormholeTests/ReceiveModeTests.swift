import Testing
@testable import Wormhole
@testable import WormholeEngine

/// What the receive loop is doing (``ReceiveMode``): every event in every mode, the mode a round takes from what
/// holds it back, and whether it ends paused after its reads, checked against the rules the loop followed before
/// the mode was a value of its own.
@Suite("Receive mode: what the receive loop is doing", .throttled)
struct ReceiveModeTests {
    private static let ms: UInt64 = 1_000_000
    private static let modes: [ReceiveMode] = [
        .reading, .pausedForBacklog, .awaitingFirstObserver, .awaitingObservers(remaining: 500 * ms),
        .handingOver(resumes: false), .handingOver(resumes: true), .stopping,
    ]
    private static let events: [ReceiveMode.Event] = [
        .handOverStopped, .handOverFinished, .backlogFilled, .backlogHasRoom, .noObserverYet,
        .observersAwaited(for: 200 * ms), .observerWaitOver, .stopRequested,
    ]

    /// Every mode and event, and where it leads: `nil` for a refused event (the mode stays).
    private static let table: [ReceiveMode: [ReceiveMode.Event: ReceiveMode?]] = {
        let awaited = ReceiveMode.awaitingObservers(remaining: 200 * ms)
        let refusedInStop = Dictionary(uniqueKeysWithValues: events.map { ($0, ReceiveMode?.none) })
        return [
            .reading: [
                .handOverStopped: .handingOver(resumes: false), .handOverFinished: .reading,
                .backlogFilled: .pausedForBacklog, .backlogHasRoom: .reading,
                .noObserverYet: .awaitingFirstObserver, .observersAwaited(for: 200 * ms): awaited,
                .observerWaitOver: .reading, .stopRequested: .stopping,
            ],
            .pausedForBacklog: [
                .handOverStopped: .handingOver(resumes: false), .handOverFinished: .pausedForBacklog,
                .backlogFilled: .pausedForBacklog, .backlogHasRoom: .reading,
                .noObserverYet: .awaitingFirstObserver, .observersAwaited(for: 200 * ms): awaited,
                .observerWaitOver: .pausedForBacklog, .stopRequested: .stopping,
            ],
            .awaitingFirstObserver: [
                .handOverStopped: .handingOver(resumes: false), .handOverFinished: .awaitingFirstObserver,
                .backlogFilled: .pausedForBacklog, .backlogHasRoom: .awaitingFirstObserver,
                .noObserverYet: .awaitingFirstObserver, .observersAwaited(for: 200 * ms): awaited,
                .observerWaitOver: .reading, .stopRequested: .stopping,
            ],
            .awaitingObservers(remaining: 500 * ms): [
                .handOverStopped: .handingOver(resumes: false),
                .handOverFinished: .awaitingObservers(remaining: 500 * ms),
                .backlogFilled: .pausedForBacklog, .backlogHasRoom: .awaitingObservers(remaining: 500 * ms),
                .noObserverYet: .awaitingFirstObserver, .observersAwaited(for: 200 * ms): awaited,
                .observerWaitOver: .reading, .stopRequested: .stopping,
            ],
            .handingOver(resumes: false): [
                .handOverStopped: .handingOver(resumes: false), .handOverFinished: .reading,
                .backlogFilled: .handingOver(resumes: false), .backlogHasRoom: .handingOver(resumes: true),
                .noObserverYet: nil, .observersAwaited(for: 200 * ms): nil, .observerWaitOver: nil,
                .stopRequested: .stopping,
            ],
            .handingOver(resumes: true): [
                .handOverStopped: .handingOver(resumes: true), .handOverFinished: .reading,
                .backlogFilled: .handingOver(resumes: false), .backlogHasRoom: .handingOver(resumes: true),
                .noObserverYet: nil, .observersAwaited(for: 200 * ms): nil, .observerWaitOver: nil,
                .stopRequested: .stopping,
            ],
            .stopping: refusedInStop.merging([.stopRequested: .stopping]) { $1 },
        ]
    }()

    /// The events that lead to `mode` from a fresh schedule, which reads.
    private func starting(in mode: ReceiveMode) -> ReceiveSchedule {
        var schedule = ReceiveSchedule(now: 0)
        let events: [ReceiveMode.Event] = switch mode {
        case .reading: []
        case .pausedForBacklog: [.backlogFilled]
        case .awaitingFirstObserver: [.noObserverYet]
        case .awaitingObservers(let remaining): [.observersAwaited(for: remaining)]
        case .handingOver(let resumes): [.handOverStopped, resumes ? .backlogHasRoom : .backlogFilled]
        case .stopping: [.stopRequested]
        }
        for event in events { schedule.handle(event) }
        #expect(schedule.mode == mode)
        return schedule
    }

    @Test("every event in every mode leads where the table says, and says whether it moved, changed nothing or was refused")
    func everyTransition() {
        #expect(Self.table.count == Self.modes.count)
        for from in Self.modes {
            let row = Self.table[from] ?? [:]
            #expect(row.count == Self.events.count, "a row for every event from \(from)")
            for event in Self.events {
                var mode = from
                let answer = mode.handle(event)
                guard let expected = row[event] else { continue }
                if let to = expected {
                    #expect(mode == to, "\(from) + \(event)")
                    #expect(answer == (to == from ? .unchanged : .moved), "\(from) + \(event)")
                } else {
                    #expect(mode == from, "\(from) + \(event) is refused and changes nothing")
                    #expect(answer == .refused, "\(from) + \(event)")
                }
            }
        }
    }

    @Test("a wait for observers that is reported again with the same time left changes nothing; another time moves it")
    func observerWaitRestarts() {
        var mode = ReceiveMode.awaitingObservers(remaining: 500 * Self.ms)
        #expect(mode.handle(.observersAwaited(for: 500 * Self.ms)) == .unchanged)
        #expect(mode.handle(.observersAwaited(for: 499 * Self.ms)) == .moved)
        #expect(mode == .awaitingObservers(remaining: 499 * Self.ms))
    }

    @Test("a reading wait is the event it says: .max no observer yet, a time the wait, nil over")
    func observerWaitEvents() {
        #expect(ReceiveMode.observerWait(nil) == .observerWaitOver)
        #expect(ReceiveMode.observerWait(.max) == .noObserverYet)
        #expect(ReceiveMode.observerWait(7) == .observersAwaited(for: 7))
    }

    @Test("once stopping, nothing but another stop is taken, and the loop does not wait")
    func stopIsFinal() {
        var schedule = starting(in: .stopping)
        for event in Self.events where event != .stopRequested {
            #expect(schedule.handle(event) == .refused)
        }
        #expect(schedule.handle(.stopRequested) == .unchanged)
        var asked = 0
        schedule.takeStock(handingOver: true, backlogOver: true, durable: true) { asked += 1; return nil }
        #expect(schedule.pausesAfterReads(backlogOver: false) { asked += 1; return nil })
        #expect(schedule.mode == .stopping && asked == 0)
        #expect(schedule.timeout(inboxTimeout: 250) == 0)
    }

    /// Every mode a round may begin in but stopping.
    private static let priors = modes.filter { $0 != .stopping }
    private static let waits: [UInt64?] = [nil, .max, 500 * ms]

    @Test("a round takes its mode from what holds it back, whatever it was doing: its wait and its reads as before")
    func takeStockAsBefore() {
        for prior in Self.priors {
            for handingOver in [false, true] {
                for backlogOver in [false, true] {
                    for durable in [false, true] {
                        for wait in Self.waits {
                            var schedule = starting(in: prior)
                            var asked = 0
                            schedule.takeStock(handingOver: handingOver, backlogOver: backlogOver, durable: durable) {
                                asked += 1
                                return wait
                            }
                            // The rules of the loop before its mode was a value.
                            let readingWait = durable && !handingOver ? wait : nil
                            let paused = backlogOver || readingWait != nil || handingOver
                            let timeout = schedule.timeout(
                                paused: paused, resumesHandOver: handingOver && !backlogOver,
                                readingWait: readingWait, inboxTimeout: paused ? nil : 250)
                            let what = "\(prior), handingOver \(handingOver), backlog \(backlogOver), durable \(durable), wait \(String(describing: wait))"
                            #expect(asked == (durable && !handingOver ? 1 : 0), "\(what)")
                            #expect(schedule.mode.reads == !paused, "\(what)")
                            #expect(schedule.timeout(inboxTimeout: 250) == timeout, "\(what)")
                        }
                    }
                }
            }
        }
    }

    @Test("after its reads a round pauses, goes on with a hand-over, or reads, as before; a wait for observers is asked again only when it decides")
    func pauseAfterReadsAsBefore() {
        for prior in Self.priors {
            for handingOver in [false, true] {
                for backlogOver in [false, true] {
                    for wait in Self.waits {
                        for backlogNow in [false, true] {
                            for waitNow in [nil, .max, 100 * Self.ms] as [UInt64?] {
                                var schedule = starting(in: prior)
                                schedule.takeStock(handingOver: handingOver, backlogOver: backlogOver, durable: true) { wait }
                                var asked = 0
                                let pauses = schedule.pausesAfterReads(backlogOver: backlogNow) {
                                    asked += 1
                                    return waitNow
                                }
                                // The rules of the loop before its mode was a value.
                                let readingWait = handingOver ? nil : wait
                                let asks = !handingOver && !backlogNow && readingWait != nil
                                let paused = handingOver || backlogNow || (readingWait != nil && waitNow != nil)
                                let what = "\(prior), handingOver \(handingOver), backlog \(backlogOver) then \(backlogNow), wait \(String(describing: wait)) then \(String(describing: waitNow))"
                                #expect(pauses == paused, "\(what)")
                                #expect(asked == (asks ? 1 : 0), "\(what)")
                                if handingOver {
                                    #expect(schedule.mode == .handingOver(resumes: !backlogNow), "\(what)")
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
