import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport
@testable import WormholeTool

/// The tool's own ISO 8601 reader and printer, against a calendar counted day by day here.
@Suite("The tool's ISO 8601 dates", .throttled)
struct ISO8601Tests {
    /// Seconds from 2001-01-01T00:00:00Z, `Date`'s reference, to the start of the day, in the proleptic Gregorian
    /// calendar, counted naively: year lengths summed, then month lengths. Independent of ``ISO8601``.
    static func naiveSeconds(year: Int, month: Int, day: Int) -> Int64 {
        func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }
        var days = 0
        if year >= 2001 {
            for y in 2001..<year { days += isLeap(y) ? 366 : 365 }
        } else {
            for y in year..<2001 { days -= isLeap(y) ? 366 : 365 }
        }
        let lengths = [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        days += lengths.prefix(month - 1).reduce(0, +) + day - 1
        return Int64(days) * 86_400
    }

    @Test("valid inputs read as the instant Python's proleptic Gregorian datetime gives, and print back in UTC")
    func valid() throws {
        // (input, seconds since 2001 from Python's datetime, printed)
        let cases: [(String, Double, String)] = [
            ("1582-10-10T00:00:00Z", -13_198_032_000, "1582-10-10T00:00:00Z"),
            ("0001-01-01T00:00:00Z", -63_113_904_000, "0001-01-01T00:00:00Z"),
            ("0001-01-01", -63_113_904_000, "0001-01-01T00:00:00Z"),
            ("9999-12-31T23:59:59Z", 252_423_993_599, "9999-12-31T23:59:59Z"),
            ("2024-02-29T12:00:00Z", 730_900_800, "2024-02-29T12:00:00Z"),
            ("2024-02-29", 730_857_600, "2024-02-29T00:00:00Z"),
            ("1600-02-29T00:00:00Z", -12_649_305_600, "1600-02-29T00:00:00Z"),
            ("2000-02-29T23:59:59Z", -26_438_401, "2000-02-29T23:59:59Z"),
            ("1970-01-01T00:00:00Z", -978_307_200, "1970-01-01T00:00:00Z"),
            ("2024-02-29T23:59:59+05:30", 730_924_199, "2024-02-29T18:29:59Z"),
            ("2024-02-29T23:59:59+0530", 730_924_199, "2024-02-29T18:29:59Z"),
            ("2024-02-29T23:59:59\u{2212}05:30", 730_963_799, "2024-03-01T05:29:59Z"),
            ("1900-03-01T00:00:00-23:59", -3_182_112_060, "1900-03-01T23:59:00Z"),
            ("2001-01-01T00:00:00.250Z", 0.25, "2001-01-01T00:00:00.250Z"),
            ("2001-01-01T00:00:00,5Z", 0.5, "2001-01-01T00:00:00.500Z"),
            ("2001-01-01T00:00:00.000000Z", 0, "2001-01-01T00:00:00Z"),
            ("2000-12-31T23:59:59.75Z", -0.25, "2000-12-31T23:59:59.750Z"),
            ("2001-01-01T00:00:00.000000000000000000001Z", 1e-21, "2001-01-01T00:00:00.000000000000000000001Z"),
            ("2001-01-01T00:00:00.123456789Z", 0.123456789, "2001-01-01T00:00:00.123456789Z"),
            ("2001-01-01T00:00:00-00:00", 0, "2001-01-01T00:00:00Z"),
        ]
        for (input, seconds, printed) in cases {
            let date = try ISO8601.date(from: input)
            #expect(date.timeIntervalSinceReferenceDate == seconds, "\(input)")
            #expect(ISO8601.text(date) == printed, "\(input)")
            #expect(try ISO8601.date(from: printed) == date, "\(input)")
        }
        // Just before 2001: -1e-21 is below -0.0's neighbourhood, and its fraction has 21 nines.
        let before = try ISO8601.date(from: "2000-12-31T23:59:59." + String(repeating: "9", count: 21) + "Z")
        #expect(before.timeIntervalSinceReferenceDate == -1e-21)
        #expect(try ISO8601.date(from: try #require(ISO8601.text(before))) == before)
        // A fraction finer than a Date holds is kept to what it holds, and prints as what it holds.
        let fine = try ISO8601.date(from: "9999-12-31T23:59:59.123456789123Z")
        let shown = try #require(ISO8601.text(fine))
        #expect(shown.count < "9999-12-31T23:59:59.123456789123Z".count && shown.hasPrefix("9999-12-31T23:59:59.1234"), "\(shown)")
        #expect(try ISO8601.date(from: shown) == fine)
    }

