import Foundation

/// Dates as the tool reads and prints them: ISO 8601's extended format, in the proleptic Gregorian calendar (its
/// rules carried back before 1582, as ISO 8601 counts), by arithmetic alone, every field checked.
///
/// Foundation's `ISO8601DateFormatter` on Linux moves a day that does not exist into the next month
/// (2023-02-29 becomes 03-01) and counts days before 1582-10-15 in the Julian calendar (1582-10-10 becomes
/// 1582-10-20, the year 1 is two days off), so the tool uses neither it nor `Calendar`.
///
/// Read: `YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm|±hhmm)`, or a date alone, `YYYY-MM-DD`, which is midnight UTC.
/// A comma may stand for the point, and U+2212 (−) for the minus of an offset. A fraction may have any number of
/// digits; it is kept to what a `Date` holds (a `Double` of seconds since 2001: about 30 microseconds in the year
/// 9999). An offset is at most ±23:59. The instant, once the offset is taken away, lies in the years 0001 to 9999
/// (UTC). Not read, each with a message that says why: a day, month, hour, minute or second that does not exist;
/// `24:00:00` (write `00:00:00` of the next day); a leap second's `60` (a `Date` has none); a time without an
/// offset (no instant); the basic format (`20240229T120000Z`), week and ordinal dates, a time without seconds,
/// lowercase `t` and `z`.
///
/// Printed: in UTC with `Z`, the fraction only when it is not zero, with the fewest digits (at least three) that
/// read back as the same `Date`. The offset a date was given with is not kept: a `Date` holds none. Every date
/// this reads prints, and what it prints reads back as the same `Date`.
enum ISO8601 {
    /// Why a text is not a date this reads, in words: `February 2023 has 28 days`.
    struct Mistake: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The instants printed as ISO 8601: 0001-01-01T00:00:00Z up to 10000-01-01T00:00:00Z (not included), as
    /// seconds since 2001-01-01T00:00:00Z.
    static let printable = -63_113_904_000.0..<252_423_993_600.0

    /// Seconds from 1970-01-01 (day 0 of ``days(fromYear:month:day:)``) to 2001-01-01, `Date`'s reference date.
    private static let referenceSeconds: Int64 = 978_307_200

    // MARK: Reading

    /// The date `text` spells.
    /// - Throws: A ``Mistake`` that says what is wrong, for anything but the forms above.
    static func date(from text: String) throws(Mistake) -> Date {
        var reader = Reader(Array(text.utf8))
        let year = try reader.number(digits: 4, of: "the year", form: "YYYY")
        try reader.expect("-", after: "the year")
        let month = try reader.number(digits: 2, of: "the month", form: "MM")
        try reader.expect("-", after: "the month")
        let day = try reader.number(digits: 2, of: "the day", form: "DD")
        guard year >= 1 else { throw Mistake("there is no year 0000 here: the years are 0001 to 9999") }
        guard (1...12).contains(month) else {
            throw Mistake("month \(twoDigits(month)) does not exist: the months are 01 to 12")
        }
        let length = daysIn(month: month, year: year)
        guard day >= 1 else { throw Mistake("day 00 does not exist: the days of a month start at 01") }
        guard day <= length else {
            throw Mistake("\(monthNames[Int(month) - 1]) \(fourDigits(year)) has \(length) days, not \(day)")
        }
        var seconds = days(fromYear: year, month: month, day: day) * 86_400
        var fraction: [UInt8] = []
        if !reader.isAtEnd {
            try reader.expectTimeSeparator()
            let hour = try reader.number(digits: 2, of: "the hour", form: "hh")
            try reader.expect(":", after: "the hour")
            let minute = try reader.number(digits: 2, of: "the minute", form: "mm")
            guard reader.peek == UInt8(ascii: ":") else {
                throw Mistake("give the seconds too: hh:mm:ss" + (reader.isAtEnd ? "" : ", then Z or the offset"))
            }
            try reader.expect(":", after: "the minute")
            let second = try reader.number(digits: 2, of: "the second", form: "ss")
            if reader.peek == UInt8(ascii: ".") || reader.peek == UInt8(ascii: ",") {
                reader.advance()
                fraction = reader.digits()
                guard !fraction.isEmpty else { throw Mistake("the point after the seconds needs digits: ss.fff") }
            }
            if hour == 24 {
                throw Mistake("24:00:00 is not read: write 00:00:00 of the next day")
            }
            guard hour <= 23 else { throw Mistake("hour \(twoDigits(hour)) does not exist: the hours are 00 to 23") }
            guard minute <= 59 else {
                throw Mistake("minute \(twoDigits(minute)) does not exist: the minutes are 00 to 59")
            }
            if second == 60 {
                throw Mistake("second 60 (a leap second) is not read: a Date has no leap seconds")
            }
            guard second <= 59 else {
                throw Mistake("second \(twoDigits(second)) does not exist: the seconds are 00 to 59")
            }
            let offset = try reader.offset()
            seconds += hour * 3600 + minute * 60 + second - offset
        }
        guard reader.isAtEnd else { throw Mistake("unexpected \(reader.shownRest) after the date and time") }
        seconds -= referenceSeconds
        guard let interval = exactInterval(whole: seconds, fraction: fraction), printable.contains(interval) else {
            if seconds < 0 {
                throw Mistake("the instant is before 0001-01-01T00:00:00Z: the years are 0001 to 9999, in UTC")
            }
            if Double(seconds) < printable.upperBound {
                throw Mistake("the fraction is finer than a Date holds so near 10000-01-01T00:00:00Z, and rounds "
                    + "to it: the years are 0001 to 9999, in UTC")
            }
            throw Mistake("the instant is after 9999-12-31T23:59:59Z: the years are 0001 to 9999, in UTC")
        }
        return Date(timeIntervalSinceReferenceDate: interval)
    }

