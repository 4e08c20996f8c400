// libdbus, loaded at run time with dlopen: every machine with dbus-daemon has libdbus-1.so.3, but few have its
// headers, and the root package must build with the toolchain alone. Only the calls the benchmark makes.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private bus connection that sends and receives signals whose body is `(u total, t stamp, ay bytes)`.
final class DBusConnection {
    /// What one received signal carried.
    struct Signal {
        var member: String
        var total: UInt32
        var stamp: UInt64
        var bytes: [UInt8]
    }

    private typealias Pointer = UnsafeMutableRawPointer
    private struct Functions {
        let errorInit: @convention(c) (Pointer) -> Void
        let errorIsSet: @convention(c) (Pointer) -> UInt32
        let openPrivate: @convention(c) (UnsafePointer<CChar>, Pointer) -> Pointer?
        let register: @convention(c) (Pointer, Pointer) -> UInt32
        let addMatch: @convention(c) (Pointer, UnsafePointer<CChar>, Pointer) -> Void
        let flush: @convention(c) (Pointer) -> Void
        let readWrite: @convention(c) (Pointer, Int32) -> UInt32
        let popMessage: @convention(c) (Pointer) -> Pointer?
        let newSignal: @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafePointer<CChar>) -> Pointer?
        let send: @convention(c) (Pointer, Pointer, UnsafeMutablePointer<UInt32>?) -> UInt32
        let unref: @convention(c) (Pointer) -> Void
        let getMember: @convention(c) (Pointer) -> UnsafePointer<CChar>?
        let hasSignature: @convention(c) (Pointer, UnsafePointer<CChar>) -> UInt32
        let initAppend: @convention(c) (Pointer, Pointer) -> Void
        let appendBasic: @convention(c) (Pointer, Int32, UnsafeRawPointer) -> UInt32
        let openContainer: @convention(c) (Pointer, Int32, UnsafePointer<CChar>?, Pointer) -> UInt32
        let appendFixedArray: @convention(c) (Pointer, Int32, UnsafeRawPointer, Int32) -> UInt32
        let closeContainer: @convention(c) (Pointer, Pointer) -> UInt32
        let iterInit: @convention(c) (Pointer, Pointer) -> UInt32
        let iterNext: @convention(c) (Pointer) -> UInt32
        let getBasic: @convention(c) (Pointer, Pointer) -> Void
        let recurse: @convention(c) (Pointer, Pointer) -> Void
        let getFixedArray: @convention(c) (Pointer, Pointer, UnsafeMutablePointer<Int32>) -> Void
        let close: @convention(c) (Pointer) -> Void
    }

    private static let typeByte: Int32 = 121  // 'y'
    private static let typeUInt32: Int32 = 117  // 'u'
    private static let typeUInt64: Int32 = 116  // 't'
    private static let typeArray: Int32 = 97  // 'a'
    static let interface = "org.wormhole.Bench"
    private static let path = "/org/wormhole/Bench"

    /// The library's calls, or nil when libdbus-1.so.3 is not installed.
    private static let functions: Functions? = {
        guard let library = dlopen("libdbus-1.so.3", RTLD_NOW) else { return nil }
        func symbol<T>(_ name: String, _ type: T.Type) -> T? {
            dlsym(library, name).map { unsafeBitCast($0, to: type) }
        }
        guard let errorInit = symbol("dbus_error_init", (@convention(c) (Pointer) -> Void).self),
            let errorIsSet = symbol("dbus_error_is_set", (@convention(c) (Pointer) -> UInt32).self),
            let openPrivate = symbol("dbus_connection_open_private", (@convention(c) (UnsafePointer<CChar>, Pointer) -> Pointer?).self),
            let register = symbol("dbus_bus_register", (@convention(c) (Pointer, Pointer) -> UInt32).self),
            let addMatch = symbol("dbus_bus_add_match", (@convention(c) (Pointer, UnsafePointer<CChar>, Pointer) -> Void).self),
            let flush = symbol("dbus_connection_flush", (@convention(c) (Pointer) -> Void).self),
            let readWrite = symbol("dbus_connection_read_write", (@convention(c) (Pointer, Int32) -> UInt32).self),
            let popMessage = symbol("dbus_connection_pop_message", (@convention(c) (Pointer) -> Pointer?).self),
            let newSignal = symbol("dbus_message_new_signal",
                (@convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafePointer<CChar>) -> Pointer?).self),
            let send = symbol("dbus_connection_send", (@convention(c) (Pointer, Pointer, UnsafeMutablePointer<UInt32>?) -> UInt32).self),
            let unref = symbol("dbus_message_unref", (@convention(c) (Pointer) -> Void).self),
            let getMember = symbol("dbus_message_get_member", (@convention(c) (Pointer) -> UnsafePointer<CChar>?).self),
            let hasSignature = symbol("dbus_message_has_signature", (@convention(c) (Pointer, UnsafePointer<CChar>) -> UInt32).self),
            let initAppend = symbol("dbus_message_iter_init_append", (@convention(c) (Pointer, Pointer) -> Void).self),
            let appendBasic = symbol("dbus_message_iter_append_basic", (@convention(c) (Pointer, Int32, UnsafeRawPointer) -> UInt32).self),
            let openContainer = symbol("dbus_message_iter_open_container",
                (@convention(c) (Pointer, Int32, UnsafePointer<CChar>?, Pointer) -> UInt32).self),
            let appendFixedArray = symbol("dbus_message_iter_append_fixed_array",
                (@convention(c) (Pointer, Int32, UnsafeRawPointer, Int32) -> UInt32).self),
            let closeContainer = symbol("dbus_message_iter_close_container", (@convention(c) (Pointer, Pointer) -> UInt32).self),
            let iterInit = symbol("dbus_message_iter_init", (@convention(c) (Pointer, Pointer) -> UInt32).self),
            let iterNext = symbol("dbus_message_iter_next", (@convention(c) (Pointer) -> UInt32).self),
            let getBasic = symbol("dbus_message_iter_get_basic", (@convention(c) (Pointer, Pointer) -> Void).self),
            let recurse = symbol("dbus_message_iter_recurse", (@convention(c) (Pointer, Pointer) -> Void).self),
            let getFixedArray = symbol("dbus_message_iter_get_fixed_array",
                (@convention(c) (Pointer, Pointer, UnsafeMutablePointer<Int32>) -> Void).self),
            let close = symbol("dbus_connection_close", (@convention(c) (Pointer) -> Void).self)
        else { return nil }
        return Functions(
            errorInit: errorInit, errorIsSet: errorIsSet, openPrivate: openPrivate, register: register, addMatch: addMatch,
            flush: flush, readWrite: readWrite, popMessage: popMessage, newSignal: newSignal, send: send, unref: unref,
            getMember: getMember, hasSignature: hasSignature, initAppend: initAppend, appendBasic: appendBasic, openContainer: openContainer,
            appendFixedArray: appendFixedArray, closeContainer: closeContainer, iterInit: iterInit, iterNext: iterNext,
            getBasic: getBasic, recurse: recurse, getFixedArray: getFixedArray, close: close)
    }()

    static var isAvailable: Bool { functions != nil }

    private let calls: Functions
    private let connection: Pointer
    /// Scratch memory for DBusError and two DBusMessageIter, each smaller than 128 bytes.
    private let error = Pointer.allocate(byteCount: 128, alignment: 16)
    private let iterator = Pointer.allocate(byteCount: 128, alignment: 16)
    private let inner = Pointer.allocate(byteCount: 128, alignment: 16)

    /// Connects to the bus at `address` and subscribes to the signals named `members`.
    init?(address: String, members: [String]) {
        guard let calls = Self.functions else { return nil }
        self.calls = calls
        calls.errorInit(error)
        guard let connection = calls.openPrivate(address, error), calls.register(connection, error) != 0 else {
            return nil
        }
        self.connection = connection
        for member in members {
            calls.addMatch(connection, "type='signal',interface='\(Self.interface)',member='\(member)'", error)
        }
        calls.flush(connection)
        if calls.errorIsSet(error) != 0 { return nil }
    }

    deinit {
        calls.close(connection)
        error.deallocate()
        iterator.deallocate()
        inner.deallocate()
    }

    /// Sends one signal and flushes it to the bus, as an application would.
    func emit(_ member: String, total: UInt32, stamp: UInt64, bytes: [UInt8]) {
        guard let message = calls.newSignal(Self.path, Self.interface, member) else { return }
        defer { calls.unref(message) }
        calls.initAppend(message, iterator)
        var total = total, stamp = stamp
        _ = calls.appendBasic(iterator, Self.typeUInt32, &total)
        _ = calls.appendBasic(iterator, Self.typeUInt64, &stamp)
        _ = calls.openContainer(iterator, Self.typeArray, "y", inner)
        bytes.withUnsafeBufferPointer { buffer in
            var base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)
            _ = calls.appendFixedArray(inner, Self.typeByte, &base, Int32(buffer.count))
        }
        _ = calls.closeContainer(iterator, inner)
        _ = calls.send(connection, message, nil)
        calls.flush(connection)
    }

    /// The next signal, waiting up to `milliseconds`; nil when none came or the bus went away.
    func next(seconds: Double) -> Signal? {
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        while true {
            if let message = calls.popMessage(connection) {
                defer { calls.unref(message) }
                if let signal = decode(message) { return signal }
                continue
            }
            let now = monotonicNanoseconds()
            guard now < deadline, calls.readWrite(connection, Int32(min(1000, (deadline - now) / 1_000_000 + 1))) != 0 else {
                return nil
            }
        }
    }

    /// The signal, if it is one of ours; the bus's own (NameAcquired) have another body.
    private func decode(_ message: Pointer) -> Signal? {
        guard calls.hasSignature(message, "utay") != 0, let member = calls.getMember(message).map({ String(cString: $0) }), calls.iterInit(message, iterator) != 0 else {
            return nil
        }
        var total: UInt32 = 0, stamp: UInt64 = 0
        calls.getBasic(iterator, &total)
        _ = calls.iterNext(iterator)
        calls.getBasic(iterator, &stamp)
        _ = calls.iterNext(iterator)
        calls.recurse(iterator, inner)
        var base: UnsafeRawPointer?
        var count: Int32 = 0
        calls.getFixedArray(inner, &base, &count)
        let bytes = base.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: Int(count))) } ?? []
        return Signal(member: member, total: total, stamp: stamp, bytes: bytes)
    }
}
