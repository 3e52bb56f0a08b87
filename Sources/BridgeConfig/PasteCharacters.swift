/// The character clean-up a paste gets before its lines are read.
///
/// Messengers, mail clients and web pages put characters into copied text that the reader does not
/// see: zero-width spaces as break opportunities inside long words (a cert), word joiners, byte
/// order marks where two copies were put together, soft hyphens, and direction marks around text
/// in a right-to-left conversation. Tor knows none of them, and a cert with one inside is a bad
/// cert. They are all Unicode's default-ignorable code points (the ones a renderer draws as
/// nothing), so that property decides what goes. Visible space-like characters (no-break, narrow
/// no-break, thin spaces) are word separators; the line reader turns them into spaces.
///
/// Bidirectional controls are the exception, because they can change what the reader sees without
/// changing what is stored: a right-to-left override before `1.2.3.4:443` shows `344:4.3.2.1`. The
/// ones that start right-to-left text (U+202B, U+202E, U+2067) are never removed: the word that
/// holds one is refused, and the user sees why. Direction marks (U+200E, U+200F, U+061C) and the
/// left-to-right or first-strong embeddings, overrides and isolates with their terminators (U+202A,
/// U+202C, U+202D, U+2066, U+2068, U+2069), which messengers put around left-to-right text in
/// right-to-left conversations, go only at a word's edge (next to a space, a line end or an end of
/// the text); inside a word they stay, and the word is refused.
enum PasteCharacters {
    /// `text` without its default-ignorable code points (U+200B–U+200D, U+2060–U+2064, U+FEFF,
    /// U+00AD, variation selectors, ...), other bidirectional controls only at word edges, and the
    /// right-to-left ones never (see above).
    static func removingInvisibles(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isInvisible) else { return text }
        let scalars = Array(text.unicodeScalars)
        var kept = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            guard isInvisible(scalar) else { kept.append(scalar); continue }
            if startsRightToLeft(scalar) { kept.append(scalar); continue }
            if isBidirectionalControl(scalar) && !isAtWordEdge(scalars, index) { kept.append(scalar); continue }
        }
        return String(kept)
    }

    static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isDefaultIgnorableCodePoint
    }

    /// Right-to-left embedding, override and isolate: what follows them is shown reordered.
    static func startsRightToLeft(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value == 0x202B || scalar.value == 0x202E || scalar.value == 0x2067
    }

    /// Direction marks, embeddings, overrides, isolates and their terminators.
    static func isBidirectionalControl(_ scalar: Unicode.Scalar) -> Bool {
        [0x200E, 0x200F, 0x061C].contains(scalar.value) || (0x202A...0x202E).contains(scalar.value)
            || (0x2066...0x2069).contains(scalar.value)
    }

    /// Whether the run of invisible characters around `index` touches a space, a line end or an end
    /// of the text on either side.
    private static func isAtWordEdge(_ scalars: [Unicode.Scalar], _ index: Int) -> Bool {
        func isEdge(_ scalar: Unicode.Scalar) -> Bool {
            scalar.properties.isWhitespace || scalar == "\n"
        }
        var before = index - 1
        while before >= 0 && isInvisible(scalars[before]) { before -= 1 }
        if before < 0 || isEdge(scalars[before]) { return true }
        var after = index + 1
        while after < scalars.count && isInvisible(scalars[after]) { after += 1 }
        return after == scalars.count || isEdge(scalars[after])
    }

    /// `text` with every line end as `\n`: CRLF and CR (Windows and old Mac text), and the Unicode
    /// line and paragraph separators some apps copy in place of a newline.
    static func unifyingLineEnds(_ text: String) -> String {
        text.replacingAll("\r\n", with: "\n").replacingAll("\r", with: "\n")
            .replacingAll("\u{2028}", with: "\n").replacingAll("\u{2029}", with: "\n")
    }
}