    /// `whole` seconds and the decimal `fraction` (its digits after the point) as the `Double` nearest their
    /// exact sum: `Double(String)` rounds correctly, so the sum is written out in decimal and read once.
    private static func exactInterval(whole: Int64, fraction: [UInt8]) -> Double? {
        var digits = fraction
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        guard !digits.isEmpty else { return Double(whole) }
        if whole >= 0 { return Double("\(whole)." + String(decoding: digits, as: UTF8.self)) }
        // -5 + 0.25 is -(4 + 0.75): the fraction's complement to 1, digit by digit (its last digit is not 0).
        return Double("-\(-(whole + 1))." + String(decoding: complement(digits), as: UTF8.self))
    }

    /// The digits of 1 − 0.`digits`, for digits whose last is not 0: each digit's complement to 9, the last's to 10.
    private static func complement(_ digits: [UInt8]) -> [UInt8] {
        var result = digits.map { UInt8(ascii: "9") - ($0 - UInt8(ascii: "0")) }
        result[result.count - 1] += 1
        return result
    }

    // MARK: Printing

    /// `date` as ISO 8601 in UTC, `YYYY-MM-DDThh:mm:ss[.fff…]Z`: the fraction only when not zero, with the fewest
    /// digits, at least three, that read back as the same `Date`. Nil outside ``printable`` (and for NaN).
    static func text(_ date: Date) -> String? {
        let interval = date.timeIntervalSinceReferenceDate
        guard printable.contains(interval), let (whole, fraction) = decimal(interval) else { return nil }
        let unix = whole + referenceSeconds
        let day = unix >= 0 ? unix / 86_400 : -((-unix + 86_399) / 86_400)
        let second = unix - day * 86_400
        let (year, month, dayOfMonth) = civil(fromDays: day)
        var text = "\(fourDigits(year))-\(twoDigits(month))-\(twoDigits(dayOfMonth))T"
            + "\(twoDigits(second / 3600)):\(twoDigits(second / 60 % 60)):\(twoDigits(second % 60))"
        if !fraction.isEmpty {
            text += "." + String(decoding: fraction, as: UTF8.self)
                + String(repeating: "0", count: max(0, 3 - fraction.count))
        }
        return text + "Z"
    }

    /// `value` as whole seconds (rounded down) and the digits of the fraction after them, without trailing zeros:
    /// from the shortest decimal that reads back as `value` (Swift's `description`), so that the two, read
    /// together again, give `value`.
    private static func decimal(_ value: Double) -> (whole: Int64, fraction: [UInt8])? {
        var text = Array(value.description.utf8)[...]
        let negative = text.first == UInt8(ascii: "-")
        if negative { text = text.dropFirst() }
        var exponent = 0
        if let e = text.firstIndex(of: UInt8(ascii: "e")) {
            guard let parsed = Int(String(decoding: text[(e + 1)...], as: UTF8.self)) else { return nil }
            exponent = parsed
            text = text[..<e]
        }
        let point = text.firstIndex(of: UInt8(ascii: ".")) ?? text.endIndex
        let digits = Array(text[..<point]) + Array(text[point...].dropFirst())
        guard digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        // Where the point goes among `digits`, once the exponent is applied.
        let position = text.distance(from: text.startIndex, to: point) + exponent
        func zeros(_ count: Int) -> [UInt8] { [UInt8](repeating: UInt8(ascii: "0"), count: max(0, count)) }
        let integer: [UInt8] = position <= 0 ? [] : Array(digits.prefix(position)) + zeros(position - digits.count)
        var fraction: [UInt8] = position <= 0 ? zeros(-position) + digits : Array(digits.dropFirst(position))
        while fraction.last == UInt8(ascii: "0") { fraction.removeLast() }
        guard integer.count <= 18, let magnitude = integer.isEmpty ? 0 : Int64(String(decoding: integer, as: UTF8.self))
        else { return nil }
        guard negative else { return (magnitude, fraction) }
        if fraction.isEmpty { return (-magnitude, []) }
        // -4.75 is -5 + 0.25.
        return (-magnitude - 1, complement(fraction))
    }

