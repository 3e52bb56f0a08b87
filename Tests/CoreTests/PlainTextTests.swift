import PosternSystem
import Testing

/// PosternSystem's text helpers: the tables and counts the libraries' text forms use, and the one
/// quoting routine behind four protocols' rules.
@Suite struct PlainTextTests {
    @Test func tableColumnsArePaddedToTheWidestCellAndTheLastIsRagged() {
        let text = PlainText.table(header: ["ID", "STATE", "BRIDGE"], rows: [["a1b2c3", "on", "obfs4 [scrubbed]"], ["d4", "off", "x"]])
        #expect(text == """
        ID      STATE  BRIDGE
        a1b2c3  on     obfs4 [scrubbed]
        d4      off    x
        """)
        #expect(PlainText.table(header: ["ONLY"], rows: []) == "ONLY")
        // Padding counts characters as they are seen: a flag or an accent is one.
        #expect(PlainText.table(header: ["NETWORK", "OK"], rows: [["Tehran 🇮🇷", "5/5"], ["Café", "4/5"]]) == """
        NETWORK   OK
        Tehran 🇮🇷  5/5
        Café      4/5
        """)
    }

    @Test func countsNameTheirNounInTheRightNumber() {
        #expect(PlainText.counted(1, "bridge") == "1 bridge")
        #expect(PlainText.counted(0, "bridge") == "0 bridges")
        #expect(PlainText.counted(3, "proxy", "proxies") == "3 proxies")
        #expect(PlainText.leftPadded("7", to: 3) == "  7")
        #expect(PlainText.leftPadded("1234", to: 3) == "1234")
    }

    @Test func numbersAndMillisecondsWithoutALocale() {
        #expect(PlainText.number(45) == "45")
        #expect(PlainText.number(2.5) == "2.5")
        #expect(PlainText.number(0.25) == "0.25")
        #expect(PlainText.number(12345) == "12345")
        #expect(PlainText.number(-3) == "-3")
        #expect(PlainText.number(.infinity) == "inf")
        #expect(PlainText.milliseconds(.milliseconds(312)) == "312 ms")
        #expect(PlainText.milliseconds(.microseconds(1_499_600)) == "1500 ms")
        #expect(PlainText.milliseconds(.zero) == "0 ms")
    }

    /// Text from outside (issue 24, item 5): what could steer a terminal or reorder the text is
    /// shown, the rest (accents, flags, joiners, backslashes) kept.
    @Test func controlCharactersAreMadeVisibleAndTheRestKept() {
        #expect(PlainText.visible("\u{1B}]0;pwned\u{07}\u{1B}[2J") == #"\u{1B}]0;pwned\u{7}\u{1B}[2J"#)
        #expect(PlainText.visible("a\nb\rc\td\u{0}\u{7F}") == #"a\nb\rc\td\u{0}\u{7F}"#)
        // C1 (CSI as one scalar), the bidi overrides and isolates, the line separator.
        #expect(PlainText.visible("\u{9B}31m \u{202E}cod.exe\u{202C} \u{2067}x\u{2069} \u{200F}\u{2028}")
                == #"\u{9B}31m \u{202E}cod.exe\u{202C} \u{2067}x\u{2069} \u{200F}\u{2028}"#)
        for kept in ["Café 🇮🇷 👩‍👩‍👧", #"C:\path\u{1B}"#, "plain", ""] {
            #expect(PlainText.visible(kept) == kept)
            #expect(!PlainText.containsControlCharacters(kept))
        }
        #expect(PlainText.containsControlCharacters("x\u{85}"))
        #expect(PlainText.isControlCharacter("\u{1B}") && !PlainText.isControlCharacter("\u{200D}"))
    }

    @Test func theCommonEscapesAndEachProtocolsOwnRule() {
        #expect(QuotedText.quoted("a\"b\\c\nd\re\tf") == #""a\"b\\c\nd\re\tf""#)
        // Without a rule of its own every other scalar is kept (tor's control protocol).
        #expect(QuotedText.quoted("é\u{01}") == "\"é\u{01}\"")
        // A rule sees only what the common escapes leave.
        #expect(QuotedText.quoted("\n<x>") { $0 == "<" || $0 == ">" ? "?" : nil } == #""\n?x?""#)
        #expect(QuotedText.jsonUnicodeEscape("\u{01}") == #"\u0001"#)
        #expect(QuotedText.jsonUnicodeEscape("<") == #"\u003c"#)
        #expect(QuotedText.jsonUnicodeEscape("\u{2028}") == #"\u2028"#)
    }
}
