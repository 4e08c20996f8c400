import Foundation
import Wormhole

/// One mechanism with one payload: everything measured, nil where it was not.
struct Row {
    /// The mechanism's name in the JSON report ("Wormhole" on either transport).
    var mechanism: String
    /// What the tables and the chart call it, e.g. "Wormhole (datagram)", "raw datagram socket".
    var label: String
    /// The raw socket's type or Wormhole's transport; nil for the other mechanisms.
    var transport: Transport?
    var payload: String
    var latency: Percentiles?
    var stamped: Percentiles?
    var rate: Double?
    var fanOut: FanOutResult?
    /// This row's p50 and throughput against the raw socket's for the same payload: the raw socket of the
    /// row's own transport, or for a mechanism without one, the raw seqpacket socket.
    var latencyRatio: Double?
    var rateRatio: Double?

    var json: [String: Any] {
        var row: [String: Any] = ["mechanism": mechanism, "label": label, "payload": payload]
        row["transport"] = transport?.rawValue
        row["samples"] = latency?.count
        row["p50_us"] = latency?.p50
        row["p99_us"] = latency?.p99
        row["p999_us"] = latency?.p999
        row["stamped_p50_us"] = stamped?.p50
        row["stamped_p99_us"] = stamped?.p99
        row["stamped_p999_us"] = stamped?.p999
        row["throughput_per_s"] = rate
        row["fan_out_8_per_s"] = fanOut?.rate
        row["fan_out_poster_peak_rss_kib"] = fanOut?.posterKiB
        row["fan_out_receiver_peak_rss_kib"] = fanOut?.sinkKiB
        row["latency_ratio_to_limit"] = latencyRatio
        row["throughput_ratio_to_limit"] = rateRatio
        return row
    }
}

enum Report {
    static let header = [
        "mechanism", "payload", "p50 µs", "p99 µs", "p99.9 µs", "stamped p50/p99/p99.9 µs", "1→1 /s", "1→8 /s",
        "p50 × limit", "1→1 % limit", "peak RSS KiB poster/receiver",
    ]

    static func cells(_ row: Row) -> [String] {
        func number(_ value: Double?, _ format: String) -> String { value.map { String(format: format, $0) } ?? "–" }
        let stamped = row.stamped.map { String(format: "%.1f / %.1f / %.1f", $0.p50, $0.p99, $0.p999) } ?? "–"
        let memory = row.fanOut.map { "\($0.posterKiB) / \($0.sinkKiB)" } ?? "–"
        return [
            row.label, row.payload, number(row.latency?.p50, "%.1f"), number(row.latency?.p99, "%.1f"),
            number(row.latency?.p999, "%.1f"), stamped, number(row.rate, "%.0f"), number(row.fanOut?.rate, "%.0f"),
            number(row.latencyRatio, "%.1f×"), number(row.rateRatio.map { $0 * 100 }, "%.0f %%"), memory,
        ]
    }

    /// The rows as an aligned text table.
    static func table(_ rows: [Row]) -> String {
        let lines = [header] + rows.map(cells)
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        return lines.map { cells in
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// The rows as a Markdown table, for the README.
    static func markdown(_ rows: [Row]) -> String {
        let lines = [header, header.map { _ in "---" }] + rows.map(cells)
        return lines.map { "| " + $0.joined(separator: " | ") + " |" }.joined(separator: "\n")
    }

    /// Sets each row's ratios against its limit's row for the same payload: `limit` names, for a row, the
    /// mechanism of its limit.
    static func relate(_ rows: inout [Row], limit: (Row) -> String) {
        for index in rows.indices {
            let name = limit(rows[index])
            guard let floor = rows.first(where: { $0.mechanism == name && $0.payload == rows[index].payload }) else { continue }
            if let p50 = rows[index].latency?.p50, let floorP50 = floor.latency?.p50, floorP50 > 0 {
                rows[index].latencyRatio = p50 / floorP50
            }
            if let rate = rows[index].rate, let floorRate = floor.rate, floorRate > 0 {
                rows[index].rateRatio = rate / floorRate
            }
        }
    }
}
