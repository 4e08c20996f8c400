// A peer process for the tests: posts numbered notifications and exits at once, or listens and prints one
// JSON line per notification. It also knows a secure-coding class of its own, to test allowedClasses.
import Foundation
import Synchronization
import Wormhole
import WormholeTestSupport

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: "--" + name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func flag(_ name: String) -> Bool { CommandLine.arguments.contains("--" + name) }

/// The string whose UTF-8 bytes `hex` spells, two digits a byte; nil when it spells none.
func utf8FromHex(_ hex: String) -> String? {
    let digits = Array(hex.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let byte = UInt8(String(decoding: digits[index..<(index + 2)], as: UTF8.self), radix: 16) else { return nil }
        bytes.append(byte)
    }
    // Decoded, then compared: decoding repairs what is not UTF-8.
    let string = String(decoding: bytes, as: UTF8.self)
    return Array(string.utf8) == bytes ? string : nil
}

func emit(_ object: [String: Any]) {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    var line = [UInt8](data)
    line.append(UInt8(ascii: "\n"))
    line.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
}

/// A field of /proc/self/status, in KiB.
func memoryStatus(_ field: String) -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return -1 }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
}

/// The bytes of shared memory files (memfd) this process has mapped, each file counted once.
func mappedSharedMemoryBytes() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
    var files: [String: Int] = [:]
    for line in text.split(separator: "\n") where line.contains("/memfd:") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 5, let range = fields.first?.split(separator: "-"), range.count == 2,
            let start = Int(range[0], radix: 16), let end = Int(range[1], radix: 16)
        else { continue }
        files[String(fields[4]), default: 0] = max(files[String(fields[4]), default: 0], end - start)
    }
    return files.values.reduce(0, +)
}

/// A typed message with a numbered payload, for the tests of what waits for a slow consumer.
struct TestBlob: GroupMessage {
    static let name = Notification.Name("test.blob")
    var i: Int
    var blob: Data
}

guard let container = option("container") ?? (CommandLine.arguments.dropFirst().first == "hold-lock" ? "" : nil) else {
    FileHandle.standardError.write(Data("usage: wormhole-test-peer post|listen --container DIR ...\n".utf8))
    exit(2)
}
if CommandLine.arguments.dropFirst().first == "hold-lock" {
    // Holds flock(2) on --file until killed: the control that proves a lock check sees a held lock.
    let fd = open(option("file") ?? "", O_RDWR)
    guard fd >= 0, flock(fd, LOCK_EX) == 0 else { exit(1) }
    emit(["locked": Int(getpid())])
    while true { sleep(1000) }
}
// --client ID makes the center durable; --spool-limit BYTES sets the per-listener spool cap this process posts with.
let center = try GroupNotificationCenter(
    containerURL: URL(fileURLWithPath: container), clientIdentifier: option("client"),
    configuration: GroupNotificationCenter.Configuration(
        maximumSpoolSize: option("spool-limit").flatMap { Int($0) } ?? GroupNotificationCenter.maximumSpoolSize))
// --name-hex: the name as the hex of its UTF-8 bytes, which reach this process as written (Darwin's Process
// passes a non-ASCII argument decomposed).
let name = (option("name-hex").flatMap(utf8FromHex) ?? option("name")).map { Notification.Name($0) }
let object = option("object")