    // MARK: The proleptic Gregorian calendar

    /// The days from 1970-01-01 to the date, negative before it (Howard Hinnant's `days_from_civil`).
    static func days(fromYear year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The days of `month` in `year`: February has 29 in a year divisible by 4, except a century not divisible by 400.
    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static let monthNames = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
        "December",
    ]

    private static func twoDigits(_ number: Int64) -> String { number < 10 ? "0\(number)" : "\(number)" }
    private static func fourDigits(_ number: Int64) -> String {
        String(repeating: "0", count: max(0, 4 - "\(number)".count)) + "\(number)"
    }

    // MARK: The text

    /// The bytes of a date being read, and where the reading is.
    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { position == bytes.count }
        var peek: UInt8? { isAtEnd ? nil : bytes[position] }
        mutating func advance() { position += 1 }

        /// What follows, as an error quotes it: the next few characters, or "the end".
        var shownRest: String {
            guard !isAtEnd else { return "the end" }
            let rest = String(decoding: bytes[position...], as: UTF8.self)
            return "'" + (rest.count > 12 ? rest.prefix(12) + "…" : rest) + "'"
        }

        /// The ASCII digits that follow, however many.
        mutating func digits() -> [UInt8] {
            let start = position
            while let byte = peek, Self.isDigit(byte) { advance() }
            return Array(bytes[start..<position])
        }

        /// A field of exactly `count` ASCII digits.
        mutating func number(digits count: Int, of field: String, form: String) throws(Mistake) -> Int64 {
            let found = digits()
            guard found.count == count else {
                if found.isEmpty {
                    throw Mistake("expected \(field) (\(form)), not \(shownRest): write YYYY-MM-DDThh:mm:ssZ, "
                        + "with a fraction or an offset ±hh:mm if needed, or YYYY-MM-DD")
                }
                throw Mistake("\(field) takes \(count == 4 ? "four" : "two") digits (\(form)), not \(found.count)")
            }
            return found.reduce(0) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
        }

        mutating func expect(_ character: Character, after field: String) throws(Mistake) {
            guard let ascii = character.asciiValue, peek == ascii else {
                throw Mistake("expected '\(character)' after \(field), not \(shownRest)")
            }
            advance()
        }

        /// The `T` between the date and the time.
        mutating func expectTimeSeparator() throws(Mistake) {
            switch peek {
            case UInt8(ascii: "T"): advance()
            case UInt8(ascii: "t"): throw Mistake("write a capital T between the date and the time")
            case UInt8(ascii: " "): throw Mistake("write T between the date and the time, not a space")
            default: throw Mistake("expected T and the time after the date, not \(shownRest)")
            }
        }

        /// The offset from UTC that ends a time, in seconds east: `Z`, `±hh:mm` or `±hhmm`, at most ±23:59.
        mutating func offset() throws(Mistake) -> Int64 {
            switch peek {
            case UInt8(ascii: "Z"):
                advance()
                return 0
            case UInt8(ascii: "z"):
                throw Mistake("write a capital Z for UTC")
            case UInt8(ascii: "+"), UInt8(ascii: "-"),
                Self.minusSign[0] where bytes[position...].starts(with: Self.minusSign):
                let sign: Int64 = peek == UInt8(ascii: "+") ? 1 : -1
                position += peek == Self.minusSign[0] ? Self.minusSign.count : 1
                // ±hhmm, or ±hh:mm.
                var found = digits()
                if found.count == 2 && peek == UInt8(ascii: ":") {
                    advance()
                    found += digits()
                    if found.count != 4 { throw Mistake("the offset's minutes take two digits: ±hh:mm") }
                }
                guard found.count == 4 else { throw Mistake("write the offset as ±hh:mm or ±hhmm") }
                let hours = Int64(found[0] - UInt8(ascii: "0")) * 10 + Int64(found[1] - UInt8(ascii: "0"))
                let minutes = Int64(found[2] - UInt8(ascii: "0")) * 10 + Int64(found[3] - UInt8(ascii: "0"))
                guard hours <= 23, minutes <= 59 else {
                    let shown = "\(sign < 0 ? "-" : "+")\(twoDigits(hours)):\(twoDigits(minutes))"
                    throw Mistake("the offset \(shown) is out of range: at most ±23:59")
                }
                return sign * (hours * 3600 + minutes * 60)
            case nil:
                throw Mistake(
                    "give the offset from UTC after the time: Z, or ±hh:mm (a time without one is no instant)")
            default:
                throw Mistake("expected Z or an offset ±hh:mm after the time, not \(shownRest)")
            }
        }

        /// U+2212 MINUS SIGN, which ISO 8601 writes before a negative offset (a hyphen-minus will do too), in UTF-8.
        private static let minusSign: [UInt8] = [0xE2, 0x88, 0x92]

        private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
    }
}