    @Test("invalid inputs are refused with a message that says what is wrong")
    func invalid() {
        let cases: [(String, String)] = [
            ("2023-02-29T12:00:00Z", "February 2023 has 28 days, not 29"),
            ("2024-02-30T00:00:00Z", "February 2024 has 29 days, not 30"),
            ("1900-02-29", "February 1900 has 28 days"),
            ("2024-04-31", "April 2024 has 30 days"),
            ("2024-00-10", "month 00 does not exist"),
            ("2024-13-01", "month 13 does not exist"),
            ("2024-01-00", "day 00 does not exist"),
            ("0000-01-01", "no year 0000"),
            ("10000-01-01", "the year takes four digits"),
            ("24-01-01", "the year takes four digits"),
            ("2024-1-01", "the month takes two digits"),
            ("2024-01-01T24:00:00Z", "24:00:00 is not read"),
            ("2024-01-01T25:00:00Z", "hour 25 does not exist"),
            ("2024-01-01T12:60:00Z", "minute 60 does not exist"),
            ("2024-01-01T12:00:60Z", "leap second"),
            ("2024-01-01T12:00:61Z", "second 61 does not exist"),
            ("2024-01-01T12:00:00", "give the offset"),
            ("2024-01-01T12:00Z", "give the seconds"),
            ("2024-01-01T12:00:00.Z", "needs digits"),
            ("2024-01-01t12:00:00Z", "capital T"),
            ("2024-01-01 12:00:00Z", "not a space"),
            ("2024-01-01T12:00:00z", "capital Z"),
            ("2024-01-01T12:00:00+24:00", "out of range"),
            ("2024-01-01T12:00:00+05:60", "out of range"),
            ("2024-01-01T12:00:00+05", "±hh:mm or ±hhmm"),
            ("2024-01-01T12:00:00+5:00", "±hh:mm or ±hhmm"),
            ("2024-01-01T12:00:00+05:3", "two digits"),
            ("2024-01-01T12:00:00Zjunk", "unexpected 'junk'"),
            ("2024-01-01junk", "expected T"),
            ("20240229T120000Z", "the year takes four digits"),
            ("0001-01-01T00:00:00+00:01", "before 0001-01-01T00:00:00Z"),
            ("9999-12-31T23:59:59-00:01", "after 9999-12-31T23:59:59Z"),
            ("9999-12-31T23:59:59.99999999999Z", "rounds to it"),
            ("", "expected the year"),
            ("２０２４-01-01", "expected the year"),
            ("yesterday", "expected the year"),
        ]
        for (input, message) in cases {
            do {
                let date = try ISO8601.date(from: input)
                Issue.record("\(input) read as \(date)")
            } catch {
                #expect(error.description.contains(message), "\(input): \(error)")
            }
        }
    }

    @Test("every day of the years 1 to 9999: days(from:) and civil(fromDays:) agree with days counted one by one")
    func everyDay() {
        var day = ISO8601.days(fromYear: 1, month: 1, day: 1)
        #expect(Int64(day) * 86_400 - 978_307_200 == Self.naiveSeconds(year: 1, month: 1, day: 1))
        var mismatches = 0
        for year in Int64(1)...9999 {
            for month in Int64(1)...12 {
                for dayOfMonth in 1...ISO8601.daysIn(month: month, year: year) {
                    if ISO8601.days(fromYear: year, month: month, day: dayOfMonth) != day
                        || ISO8601.civil(fromDays: day) != (year, month, dayOfMonth)
                    {
                        mismatches += 1
                    }
                    day += 1
                }
            }
        }
        #expect(mismatches == 0)
        // 3,652,059 days from 0001-01-01 to 10000-01-01.
        #expect(day - ISO8601.days(fromYear: 1, month: 1, day: 1) == 3_652_059)
        #expect(ISO8601.daysIn(month: 2, year: 2000) == 29 && ISO8601.daysIn(month: 2, year: 1900) == 28)
    }

