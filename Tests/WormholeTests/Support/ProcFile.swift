import Foundation

/// The whole text of a file under `/proc`. `String(contentsOfFile:)` reads only the first page of one, as its size
/// says 0: a table such as `/proc/net/unix` or `/proc/locks` is longer than that while other tests run.
func procFile(_ path: String) throws -> String {
    guard let file = FileHandle(forReadingAtPath: path) else { throw CocoaError(.fileReadNoSuchFile) }
    defer { try? file.close() }
    return String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
}
