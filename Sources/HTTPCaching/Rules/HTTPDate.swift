// SPDX-License-Identifier: Apache-2.0

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// HTTP dates ([RFC 9110 §5.6.7](https://www.rfc-editor.org/rfc/rfc9110#section-5.6.7)), parsed
/// without a date formatter: every cache lookup reads `Date`, `Expires` and `Last-Modified`.
///
/// Accepts the three formats a recipient must: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`),
/// the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`, a two-digit year more than 50
/// years in the future read as the past) and asctime (`Sun Nov  6 08:49:37 1994`). Weekday,
/// month and zone names are read in any case (`sun, 06 NOV 1994 08:49:37 gmt`), as §5.6.7 asks
/// recipients to be lenient; ``format(_:)`` writes the canonical form. Anything else, including
/// out-of-range fields, is nil.
public enum HTTPDate {
    /// The date `text` holds, or nil when it is not an HTTP date.
    public static func parse(_ text: String, now: Date = Date()) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: $0, now: now) }
    }

    /// `date` as an IMF-fixdate, the form senders use.
    public static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civil(fromDays: days)
        let weekday = Int((days % 7 + 11) % 7)  // 1970-01-01 was a Thursday (index 4).
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        // IMF-fixdate's year is four digits: year 994 is written `0994`, so that it reads back.
        let fourDigitYear =
            year >= 0 && year < 1000 ? String(repeating: "0", count: 4 - "\(year)".count) + "\(year)" : "\(year)"
        return "\(weekdayNames[weekday]), \(two(day)) \(monthNames[month - 1]) \(fourDigitYear) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    private static let weekdayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longWeekdayNames = [
        "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
    ]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// The names as ``Scanner/letters()`` reads them: lowercased.
    private static let lowercasedWeekdayNames = weekdayNames.map { $0.lowercased() }
    private static let lowercasedLongWeekdayNames = longWeekdayNames.map { $0.lowercased() }
    private static let lowercasedMonthNames = monthNames.map { $0.lowercased() }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>, now: Date) -> Date? {
        var scanner = Scanner(bytes: bytes)
        scanner.skipSpaces()
        guard let weekday = scanner.letters() else { return nil }
        if scanner.consume(UInt8(ascii: ",")) {
            scanner.skipSpaces()
            if weekday.count == 3 {
                // IMF-fixdate: DD Mon YYYY HH:MM:SS GMT
                guard lowercasedWeekdayNames.contains(weekday),
                    let day = scanner.digits(exactly: 2), scanner.consume(UInt8(ascii: " ")),
                    let month = scanner.month(), scanner.consume(UInt8(ascii: " ")),
                    let year = scanner.digits(exactly: 4), scanner.consume(UInt8(ascii: " ")),
                    let time = scanner.time(), scanner.consume(UInt8(ascii: " ")),
                    scanner.letters() == "gmt", scanner.atEndAfterSpaces()
                else { return nil }
                return date(year: year, month: month, day: day, time: time)
            }
            // RFC 850: DD-Mon-YY HH:MM:SS GMT
            guard lowercasedLongWeekdayNames.contains(weekday),
                let day = scanner.digits(exactly: 2), scanner.consume(UInt8(ascii: "-")),
                let month = scanner.month(), scanner.consume(UInt8(ascii: "-")),
                let shortYear = scanner.digits(exactly: 2), scanner.consume(UInt8(ascii: " ")),
                let time = scanner.time(), scanner.consume(UInt8(ascii: " ")),
                scanner.letters() == "gmt", scanner.atEndAfterSpaces()
            else { return nil }
            // RFC 9110 §5.6.7: a year that looks more than 50 years ahead is in the past century.
            let currentYear = civil(fromDays: Int64(now.timeIntervalSince1970 / 86_400)).year
            var year = currentYear / 100 * 100 + shortYear
            if year > currentYear + 50 { year -= 100 }
            return date(year: year, month: month, day: day, time: time)
        }
        // asctime: Mon DD HH:MM:SS YYYY, the day padded with a space.
        guard lowercasedWeekdayNames.contains(weekday), scanner.consume(UInt8(ascii: " ")),
            let month = scanner.month(), scanner.consume(UInt8(ascii: " "))
        else { return nil }
        _ = scanner.consume(UInt8(ascii: " "))
        guard let day = scanner.digits(minimum: 1, maximum: 2), scanner.consume(UInt8(ascii: " ")),
            let time = scanner.time(), scanner.consume(UInt8(ascii: " ")),
            let year = scanner.digits(exactly: 4), scanner.atEndAfterSpaces()
        else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    private static func date(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Date? {
        guard (1...31).contains(day), day <= daysIn(month: month, year: year),
            time.hour < 24, time.minute < 60, time.second < 61
        else { return nil }
        let days = days(fromCivil: year, month, day)
        let seconds = days * 86_400 + Int64(time.hour * 3600 + time.minute * 60 + min(time.second, 59))
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * monthIndex + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        let month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        let year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        mutating func consume(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func skipSpaces() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        }

        mutating func atEndAfterSpaces() -> Bool {
            skipSpaces()
            return index == bytes.count
        }

        /// A run of ASCII letters, lowercased.
        mutating func letters() -> String? {
            let start = index
            while index < bytes.count, (bytes[index] | 0x20) &- UInt8(ascii: "a") < 26 { index += 1 }
            guard index > start else { return nil }
            return String(
                decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]).lazy.map { $0 | 0x20 },
                as: UTF8.self
            )
        }

        mutating func month() -> Int? {
            guard let name = letters(), let index = HTTPDate.lowercasedMonthNames.firstIndex(of: name) else {
                return nil
            }
            return index + 1
        }

        mutating func digits(exactly count: Int) -> Int? {
            digits(minimum: count, maximum: count)
        }

        mutating func digits(minimum: Int, maximum: Int) -> Int? {
            var value = 0
            var count = 0
            while count < maximum, index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 {
                value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                index += 1
                count += 1
            }
            // A longer run of digits than allowed is not a date.
            if index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 { return nil }
            return count >= minimum ? value : nil
        }

        mutating func time() -> (hour: Int, minute: Int, second: Int)? {
            guard let hour = digits(exactly: 2), consume(UInt8(ascii: ":")),
                let minute = digits(exactly: 2), consume(UInt8(ascii: ":")),
                let second = digits(exactly: 2)
            else { return nil }
            return (hour, minute, second)
        }
    }
}
