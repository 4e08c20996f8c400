import Foundation

/// The userInfos decoded from one archive, one per set of allowed classes, so that observers with the same
/// classes, and a run of frames that carry the same compact archive, share one decoding.
///
/// The first set of classes is kept in place and the others in an array, compared by their key: a batch for a
/// single observer, the common case, allocates and hashes nothing here.
struct DecodedUserInfos {
    private var archive: ArchiveBytes?
    private var first: (key: String, userInfo: [AnyHashable: Any]?)?
    private var others: [(key: String, userInfo: [AnyHashable: Any]?)] = []

    /// Starts over for `archive` unless it is known to hold the bytes of the one decoded before, a compact archive:
    /// it holds only values, so frames may share what it decodes to.
    mutating func use(_ archive: ArchiveBytes) {
        if let decoded = self.archive, decoded.isKnownEqual(to: archive), archive.isCompact { return }
        self.archive = archive
        first = nil
        others.removeAll(keepingCapacity: true)
    }

    /// What the archive decoded to for the allowed classes whose ``AllowedClasses/key`` is `key`, if it was
    /// decoded for those: nil (as the inner value) when it was refused.
    func userInfo(forClasses key: String) -> [AnyHashable: Any]?? {
        guard let first else { return nil }
        // Equal keys of one AllowedClasses share their storage: compared without reading the characters.
        if first.key == key { return .some(first.userInfo) }
        guard let other = others.first(where: { $0.key == key }) else { return nil }
        return .some(other.userInfo)
    }

    /// Records what the archive decoded to for the allowed classes whose key is `key`.
    mutating func record(_ userInfo: [AnyHashable: Any]?, forClasses key: String) {
        if first == nil {
            first = (key, userInfo)
        } else {
            others.append((key, userInfo))
        }
    }
}
