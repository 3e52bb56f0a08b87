/// The character clean-up a paste gets before its lines are read.
///
/// Messengers, mail clients and web pages put characters into copied text that the reader does not
/// see: zero-width spaces as break opportunities inside long words (a cert), word joiners, byte
/// order marks where two copies were put together, soft hyphens, and direction marks around text
/// in a right-to-left conversation. Tor knows none of them, and a cert with one inside is a bad
/// cert. They are all Unicode's default-ignorable code points (the ones a renderer draws as
/// nothing), so that property decides what goes. Visible space-like characters (no-break, narrow
/// no-break, thin spaces) are word separators; the line reader turns them into spaces.
enum PasteCharacters {
    /// `text` without its default-ignorable code points (U+200B–U+200F, U+2060–U+206F, U+FEFF,
    /// U+00AD, U+061C, variation selectors, ...).
    static func removingInvisibles(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isInvisible) else { return text }
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: text.unicodeScalars.lazy.filter { !isInvisible($0) })
        return String(kept)
    }

    static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isDefaultIgnorableCodePoint
    }

    /// `text` with every line end as `\n`: CRLF and CR (Windows and old Mac text), and the Unicode
    /// line and paragraph separators some apps copy in place of a newline.
    static func unifyingLineEnds(_ text: String) -> String {
        text.replacingAll("\r\n", with: "\n").replacingAll("\r", with: "\n")
            .replacingAll("\u{2028}", with: "\n").replacingAll("\u{2029}", with: "\n")
    }
}