    @Test("random instants of the years 1 to 9999 print as the naive calendar's fields and read back as themselves")
    func roundTrip() throws {
        var random = SeededGenerator(seed: 0x5EED_1509)
        for _ in 0..<20_000 {
            // Whole seconds: the printed fields are the naive calendar's, and read back exactly.
            let year = Int(random.next() % 9999) + 1, month = Int(random.next() % 12) + 1
            let length = Int(ISO8601.daysIn(month: Int64(month), year: Int64(year)))
            let day = Int(random.next() % UInt64(length)) + 1
            let second = Int(random.next() % 86_400)
            let text = String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", year, month, day, second / 3600, second / 60 % 60, second % 60)
            let date = try ISO8601.date(from: text)
            #expect(date.timeIntervalSinceReferenceDate == Double(Self.naiveSeconds(year: year, month: month, day: day) + Int64(second)),
                    "\(text)")
            #expect(ISO8601.text(date) == text)
            // With a fraction of up to 12 digits: within a few units of the last place of the naive sum, and the
            // printed text reads back as the same Date.
            let digits = Int(random.next() % 12) + 1
            let fraction = (0..<digits).map { _ in String(random.next() % 10) }.joined()
            let fine = try ISO8601.date(from: String(text.dropLast()) + "." + fraction + "Z")
            let naive = date.timeIntervalSinceReferenceDate + Double("0." + fraction)!
            #expect(abs(fine.timeIntervalSinceReferenceDate - naive) <= 2 * naive.ulp, "\(text) .\(fraction)")
            let printed = try #require(ISO8601.text(fine))
            #expect(try ISO8601.date(from: printed) == fine, "\(printed)")
            if fine.timeIntervalSinceReferenceDate < date.timeIntervalSinceReferenceDate + 1 {
                #expect(printed.hasPrefix(text.prefix(19)), "\(printed) for \(text) .\(fraction)")
            }
            // Any Double of the range, also with all its bits: printed, it reads back as itself, and its date is
            // the naive calendar's day of its whole seconds.
            let interval = Double.random(in: ISO8601.printable, using: &random)
            let any = Date(timeIntervalSinceReferenceDate: interval)
            let anyText = try #require(ISO8601.text(any))
            #expect(try ISO8601.date(from: anyText).timeIntervalSinceReferenceDate == interval, "\(anyText) for \(interval)")
            let fields = anyText.prefix(19).split(whereSeparator: { "-T:".contains($0) }).compactMap { Int($0) }
            #expect(fields.count == 6)
            if fields.count == 6 {
                let whole = Self.naiveSeconds(year: fields[0], month: fields[1], day: fields[2])
                    + Int64(fields[3] * 3600 + fields[4] * 60 + fields[5])
                #expect(Double(whole) == interval.rounded(.down), "\(anyText) for \(interval)")
            }
        }
        // Instants near 2001-01-01, down to the smallest Double, on both sides: fractions of hundreds of digits.
        for _ in 0..<2_000 {
            let magnitude = Double(sign: .plus, exponent: Int(random.next() % 1_077) - 1_074, significand: 1 + Double(random.next() % 1_000_000) / 1e6)
            let interval = random.next() % 2 == 0 ? magnitude : -magnitude
            let text = try #require(ISO8601.text(Date(timeIntervalSinceReferenceDate: interval)))
            #expect(try ISO8601.date(from: text).timeIntervalSinceReferenceDate == interval, "\(text) for \(interval)")
            #expect(text.hasPrefix(interval >= 0 ? "2001-01-01T00:00:0" : "2000-12-31T23:59:5"), "\(text) for \(interval)")
        }
        // Outside the years 1 to 9999, and not finite: no text (listen prints those as seconds).
        for interval in [-63_113_904_000.5, 252_423_993_600, .infinity, .nan] {
            #expect(ISO8601.text(Date(timeIntervalSinceReferenceDate: interval)) == nil)
        }
    }
}

