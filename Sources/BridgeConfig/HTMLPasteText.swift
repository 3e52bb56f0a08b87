/// Reads a paste that is the HTML source of a page or a message (`<p>obfs4 ...</p>`, lines ended
/// by `<br>`) as the lines a reader of the rendered page sees.
///
/// Tags of block elements and line breaks (`<p>`, `</p>`, `<br>`, `<br/>`, `<div>`, `<li>`, `<tr>`,
/// `<td>`, ...) end a line; tags of inline elements (`<span>`, `<b>`, `<code>`, `<wbr>`, ...) are
/// removed, as they add nothing a reader sees (mail clients put `<wbr>` inside long words);
/// comments and the contents of `<script>` and `<style>` are dropped; character references
/// (`&nbsp;`, `&amp;`, `&#8203;`) become their characters. A paste is read this way only when it
/// has at least one tag of an HTML element, so plain text keeps every character it has. Whatever
/// is left that is not markup (`<`, `>`, an unknown entity) stays in the text, where no bridge
/// line accepts it.
enum HTMLPasteText {
    /// The lines of `text` (whose line ends are `\n`) with the physical line each starts on, or nil
    /// when `text` has no HTML tag. Several lines can come from one physical line
    /// (`<p>...</p><p>...</p>`).
    static func lines(of text: String) -> [(line: Int, text: String)]? {
        let scalars = Array(text.unicodeScalars)
        guard containsTag(scalars) else { return nil }

        var lines: [(line: Int, text: String)] = []
        var current = String.UnicodeScalarView()
        var physicalLine = 1
        var lineStart = 1
        func endLine() {
            lines.append((lineStart, String(current)))
            current = String.UnicodeScalarView()
            lineStart = physicalLine
        }
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\n" {
                physicalLine += 1
                endLine()
                index += 1
            } else if scalar == "<", let markup = readMarkup(scalars, at: index) {
                physicalLine += scalars[index..<markup.end].lazy.filter { $0 == "\n" }.count
                if markup.endsLine { endLine() }
                index = markup.end
            } else if scalar == "&", let reference = readCharacterReference(scalars, at: index) {
                current.append(contentsOf: reference.text.unicodeScalars)
                index = reference.end
            } else {
                current.append(scalar)
                index += 1
            }
        }
        endLine()
        return lines
    }

    /// Elements whose tags end a line of text where they stand.
    private static let lineEndingElements: Set<String> = [
        "address", "article", "aside", "blockquote", "body", "br", "caption", "center", "dd", "details", "dialog",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
        "head", "header", "hr", "html", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table",
        "tbody", "td", "tfoot", "th", "thead", "title", "tr", "ul",
    ]

    /// Elements whose tags are removed without a trace.
    private static let inlineElements: Set<String> = [
        "a", "abbr", "b", "base", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i",
        "img", "ins", "kbd", "label", "link", "mark", "meta", "q", "s", "samp", "small", "span", "strike",
        "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
    ]

    /// Elements whose contents are not text a reader sees.
    private static let hiddenContentElements: Set<String> = ["script", "style"]

    /// The longest tag read as one (attributes included); a longer `<...>` is text. Bounds the
    /// scan for the closing `>` from each `<`.
    private static let maximumTagLength = 1024

    private struct Markup {
        let end: Int
        let endsLine: Bool
    }

    private static func containsTag(_ scalars: [Unicode.Scalar]) -> Bool {
        var index = 0
        while index < scalars.count {
            if scalars[index] == "<", readTag(scalars, at: index) != nil { return true }
            index += 1
        }
        return false
    }

    /// A comment, a declaration (`<!DOCTYPE html>`) or a tag of a known element at `index`, with
    /// the contents of a script or style element after its start tag.
    private static func readMarkup(_ scalars: [Unicode.Scalar], at index: Int) -> Markup? {
        if hasPrefix(scalars, at: index, "<!--") {
            // An unclosed comment runs to the end, as in a browser (and is scanned only once).
            let end = find(scalars, "-->", from: index + 4).map { $0 + 3 } ?? scalars.count
            return Markup(end: end, endsLine: false)
        }
        if hasPrefix(scalars, at: index, "<!") {
            guard let close = closingBracket(scalars, from: index + 2) else { return nil }
            return Markup(end: close + 1, endsLine: true)
        }
        guard let tag = readTag(scalars, at: index) else { return nil }
        if hiddenContentElements.contains(tag.name), !tag.isEndTag {
            let closing = find(scalars, "</" + tag.name, from: tag.end, ignoringCase: true)
            let end = closing.flatMap { closingBracket(scalars, from: $0 + 2) }.map { $0 + 1 } ?? scalars.count
            return Markup(end: end, endsLine: true)
        }
        return Markup(end: tag.end, endsLine: lineEndingElements.contains(tag.name))
    }

    /// `<name ...>`, `</name>` or `<name/>` for a name in the element lists (any case).
    private static func readTag(_ scalars: [Unicode.Scalar], at index: Int) -> (name: String, isEndTag: Bool, end: Int)? {
        var position = index + 1
        let isEndTag = position < scalars.count && scalars[position] == "/"
        if isEndTag { position += 1 }
        var name = ""
        while position < scalars.count, name.utf8.count <= 10, scalars[position].isASCII,
              scalars[position].properties.isAlphabetic || ("0"..."9").contains(scalars[position]) {
            name.unicodeScalars.append(scalars[position])
            position += 1
        }
        name = name.lowercased()
        guard let first = name.unicodeScalars.first, first.properties.isAlphabetic,
              lineEndingElements.contains(name) || inlineElements.contains(name) || hiddenContentElements.contains(name),
              position < scalars.count,
              scalars[position] == ">" || scalars[position] == "/" || scalars[position].properties.isWhitespace,
              let close = closingBracket(scalars, from: position) else { return nil }
        return (name, isEndTag, close + 1)
    }

    /// The index of the `>` that closes a tag whose attributes start at `start` (quoted values may
    /// hold `>`), within `maximumTagLength`. A `<` first means this is no tag; as the scans from
    /// two `<` never overlap, reading a paste stays linear in its length.
    private static func closingBracket(_ scalars: [Unicode.Scalar], from start: Int) -> Int? {
        var quote: Unicode.Scalar?
        var position = start
        let limit = min(scalars.count, start + maximumTagLength)
        while position < limit {
            let scalar = scalars[position]
            if scalar == "<" { return nil }
            if let open = quote {
                if scalar == open { quote = nil }
            } else if scalar == "\"" || scalar == "'" {
                quote = scalar
            } else if scalar == ">" {
                return position
            }
            position += 1
        }
        return nil
    }

    /// Named references a copied page or message has between or inside bridge lines; others stay
    /// as they are written.
    private static let namedReferences: [String: String] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{00A0}", "ensp": "\u{2002}",
        "emsp": "\u{2003}", "thinsp": "\u{2009}", "shy": "\u{00AD}", "zwj": "\u{200D}", "zwnj": "\u{200C}",
        "lrm": "\u{200E}", "rlm": "\u{200F}", "ZeroWidthSpace": "\u{200B}", "NewLine": "\n", "Tab": "\t",
    ]

    /// `&name;`, `&#NNN;` or `&#xHHH;` at `index`.
    private static func readCharacterReference(_ scalars: [Unicode.Scalar], at index: Int) -> (text: String, end: Int)? {
        var position = index + 1
        var body = ""
        while position < scalars.count, body.utf8.count <= 16, scalars[position] != ";",
              scalars[position].isASCII, scalars[position].properties.isAlphabetic || ("0"..."9").contains(scalars[position])
                || scalars[position] == "#" {
            body.unicodeScalars.append(scalars[position])
            position += 1
        }
        guard position < scalars.count, scalars[position] == ";", !body.isEmpty else { return nil }
        let end = position + 1
        if let named = namedReferences[body] { return (named, end) }
        guard body.hasPrefix("#") else { return nil }
        let digits = body.dropFirst()
        let isHex = digits.first == "x" || digits.first == "X"
        guard let code = UInt32(isHex ? digits.dropFirst() : digits, radix: isHex ? 16 : 10), code != 0,
              let scalar = Unicode.Scalar(code) else { return nil }
        return (String(Character(scalar)), end)
    }

    private static func hasPrefix(_ scalars: [Unicode.Scalar], at index: Int, _ prefix: String) -> Bool {
        var position = index
        for expected in prefix.unicodeScalars {
            guard position < scalars.count, scalars[position] == expected else { return false }
            position += 1
        }
        return true
    }

    /// The first index from `start` where `target` begins.
    private static func find(_ scalars: [Unicode.Scalar], _ target: String, from start: Int, ignoringCase: Bool = false) -> Int? {
        let wanted = Array((ignoringCase ? target.lowercased() : target).unicodeScalars)
        guard let first = wanted.first, start < scalars.count else { return nil }
        var position = start
        while position + wanted.count <= scalars.count {
            if lowered(scalars[position], ignoringCase) == first,
               wanted.indices.allSatisfy({ lowered(scalars[position + $0], ignoringCase) == wanted[$0] }) {
                return position
            }
            position += 1
        }
        return nil
    }

    private static func lowered(_ scalar: Unicode.Scalar, _ ignoringCase: Bool) -> Unicode.Scalar {
        guard ignoringCase, ("A"..."Z").contains(scalar) else { return scalar }
        return Unicode.Scalar(UInt8(truncatingIfNeeded: scalar.value + 32))
    }
}
