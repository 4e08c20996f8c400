import Foundation
import Wormhole

/// An SVG chart of the one-way latency percentiles of each measured row, on a logarithmic scale.
enum Chart {
    static func svg(_ rows: [Row]) -> String {
        let measured = rows.filter { $0.latency != nil }
        let width = 900.0, left = 330.0, right = 30.0, rowHeight = 34.0, top = 50.0
        let height = top + Double(measured.count) * rowHeight + 50
        let low = -1.0, high = 5.0  // 0.1 µs to 100 ms
        func x(_ microseconds: Double) -> Double {
            let value = min(max(log10(max(microseconds, 0.1)), low), high)
            return left + (value - low) / (high - low) * (width - left - right)
        }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(Int(left))" y="22" font-size="14" font-weight="bold">One-way latency, µs (log scale): p50 bar, p99 red tick, p99.9 black tick</text>

            """
        for exponent in Int(low)...Int(high) {
            let position = x(pow(10, Double(exponent)))
            let label = exponent < 0 ? "0.1" : exponent < 3 ? "\(Int(pow(10, Double(exponent))))" : "\(Int(pow(10, Double(exponent - 3)))) ms"
            svg += "<line x1=\"\(position)\" y1=\"\(top - 8)\" x2=\"\(position)\" y2=\"\(height - 40)\" stroke=\"#ddd\"/>\n"
            svg += "<text x=\"\(position)\" y=\"\(height - 24)\" text-anchor=\"middle\" fill=\"#555\">\(label)</text>\n"
        }
        for (index, row) in measured.enumerated() {
            let y = top + Double(index) * rowHeight
            let p50 = row.latency?.p50 ?? 0
            let p99 = row.latency?.p99 ?? p50
            let p999 = row.latency?.p999 ?? p99
            let name = "\(row.label) · \(row.payload)"
            let color = row.mechanism != "Wormhole" ? "#999" : row.transport == .datagram ? "#7a4fd0" : "#2a6fdb"
            svg += "<text x=\"\(left - 8)\" y=\"\(y + 16)\" text-anchor=\"end\">\(escape(name))</text>\n"
            svg += "<rect x=\"\(left)\" y=\"\(y + 5)\" width=\"\(x(p50) - left)\" height=\"16\" fill=\"\(color)\"/>\n"
            svg += "<line x1=\"\(x(p99))\" y1=\"\(y + 2)\" x2=\"\(x(p99))\" y2=\"\(y + 24)\" stroke=\"#d33\" stroke-width=\"2\"/>\n"
            svg += "<line x1=\"\(x(p999))\" y1=\"\(y + 2)\" x2=\"\(x(p999))\" y2=\"\(y + 24)\" stroke=\"#111\" stroke-width=\"2\"/>\n"
            svg += String(format: "<text x=\"%.1f\" y=\"%.1f\" fill=\"#333\">%.1f / %.1f / %.1f</text>\n", x(p999) + 6, y + 17, p50, p99, p999)
        }
        return svg + "</svg>\n"
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