switch CommandLine.arguments.dropFirst().first {
case "post":
    // Posts --count numbered notifications, then exits without waiting for anything (but with --stay).
    let count = Int(option("count") ?? "1") ?? 1
    let start = Int(option("start") ?? "0") ?? 0
    let payload = Int(option("payload") ?? "0") ?? 0
    var delivered = 0, spooled = 0, failed = 0, spoolFull = 0, notPosted = 0
    // --on-signal: everything is built first, then it prints {"ready": pid} and posts only on SIGUSR1, so that a
    // test can start posts one after another without waiting for a process to start and build its payload.
    let onSignal = flag("on-signal")
    var signals = sigset_t()
    if onSignal {
        sigemptyset(&signals)
        sigaddset(&signals, SIGUSR1)
        sigprocmask(SIG_BLOCK, &signals, nil)
    }
    func userInfo(_ i: Int) -> [AnyHashable: Any] {
        // --same posts one userInfo every time: the process's id, and what the other flags add.
        var userInfo: [AnyHashable: Any] = flag("same") ? ["pid": Int(getpid())] : ["i": i, "pid": Int(getpid())]
        if payload > 0 {
            // Byte k is k * 31 + i (mod 256), which repeats every 256 bytes: built a period at a time, since a
            // byte at a time takes seconds per megabyte in a debug build.
            let period = (0..<256).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
            var blob = [UInt8]()
            blob.reserveCapacity(payload + 256)
            while blob.count < payload { blob += period }
            // --shape nested holds it as ["d": [blob]]; --shape typed posts a TestBlob message instead.
            switch option("shape") {
            case "nested": userInfo["d"] = [Data(blob[0..<payload])]
            default: userInfo["blob"] = Data(blob[0..<payload])
            }
        }
        // With --same, one point every time.
        if flag("custom") { userInfo["point"] = flag("same") ? TestPoint(x: 0, y: 0) : TestPoint(x: i, y: -i) }
        if flag("date") { userInfo["when"] = Date(timeIntervalSince1970: 1_000_000) }
        // --message also carries the number as a mailbox's message.
        if flag("message") { userInfo["message"] = i }
        if flag("types") {
            userInfo["ids"] = [1, 2, 3]
            userInfo["flag"] = true
            userInfo["title"] = "héllo ✓"
            userInfo["data"] = Data([0, 1, 2, 255])
            userInfo["nested"] = ["a": ["b": 2.5]]
            userInfo["null"] = "$null"
        }
        return userInfo
    }
    let prepared = onSignal ? (start..<(start + count)).map(userInfo) : []
    if onSignal {
        emit(["ready": Int(getpid())])
        var received: CInt = 0
        sigwait(&signals, &received)
    }
    // --exhaust-after N: after N posts, takes every descriptor the process may still open (as `listen
    // --exhaust-descriptors` does) and posts the rest out of descriptors; prints how many it took.
    let exhaustAfter = option("exhaust-after").flatMap { Int($0) }
    for i in start..<(start + count) {
        if let exhaustAfter, i - start == exhaustAfter {
            let held = exhaustDescriptors()
            emit(["exhausted": held.count, "errno": Int(errno)])
        }
        let userInfo = onSignal ? prepared[i - start] : userInfo(i)
        let report: PostReport
        do {
            if option("shape") == "typed", let blob = userInfo["blob"] as? Data {
                report = try center.postReporting(TestBlob(i: i, blob: blob), object: object)
            } else {
                report = try center.postReporting(name: name ?? Notification.Name("peer"), object: object, userInfo: userInfo)
            }
        } catch {
            // Not posted at all (this process out of descriptors, say): said, and counted apart.
            FileHandle.standardError.write(Data("not posted: \(error)\n".utf8))
            notPosted += 1
            continue
        }
        delivered += report.delivered
        spooled += report.spooled
        failed += report.failures.count
        spoolFull += report.failures.filter { $0.error.code == .spoolFull }.count
    }
    // dropped: files of the container this process skipped as damaged (a planted lease, say), each counted once.
    emit([
        "posted": count, "delivered": delivered, "spooled": spooled, "failed": failed, "spoolFull": spoolFull,
        "dropped": center.statistics.dropped, "notPosted": notPosted,
    ])
    // --stay: lives on until killed, as an app that posted does (its leases, say, stay a live poster's).
    if flag("stay") { while true { sleep(1000) } }
    exit(0)
case "listen":
    let limit = Int(option("count") ?? "0") ?? 0
    // The value classes are always accepted; --allow-custom adds the class of this process's own.
    let classes: [AnyClass] = flag("allow-custom") ? [TestPoint.self] : []
    let seen = Mutex(0)
    let observer: @Sendable (Notification) -> Void = { note in
        var line: [String: Any] = ["name": note.name.rawValue, "object": (note.object as? String) ?? NSNull()]
        if let info = note.userInfo {
            line["keys"] = info.keys.map { "\($0.base)" }.sorted()
            line["i"] = info["i"] as? Int ?? -1
            line["pid"] = info["pid"] as? Int ?? -1
            if let blob = info["blob"] as? Data { line["blobBytes"] = blob.count; line["blobSum"] = blob.reduce(0) { $0 &+ Int($1) } }
            if let point = info["point"] as? TestPoint { line["point"] = "\(point.x),\(point.y)" }
            // The value kinds beyond property lists, as text.
            if info["null"] is NSNull { line["null"] = true }
            if let url = info["url"] as? URL { line["url"] = url.absoluteString }
            if let uuid = info["uuid"] as? UUID { line["uuid"] = uuid.uuidString }
            if let set = info["set"] as? Set<Int> { line["set"] = set.sorted() }
        } else {
            line["userInfo"] = NSNull()
        }
        emit(line)
        if limit > 0, seen.withLock({ $0 += 1; return $0 }) >= limit { exit(0) }
    }
    center.addObserver(forName: name, object: object, allowedClasses: classes, queue: nil, using: observer)
    // --also N observes a second name the same way.
    if let also = option("also") {
        center.addObserver(forName: Notification.Name(also), object: nil, allowedClasses: classes, queue: nil, using: observer)
    }
    emit(["ready": Int(getpid())])
    // --exhaust-descriptors: once ready, takes every descriptor the process may still open (its soft limit lowered
    // to 256 first, so that this is quick) and prints how many; SIGUSR1 gives them back and prints that. The
    // signal only sets a flag: a dispatch source would need a descriptor to deliver it.
    if flag("exhaust-descriptors") {
        _ = Release.asked.load(ordering: .relaxed)
        signal(SIGUSR1) { _ in Release.asked.store(true, ordering: .relaxed) }
        // A process started from a thread that blocks signals (a dispatch worker's) starts with them blocked.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, SIGUSR1)
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
        let held = exhaustDescriptors()
        // The errno of the failure that ended it: EMFILE when the process is out of descriptors.
        emit(["exhausted": held.count, "errno": Int(errno)])
        while !Release.asked.load(ordering: .relaxed) { usleep(20_000) }
        for fd in held { close(fd) }
        emit(["released": held.count])
    }
    while true { sleep(1000) }
case "listen-queued":
    // Observes --name on an OperationQueue that stays suspended until SIGUSR1: a slow observer at its slowest.
    // Prints its resident memory when ready; on SIGUSR1, the bytes of shared memory files it has mapped, then
    // resumes the queue; after --count notifications, whether they came in order and its peak resident memory.
    let limit = Int(option("count") ?? "1") ?? 1
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    queue.isSuspended = true
    let state = Mutex((received: 0, next: Int(option("start") ?? "0") ?? 0, inOrder: true, blobBytes: 0))
    center.addObserver(forName: name, object: object, queue: queue) { note in
        let i = note.userInfo?["i"] as? Int ?? -1
        let blob = (note.userInfo?["blob"] as? Data)?.count ?? 0
        let done = state.withLock { state -> Bool in
            if i != state.next { state.inOrder = false }
            state.next = i + 1
            state.received += 1
            state.blobBytes += blob
            return state.received == limit
        }
        if done {
            let final = state.withLock { $0 }
            // Under AddressSanitizer freed memory stays resident a while (its quarantine): the peak says nothing.
            let sanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
            emit(["received": final.received, "inOrder": final.inOrder, "blobBytes": final.blobBytes,
                "peakResidentKiB": memoryStatus("VmHWM"), "sanitized": sanitized])
            exit(0)
        }
    }
    signal(SIGUSR1, SIG_IGN)
    let resume = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
    resume.setEventHandler {
        emit(["mappedSharedBytes": mappedSharedMemoryBytes(), "residentKiB": memoryStatus("VmRSS")])
        queue.isSuspended = false
    }
    resume.resume()
    emit(["ready": Int(getpid()), "residentKiB": memoryStatus("VmRSS")])
    // --report-received N: says once how many notifications the center has received when they are N or more
    // (looked at every 5 ms, for at most a minute).
    if let threshold = option("report-received").flatMap({ Int($0) }) {
        for _ in 0..<12_000 where center.statistics.received < threshold { usleep(5_000) }
        emit(["receivedAtLeast": center.statistics.received])
    }
    while true { sleep(1000) }
case "listen-slow":
    // Observes --name with --form sequence (notifications(named:)), messages (messages(for: TestBlob.self)) or
    // main (a block on the main actor, from this top-level code), and takes nothing until SIGUSR1: until then the
    // sequence is not iterated, or the main thread waits on a semaphore, so the main actor runs nothing. Prints
    // its resident memory when ready; after --count notifications, whether they came in order, their payload
    // bytes and its peak resident memory.
    let limit = Int(option("count") ?? "1") ?? 1
    let state = Mutex((received: 0, next: 0, inOrder: true, blobBytes: 0))
    let record: @Sendable (Int, Int) -> Void = { i, bytes in
        let done = state.withLock { state -> Bool in
            if i != state.next { state.inOrder = false }
            state.next = i + 1
            state.received += 1
            state.blobBytes += bytes
            return state.received == limit
        }
        if done {
            let final = state.withLock { $0 }
            let sanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
            emit(["received": final.received, "inOrder": final.inOrder, "blobBytes": final.blobBytes,
                "peakResidentKiB": memoryStatus("VmHWM"), "sanitized": sanitized])
            exit(0)
        }
    }
    /// The number and payload bytes of a notification of any shape.
    let measure: @Sendable (Notification) -> (Int, Int) = { note in
        let info = note.userInfo
        let nested = (info?["d"] as? [Data])?.reduce(0) { $0 + $1.count }
        return (info?["i"] as? Int ?? -1, (info?["blob"] as? Data)?.count ?? nested ?? 0)
    }
    let released = DispatchSemaphore(value: 0)
    signal(SIGUSR1, SIG_IGN)
    let resume = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
    resume.setEventHandler { @Sendable in released.signal() }
    resume.resume()
    var token: (any NSObjectProtocol)? = nil
    switch option("form") {
    case "sequence":
        let notes = center.notifications(named: name)
        Task.detached {
            await Task.detached { waitFor(released) }.value
            for await note in notes {
                let (i, bytes) = measure(note)
                record(i, bytes)
            }
        }
    case "messages":
        let messages = center.messages(for: TestBlob.self)
        Task.detached {
            await Task.detached { waitFor(released) }.value
            for await message in messages { record(message.i, message.blob.count) }
        }
    default:
        if option("shape") == "typed" {
            token = center.addObserver(for: TestBlob.self) { message in record(message.i, message.blob.count) }
        } else {
            token = center.addObserver(forName: name, object: nil) { note in
                let (i, bytes) = measure(note)
                record(i, bytes)
            }
        }
    }
    emit(["ready": Int(getpid()), "residentKiB": memoryStatus("VmRSS"), "observing": token != nil])
    if option("form") == "main" { released.wait() }
    dispatchMain()
case "remove-waiting":
    // Observes --name on the main actor, which never runs (the main thread sleeps), and --also on the receive
    // thread. On SIGUSR1 removes the main-actor observer, keeping its token; prints each --also notification.
    guard let name, let also = option("also") else { exit(2) }
    let token = center.addObserver(forName: name, object: nil) { _ in emit(["mainActor": true]) }
    let kept = Mutex<(any NSObjectProtocol)?>(token)
    center.addObserver(forName: Notification.Name(also), object: nil, queue: nil) { note in
        emit(["also": note.userInfo?["i"] as? Int ?? -1])
    }
    signal(SIGUSR1, SIG_IGN)
    let remove = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
    // Not on the main actor, which never runs.
    let observed = center
    remove.setEventHandler { @Sendable in
        if let token = kept.withLock({ $0 }) { observed.removeObserver(token) }
        emit(["removed": true])
    }
    remove.resume()
    emit(["ready": Int(getpid())])
    while true { sleep(1000) }
case "main-sleeps":
    // Observes --name from top-level code without a queue (on the main actor), then sleeps: nothing runs the
    // main queue, and Wormhole should say so.
    // With --also, a second main-actor observer of that name, and the first one is removed on the receive thread
    // as its first notification arrives: what then waits for the main actor is the second's.
    nonisolated(unsafe) let first = center.addObserver(forName: name, object: nil) { _ in emit(["ran": true]) }
    if let also = option("also") {
        center.addObserver(forName: Notification.Name(also), object: nil) { _ in emit(["ran": true]) }
        center.addObserver(forName: name, object: nil, queue: nil) { _ in center.removeObserver(first) }
    }
    emit(["ready": Int(getpid())])
    while true { sleep(1000) }
case "value-add":
    // Adds one to the group value --name, --count times, printing each; with --stop-at K, stops itself (SIGSTOP)
    // inside the closure of its K-th update. With --expect N, then waits (100 s at most) until the value is N
    // and prints the last value it saw. (Generous: a loaded machine runs 250 updates slowly.)
    guard let name else { exit(2) }
    let value = GroupValue(name.rawValue, default: 0, in: center)
    let count = Int(option("count") ?? "1") ?? 1
    let stopAt = Int(option("stop-at") ?? "-1") ?? -1
    for i in 0..<count {
        var stopped = false
        try value.update { number in
            if i == stopAt && !stopped {
                stopped = true
                raise(SIGSTOP)
            }
            number += 1
        }
        emit(["added": i + 1])
    }
    emit(["done": count])
    if let expected = option("expect").flatMap(Int.init) {
        let reached = DispatchSemaphore(value: 0)
        let last = Mutex(0)
        let watcher = Task.detached {
            for await current in value.values {
                last.withLock { $0 = current }
                if current == expected { reached.signal() }
            }
        }
        _ = reached.wait(timeout: .now() + 100)
        watcher.cancel()
        emit(["final": last.withLock { $0 }, "read": value.value])
    }
    exit(0)
case "listen-forms":
    // Adds an observer of every form, one after another as start-up code does, to the mailbox identifier
    // `forms` (its notification name, also FormsMessage's): a block on an OperationQueue, one on the
    // receive thread, one on the main actor, a notifications sequence, typed messages on the main actor and as a
    // sequence, and the mailbox's listeners on the receive thread and on the main actor, with --between
    // milliseconds of other start-up work between two of them (none by default). With --deliver-now it
    // then asks for the spool at once. When a form receives number --until, it prints every number it received.
    // Once every form has, it adds one more observer on the receive thread, prints "late", and prints each number
    // that one receives.
    let identifier = "forms"
    let until = Int(option("until") ?? "0") ?? 0
    let forms = ["operation-queue", "receive-thread", "main-actor", "sequence", "typed-actor", "typed-sequence",
        "mailbox-receive-thread", "mailbox-main-actor"]
    let received = Mutex<[String: [Int]]>([:])
    let done = Mutex(Set<String>())
    let formsName = WormholeMailbox.notificationName(forIdentifier: identifier)
    @Sendable func record(_ form: String, _ number: Int?) {
        let number = number ?? -1
        let numbers = received.withLock { received in
            received[form, default: []].append(number)
            return received[form] ?? []
        }
        guard number == until else { return }
        emit(["form": form, "numbers": numbers])
        guard done.withLock({ $0.insert(form); return $0.count == forms.count }) else { return }
        center.addObserver(forName: formsName, object: nil, queue: nil) { note in
            emit(["late": note.userInfo?["i"] as? Int ?? -1])
        }
        emit(["late": "ready"])
    }
    let between = UInt32(option("between") ?? "0") ?? 0
    func work() { if between > 0 { usleep(between * 1000) } }
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    center.addObserver(forName: formsName, object: nil, queue: queue) { record("operation-queue", $0.userInfo?["i"] as? Int) }
    work()
    center.addObserver(forName: formsName, object: nil, queue: nil) { record("receive-thread", $0.userInfo?["i"] as? Int) }
    work()
    center.addObserver(forName: formsName, object: nil) { record("main-actor", $0.userInfo?["i"] as? Int) }
    work()
    let sequence = center.notifications(named: formsName)
    work()
    center.addObserver(for: FormsMessage.self) { record("typed-actor", $0.i) }
    work()
    let messages = center.messages(for: FormsMessage.self)
    work()
    let mailbox = WormholeMailbox(center)
    mailbox.listenForMessage(withIdentifier: identifier, queue: nil) { record("mailbox-receive-thread", $0 as? Int) }
    work()
    mailbox.listenForMessage(withIdentifier: identifier) { record("mailbox-main-actor", $0 as? Int) }
    if flag("deliver-now") { center.deliverSpooledNotifications() }
    Task.detached {
        for await note in sequence { record("sequence", note.userInfo?["i"] as? Int) }
    }
    Task.detached {
        for await message in messages { record("typed-sequence", message.i) }
    }
    emit(["ready": Int(getpid())])
    // The main actor's observers run when the main queue does.
    dispatchMain()
case "main-thread-exits":
    // Its main thread exits, as a program's may (pthread_exit), while another thread lives on: so does the process.
    let keeper = Thread { while true { sleep(1000) } }
    keeper.start()
    emit(["ready": Int(getpid())])
    pthread_exit(nil)
case "watch-retained":
    // Prints the current retained value of --name at once, then every change.
    guard let name else { exit(2) }
    center.addObserver(forName: name, object: nil, includingRetained: true, queue: nil) { note in
        emit(["value": note.userInfo?["value"] ?? NSNull()])
    }
    emit(["ready": Int(getpid())])
    while true { sleep(1000) }
default:
    exit(2)
}

