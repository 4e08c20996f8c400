// Receiving several messages with one system call. On Linux one `recvmmsg(2)` fills every slot, with the
// descriptors each message carried (``MessageVector``, in Linux/Linux.swift); elsewhere `recvmsg(2)` fills one at
// a time, with a control buffer too: xnu installs the descriptors a sender passed even for a plain `recv(2)`, and
// only a control buffer hands them over to be closed.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Buffers for up to ``capacity`` messages of up to ``messageCapacity`` bytes each, reused for every receive.
/// Used by one thread at a time (its listener's receive thread), and its state is never lent out across a call
/// that could reach it again, so its stored properties go without run-time exclusivity checks.
package final class MessageBatch {
    /// One received message, valid until the next ``receive(_:)``.
    package struct Message {
        /// What the slot holds: the whole message, unless it was cut.
        package var bytes: UnsafeRawBufferPointer
        /// The message's real length: larger than ``bytes`` when it was cut.
        package var length: Int
        /// Whether the control data (the descriptors it carried) was cut: some were not received.
        package var controlTruncated: Bool
        /// The descriptors it carried, now this process's: the caller must close every one.
        package var descriptors: [Descriptor]
    }

    package let capacity: Int
    package let messageCapacity: Int
    private let buffers: UnsafeMutableRawBufferPointer
    /// Each slot's message length and control data (its length, and whether it was cut: `MSG_CTRUNC`): memory of
    /// their own, which a write does not check for other owners as an array's does.
    private let lengths: UnsafeMutableBufferPointer<Int>
    private let controlLengths: UnsafeMutableBufferPointer<Int>
    private let controlsCut: UnsafeMutableBufferPointer<Bool>
    @exclusivity(unchecked) private(set) var count = 0
    private let controlSpace = DescriptorPassing.controlSpace(descriptors: 1)
    private let controls: UnsafeMutableRawBufferPointer
    /// Where the platform receives several messages with one call; nil where it takes one at a time.
    private let vector: MessageVector?

    /// Untouched pages cost nothing: a slot's pages are mapped in as messages reach them.
    package init(capacity: Int, messageCapacity: Int) {
        vector = InjectedFault.takesApplePaths ? nil : MessageVector(capacity: capacity)
        self.capacity = vector?.capacity ?? 1
        self.messageCapacity = messageCapacity
        buffers = .allocate(byteCount: self.capacity * messageCapacity, alignment: 16)
        lengths = .allocate(capacity: self.capacity)
        lengths.initialize(repeating: 0)
        controlLengths = .allocate(capacity: self.capacity)
        controlLengths.initialize(repeating: 0)
        controlsCut = .allocate(capacity: self.capacity)
        controlsCut.initialize(repeating: false)
        controls = .allocate(byteCount: self.capacity * controlSpace, alignment: MemoryLayout<Int>.alignment)
        vector?.prepare(buffer: slot, control: control)
    }

    deinit {
        buffers.deallocate()
        controls.deallocate()
        lengths.deallocate()
        controlLengths.deallocate()
        controlsCut.deallocate()
    }

    private func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: buffers[(index * messageCapacity)..<((index + 1) * messageCapacity)])
    }

    /// Where slot `index`'s control data goes.
    private func control(_ index: Int) -> UnsafeMutableRawPointer? {
        controls.baseAddress.map { $0 + index * controlSpace }
    }

    /// Receives what is waiting on `fd`, up to `limit` messages (at most ``capacity``), without blocking, or with
    /// `waiting` after waiting for the first as ``UnixSocket/receiveMessage(_:_:waiting:)`` does.
    /// Returns how many (a message of length 0 is a sequenced-packet peer that closed, or reset, its
    /// connection), or nil when nothing is waiting.
    package func receive(_ socket: Descriptor, upTo limit: Int, waiting: Bool = false) throws(WormholeError) -> Int? {
        count = 0
        let fd = socket.rawValue
        guard let vector else { return try receiveOne(fd, waiting: waiting) }
        let received = try vector.receive(
            fd, slots: min(max(limit, 1), capacity), controlLength: DescriptorPassing.controlLength(descriptors: 1), waiting: waiting)
        guard let received else { return nil }
        for index in 0..<received {
            (lengths[index], controlLengths[index], controlsCut[index]) = vector.received(index)
        }
        count = received
        return received
    }

    /// The message in slot `index` (below the last ``receive(_:upTo:)``'s count). Takes its descriptors: call it
    /// once per message.
    package func message(_ index: Int) -> Message {
        let length = lengths[index]
        let bytes = UnsafeRawBufferPointer(rebasing: slot(index)[0..<min(length, messageCapacity)])
        let control = UnsafeRawBufferPointer(start: control(index), count: controlSpace)
        return Message(
            bytes: bytes, length: length, controlTruncated: controlsCut[index],
            descriptors: DescriptorPassing.descriptors(in: control, length: controlLengths[index]))
    }

    /// One `recvmsg(2)` into the first slot, with room for the one descriptor a message may carry.
    private func receiveOne(_ fd: CInt, waiting: Bool) throws(WormholeError) -> Int? {
        let buffer = slot(0)
        var piece = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var header = msghdr()
        header.msg_control = controls.baseAddress
        header.msg_controllen = .init(DescriptorPassing.controlLength(descriptors: 1))
        let length: Int? = try withUnsafeMutablePointer(to: &piece) { (piece) throws(WormholeError) -> Int? in
            header.msg_iov = piece
            header.msg_iovlen = 1
            return try UnixSocket.receiveMessage(fd, &header, waiting: waiting)
        }
        guard let length else { return nil }
        lengths[0] = length
        // A message of no bytes may still carry descriptors: they are taken, to be closed.
        controlLengths[0] = Int(header.msg_controllen)
        controlsCut[0] = header.msg_flags & CInt(MSG_CTRUNC) != 0
        count = 1
        return 1
    }
}