/// What `wormhole value` stores and prints, and what `request --timeout` takes, across processes.
@Suite("The wormhole command's values, dates and timeouts", .throttled)
struct ToolValueTests {
    /// The ways a value's version file is damaged here.
    enum Damage: String, CaseIterable {
        case flippedByte, cutShort, emptied, fifo
    }

    /// Damages the file of `version` of the value `name`.
    static func damage(_ damage: Damage, value name: String, version: UInt64, in container: TemporaryContainer) throws {
        let path = container.path + "/values/" + RetainedStore.fileName(for: name) + "/" + ValueStore.fileName(version)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        switch damage {
        case .flippedByte:
            bytes[bytes.count - 3] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        case .cutShort:
            try Data(bytes.prefix(bytes.count / 2)).write(to: URL(fileURLWithPath: path))
        case .emptied:
            try Data().write(to: URL(fileURLWithPath: path))
        case .fifo:
            try FileManager.default.removeItem(atPath: path)
            #expect(mkfifo(path, 0o600) == 0)
        }
    }

    static func run(_ container: TemporaryContainer, _ arguments: [String]) async throws -> (status: Int32, output: [String], errors: [String]) {
        let peer = try Peer("wormhole", [arguments[0], "--container", container.path] + arguments.dropFirst())
        let status = try await peer.awaitExit()
        return (status, peer.output, peer.errorOutput)
    }

    @Test("a damaged value fails with status 1, prints nothing, says why; --list names it as skipped; an unset one is null",
          arguments: Damage.allCases)
    func damagedValue(_ damage: Damage) async throws {
        let container = TemporaryContainer()
        #expect(try await Self.run(container, ["value", "--name", "v", "--set", #"{"n": 5}"#]).status == 0)
        #expect(try await Self.run(container, ["value", "--name", "ok", "--set", "1"]).status == 0)
        try Self.damage(damage, value: "v", version: 1, in: container)
        let read = try await Self.run(container, ["value", "--name", "v"])
        #expect(read.status == 1, "\(damage): \(read)")
        #expect(read.output.isEmpty, "\(damage): \(read.output)")
        #expect(read.errors.last?.contains("the stored value of v cannot be read") == true, "\(damage): \(read.errors)")
        // Why: the version and what is wrong with it.
        let why = damage == .fifo ? "v-0000000000000001 is not a regular file" : "version 1 of value v"
        #expect(read.errors.last?.contains(why) == true, "\(damage): \(read.errors)")
        // Listed as skipped, named, with why; exit status 0 all the same.
        let list = try await Self.run(container, ["value", "--list"])
        #expect(list.status == 0)
        #expect(list.output.last?.contains(#""names":["ok"],"skipped":1"#) == true, "\(list.output)")
        let entry = "values/" + RetainedStore.fileName(for: "v")
        #expect(list.errors.contains { $0.contains("skipped \(entry): no whole version: ") && $0.contains(why) }, "\(list.errors)")
        // A value nobody set is still null, exit 0; the damaged one is still there, unchanged by the reads.
        let unset = try await Self.run(container, ["value", "--name", "never"])
        #expect(unset.status == 0 && unset.output == ["null"], "\(unset)")
        #expect(try await Self.run(container, ["value", "--name", "v"]).status == 1)
        // A new value written over it reads again: writers claim past a damaged version.
        #expect(try await Self.run(container, ["value", "--name", "v", "--set", "7"]).status == 0)
        #expect(try await Self.run(container, ["value", "--name", "v"]).output == ["7"])
    }