/// Takes every descriptor this process may still open, its soft limit lowered to 256 first so that this is quick;
/// returns them. `errno` then tells why the last one failed: EMFILE when the process is out of descriptors.
func exhaustDescriptors() -> [Int32] {
    #if canImport(Glibc)
    let openFiles = Int32(RLIMIT_NOFILE.rawValue)
    #else
    let openFiles = RLIMIT_NOFILE
    #endif
    var limit = rlimit()
    if getrlimit(openFiles, &limit) == 0 {
        limit.rlim_cur = min(limit.rlim_cur, 256)
        _ = setrlimit(openFiles, &limit)
    }
    var held: [Int32] = []
    while case let fd = dup(2), fd >= 0 { held.append(fd) }
    return held
}

/// Set by SIGUSR1, for `listen --exhaust-descriptors`.
enum Release {
    static let asked = Atomic<Bool>(false)
}

/// The typed message `listen-forms` observes: the number of a notification `post --message` sends, under the
/// mailbox identifier `forms`.
struct FormsMessage: GroupMessage {
    static let name = WormholeMailbox.notificationName(forIdentifier: "forms")
    var i: Int
}

/// Waits for `semaphore`: a synchronous call, which an asynchronous context may make where it may not call `wait`.
@Sendable func waitFor(_ semaphore: DispatchSemaphore) {
    semaphore.wait()
}
