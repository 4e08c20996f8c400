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

    /// What the archive decoded to for `allowed`, if it was decoded for those classes: nil (as the inner value)
    /// when it was refused.
    func userInfo(for allowed: AllowedClasses) -> [AnyHashable: Any]?? {
        guard let first else { return nil }
        // Equal keys of one AllowedClasses share their storage: compared without reading the characters.
        if first.key == allowed.key { return .some(first.userInfo) }
        guard let other = others.first(where: { $0.key == allowed.key }) else { return nil }
        return .some(other.userInfo)
    }

    /// Records what the archive decoded to for `allowed`.
    mutating func record(_ userInfo: [AnyHashable: Any]?, for allowed: AllowedClasses) {
        if first == nil {
            first = (allowed.key, userInfo)
        } else {
            others.append((allowed.key, userInfo))
        }
    }
}