    @Test("a damaged newest version with a whole one behind it reads as the whole one, as every process reads it")
    func damagedNewest() async throws {
        let container = TemporaryContainer()
        #expect(try await Self.run(container, ["value", "--name", "v", "--set", "1"]).status == 0)
        #expect(try await Self.run(container, ["value", "--name", "v", "--set", "2"]).status == 0)
        try Self.damage(.flippedByte, value: "v", version: 2, in: container)
        let read = try await Self.run(container, ["value", "--name", "v"])
        #expect(read.status == 0 && read.output == ["1"], "\(read)")
        #expect(read.errors.contains { $0.contains("version 2 skipped") }, "\(read.errors)")
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(GroupValue("v", default: 0, in: center).value == 1)
    }

    @Test("dates: what --set --type date stores, another process reads as the same instant and prints back")
    func dates() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let cases: [(String, Double, String)] = [
            ("1582-10-10T00:00:00Z", -13_198_032_000, "1582-10-10T00:00:00Z"),
            ("0001-01-01T00:00:00Z", -63_113_904_000, "0001-01-01T00:00:00Z"),
            ("2024-02-29T23:59:59.5+05:30", 730_924_199.5, "2024-02-29T18:29:59.500Z"),
            ("2026-11-25T10:00:00.250Z", 817_293_600.25, "2026-11-25T10:00:00.250Z"),
            ("9999-12-31", 252_423_907_200, "9999-12-31T00:00:00Z"),
        ]
        for (input, seconds, printed) in cases {
            #expect(try await Self.run(container, ["value", "--name", "d", "--set", input, "--type", "date"]).status == 0, "\(input)")
            #expect(GroupValue("d", default: Date.distantFuture, in: center).value == Date(timeIntervalSinceReferenceDate: seconds),
                    "\(input)")
            let read = try await Self.run(container, ["value", "--name", "d"])
            #expect(read.status == 0 && read.output == ["\"\(printed)\""], "\(input): \(read)")
        }
        // A date that does not exist is a mistake, exit 2, and the value stays as it was.
        for (input, message) in [("2023-02-29T12:00:00Z", "February 2023 has 28 days"), ("2024-02-30", "February 2024 has 29 days"),
                                 ("2024-01-01T12:00:60Z", "leap second")] {
            let set = try await Self.run(container, ["value", "--name", "d", "--set", input, "--type", "date"])
            #expect(set.status == 2, "\(input)")
            #expect(set.errors.count == 1 && set.errors.first?.contains(message) == true, "\(input): \(set.errors)")
            #expect(set.output.isEmpty)
        }
        #expect(try await Self.run(container, ["value", "--name", "d"]).output == [#""9999-12-31T00:00:00Z""#])
    }

    @Test("--timeout refuses, with exit status 2 and why, what is not a number of seconds the library can wait")
    func timeouts() async throws {
        let container = TemporaryContainer()
        _ = try GroupNotificationCenter(containerURL: container.url)
        let cases: [(String, String)] = [
            ("1e-300", "shorter than a nanosecond"), ("1e-10", "shorter than a nanosecond"), ("4.9e-324", "shorter than a nanosecond"),
            ("0", "more than 0"), ("-0", "more than 0"), ("-1", "more than 0"), ("nan", "finite"), ("inf", "finite"),
            ("-inf", "finite"), ("86400.001", "at most 86400"), ("1e300", "at most 86400"), ("five", "a number of seconds"),
        ]
        for (timeout, message) in cases {
            let request = try await Self.run(container, ["request", "--name", "q", "--timeout", timeout])
            #expect(request.status == 2, "\(timeout): \(request)")
            #expect(request.errors.count == 1 && request.errors.first?.contains("--timeout") == true
                    && request.errors.first?.contains(message) == true, "\(timeout): \(request.errors)")
        }
        // The edges are taken: the request is made, and finds no responder.
        for timeout in ["1e-9", "86400", "0.5"] {
            let request = try await Self.run(container, ["request", "--name", "q", "--timeout", timeout])
            #expect(request.status == 1 && request.errors.last?.contains("no process has a responder") == true, "\(timeout): \(request)")
        }
    }
}
