import Foundation
import Wormhole

#if canImport(SwiftUI)
import SwiftUI
#endif

/// A group value as a view's property, the way `@AppStorage` declares a `UserDefaults` one: every process of the
/// group reads and sets it, and a view that shows it is redrawn when any of them changes it.
///
/// ```swift
/// struct UnreadBadge: View {
///     @GroupStorage("unread", group: "group.com.example.app") var unread = 0
///
///     var body: some View {
///         Stepper("Unread: \(unread)", value: $unread)
///     }
/// }
/// ```
///
/// The value is a `GroupValue` of the group's container, stored as one stores it, so a process that uses
/// `GroupValue("unread", default: 0, in: center)` shares it. The wrapper holds only what names the value: SwiftUI
/// makes views often, and every wrapper of one value, in every view, shares one center per container and one
/// watching `GroupValue` per container, name and type, made on first use and kept for the process's life. Changes
/// other processes make are applied on the main queue, where SwiftUI reads (on the receive thread where SwiftUI
/// does not exist); a change this process makes is seen at once.
///
/// Its initializers cannot throw, as a property initializer cannot. Not errors, so never thrown: a container that
/// cannot be opened shows the default and writes nothing (logged once, counted in ``GroupStorageStatistics``); a
/// stored value of another type reads as the default, and a value that cannot be written leaves it as it was
/// (logged and counted in the center's statistics, as `GroupValue`'s setter does). Each wrapper applies its own
/// default while the value is unset: setting nil, for an optional value, unsets it.
///
/// A value of your own type is any `Codable` type; in an app target whose default isolation is the main actor (a
/// new Xcode 26 app), declare it `nonisolated struct Settings: Codable { … }`, since a conformance isolated to the
/// main actor cannot serve a value that other threads decode.
@propertyWrapper
public struct GroupStorage<Value: Codable & Sendable>: Sendable {
    private let name: String
    private let container: SharedGroupValues.Container
    private let defaultValue: Value
    private let values: SharedGroupValues

    /// The value `name` of an App Group's default container (as `GroupNotificationCenter(groupIdentifier:)` opens it).
    /// - Parameters:
    ///   - wrappedValue: What the value is while no process has set it.
    ///   - name: The value's name, shared by every process that uses it.
    ///   - group: The App Group's identifier, e.g. `group.com.example.app`.
    public init(wrappedValue: Value, _ name: String, group: String) {
        self.init(name, in: .group(group), default: wrappedValue, values: .shared)
    }

    /// The value `name` of the container at `container`: a folder the processes share, on a platform without App
    /// Groups or in a test.
    /// - Parameters:
    ///   - wrappedValue: What the value is while no process has set it.
    ///   - name: The value's name, shared by every process that uses it.
    ///   - container: The shared folder, a file URL; created (mode 0700) if missing.
    public init(wrappedValue: Value, _ name: String, container: URL) {
        self.init(name, in: .folder(container.standardizedFileURL.path), default: wrappedValue, values: .shared)
    }

    /// An optional value of an App Group's default container, nil while no process has set it.
    /// - Parameters:
    ///   - name: The value's name, shared by every process that uses it.
    ///   - group: The App Group's identifier.
    public init<Wrapped>(_ name: String, group: String) where Value == Wrapped? {
        self.init(wrappedValue: nil, name, group: group)
    }

    /// An optional value of the container at `container`, nil while no process has set it.
    /// - Parameters:
    ///   - name: The value's name, shared by every process that uses it.
    ///   - container: The shared folder, a file URL.
    public init<Wrapped>(_ name: String, container: URL) where Value == Wrapped? {
        self.init(wrappedValue: nil, name, container: container)
    }

    package init(_ name: String, in container: SharedGroupValues.Container, default defaultValue: Value, values: SharedGroupValues) {
        self.name = name
        self.container = container
        self.defaultValue = defaultValue
        self.values = values
    }

    /// The current value, read from the container: the default while unset. Reading it in a view's body (or in
    /// `withObservationTracking`) redraws the view (calls `onChange`) when any process changes it.
    ///
    /// Setting it never throws: see the type's discussion for what is logged and counted instead.
    public var wrappedValue: Value {
        get {
            guard let value = values.value(name, of: Value.self, in: container) else {
                SharedGroupValues.countUnavailable(write: false)
                return defaultValue
            }
            return value.value ?? defaultValue
        }
        nonmutating set {
            guard let value = values.value(name, of: Value.self, in: container) else {
                SharedGroupValues.countUnavailable(write: true)
                return
            }
            value.value = newValue
        }
    }

    #if canImport(SwiftUI)
    /// A binding to the value, for controls that change it (`Toggle("Muted", isOn: $muted)`).
    public var projectedValue: Binding<Value> {
        Binding(get: { wrappedValue }, set: { wrappedValue = $0 })
    }
    #endif
}

#if canImport(SwiftUI)
extension GroupStorage: DynamicProperty {}
#endif
