import PosternLinkSpec

extension BridgeImport {
    /// When bridge lines are given as command-line arguments (one line each) and there is more
    /// than one, the problem if one of them is a single word of a line (an unquoted line split by
    /// the shell): storing `192.0.2.1:443` alone as a vanilla bridge would be wrong. Nil when each
    /// argument can be a line. The word is shown scrubbed unless it is a transport name or `Bridge`.
    public static func splitLineProblem(in arguments: [String], policy: LoggingPolicy) -> String? {
        guard arguments.count > 1, let piece = arguments.first(where: looksLikePieceOfALine) else { return nil }
        let shown = TransportName.known(matching: piece) != nil || piece.lowercased() == "bridge"
            ? piece : Redacted(piece, policy: policy).description
        return "'\(shown)' is not a whole bridge line: each argument is one line, so put each line in quotes, e.g. postern bridges add 'obfs4 ADDRESS FINGERPRINT cert=... iat-mode=0'"
    }

    /// One word of a bridge line given as its own argument: a transport name, the `Bridge`
    /// keyword, or a key=value argument. None of these is a bridge line on its own.
    public static func looksLikePieceOfALine(_ argument: String) -> Bool {
        let words = argument.split(whereSeparator: \.isWhitespace)
        guard words.count == 1, let word = words.first else { return false }
        if word.contains("=") { return true }
        return word.first.map { $0.isLetter || $0 == "_" } == true && word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
    }
}
