/// What tells a listener's receive thread at once that something it keeps changed, so that an idle listener sleeps
/// until then instead of looking on a clock (``ChangeWatch``, the system's notices of changed files):
/// - its socket file's name in `listeners/` made, removed, replaced or renamed (a cleaner of temporary files, a
///   poster that found it dead): it keeps house, and binds the socket again;
/// - its registry entry's name in `registry/` likewise (another process pruned it, or found it damaged): it keeps
///   house, and mends the entry;
/// - its spool's bell rung (``ReceiveThread/Request/bell``): it looks at its spool, as a nudge has it do, which
///   matters when the nudge could not reach it; the bell removed, replaced or changed otherwise: it keeps house
///   too, which reads and watches the bell at its name anew (``renew()``). A bell that is missing is not made
///   again here: the next poster that rings it makes it, and the listener keeps house once a second until then.
///
/// Where the system names no file (Apple platforms' folder watches), any change in those folders counts as one of
/// the listener's own. Owned by the receive thread: made as its loop begins, renewed by each round of housekeeping,
/// cancelled as the loop ends. A part the system cannot watch (out of watches or descriptors, a folder removed)
/// leaves the watch not whole (``isWhole``): the listener then keeps house once a second, as it would with none.
struct ListenerWatch: ~Copyable {
    private let thread: ReceiveThread
    private let container: Container
    private let spool: SpoolFolder
    private let socketName: String
    private let entryName: String
    private var socketFolder: ChangeWatch?
    private var registryFolder: ChangeWatch?
    private var bell: ChangeWatch?
    /// The bell file that ``bell`` watches, as it was when the watch began.
    private var bellFile: FileIdentity?

    init(_ listener: Listener) {
        thread = listener.thread
        container = listener.container
        spool = listener.spool
        socketName = RegistryEntry.socketName(listener.id)
        entryName = FileName.hex(listener.id)
        socketFolder = Self.watch(container.listenersDescriptor, for: socketName, thread)
        registryFolder = Self.watch(container.registryDescriptor, for: entryName, thread)
        watchBell()
    }

    deinit {
        socketFolder?.cancel()
        registryFolder?.cancel()
        bell?.cancel()
    }

    /// Whether every change the listener keeps is told: each part is watched, and the bell watched is the one at
    /// its name.
    var isWhole: Bool {
        socketFolder?.isWatching == true && registryFolder?.isWatching == true && bell?.isWatching == true
    }

    /// After a round of housekeeping: watches again each part that is no longer watched; a bell that is not the
    /// file at its name any more (removed, or replaced by a poster that found it damaged) is read and watched at
    /// its name from now on, once there is one (posters ring the file at the name, and make it when missing).
    mutating func renew() {
        if socketFolder?.isWatching != true {
            socketFolder?.cancel()
            socketFolder = Self.watch(container.listenersDescriptor, for: socketName, thread)
        }
        if registryFolder?.isWatching != true {
            registryFolder?.cancel()
            registryFolder = Self.watch(container.registryDescriptor, for: entryName, thread)
        }
        let current = try? Sys.status(SpoolFolder.bellName, relativeTo: spool.descriptor, followLinks: false).identity
        guard bell?.isWatching != true || current == nil || current != bellFile else { return }
        bell?.cancel()
        bell = nil
        spool.bell.reopen()
        if current != nil { watchBell() }
    }

    /// Watches the bell at its name.
    private mutating func watchBell() {
        bellFile = try? Sys.status(SpoolFolder.bellName, relativeTo: spool.descriptor, followLinks: false).identity
        bell = try? ChangeWatch.file(SpoolFolder.bellName, in: spool.descriptor) { [thread] change in
            thread.ask(change.isWrite ? .bell : [.bell, .housekeeping])
        }
    }

    /// A watch of `folder` that asks `thread` to keep house when `name` changes there (or the system does not say
    /// which name changed); nil when the system cannot watch now.
    private static func watch(_ folder: Descriptor, for name: String, _ thread: ReceiveThread) -> ChangeWatch? {
        try? ChangeWatch.folder(folder) { change in
            if change.name == nil || change.name == name { thread.ask(.housekeeping) }
        }
    }
}
