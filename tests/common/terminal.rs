//! What a terminal must never receive raw, written out by hand: the judge
//! of the hostile-text tests. It shares nothing with `claimtop::sanitize`,
//! so narrowing the code's unsafe set cannot narrow the judge with it.
//!
//! The set is the promise of docs/architecture.md ("C0/C1 controls, ESC,
//! DEL, bidi overrides and zero-width characters are shown escaped, never
//! emitted") spelled out code point by code point, plus the characters that
//! break a line or a row without being a newline, and the invisible format
//! characters that make two different strings look the same.

/// Must `c` never reach a terminal raw? `\n` is allowed: it ends the lines
/// of claimtop's own output. Everything else here is either obeyed by a
/// terminal (a control), or changes what the operator reads without being
/// seen (a bidi control, an invisible character, a line break in disguise).
pub fn forbidden(c: char) -> bool {
    matches!(c as u32,
        // C0 controls but LF: NUL, BEL, BS, TAB (breaks columns), CR
        // (overwrites a line), ESC (every CSI/OSC sequence), ...
        0x00..=0x09 | 0x0B..=0x1F
        // DEL
        | 0x7F
        // C1 controls: NEL 0x85, CSI 0x9B, ST 0x9C, OSC 0x9D, ...
        | 0x80..=0x9F
        // Arabic letter mark (a bidi mark)
        | 0x061C
        // Mongolian vowel separator (zero width)
        | 0x180E
        // zero-width space, non-joiner, joiner; left-to-right and
        // right-to-left marks
        | 0x200B..=0x200F
        // line and paragraph separators
        | 0x2028..=0x2029
        // bidi embeddings, pop, overrides
        | 0x202A..=0x202E
        // word joiner, invisible operators, the reserved U+2065, bidi
        // isolates, deprecated invisible format controls
        | 0x2060..=0x206F
        // zero-width no-break space (BOM)
        | 0xFEFF
        // interlinear annotation anchor, separator, terminator
        | 0xFFF9..=0xFFFB
        // tag characters: invisible, they can spell any ASCII text
        | 0xE0001 | 0xE0020..=0xE007F
    )
}

/// Every forbidden character in `out`, and every byte that is not UTF-8 (a
/// lone 0x9B is CSI to a terminal that is not in UTF-8 mode), with the
/// line it is on.
pub fn raw_on_terminal(out: &[u8]) -> Vec<String> {
    let mut bad = Vec::new();
    for (n, line) in out.split(|b| *b == b'\n').enumerate() {
        let shown = || String::from_utf8_lossy(line).into_owned();
        for chunk in line.utf8_chunks() {
            for c in chunk.valid().chars().filter(|c| forbidden(*c)) {
                bad.push(format!("line {n}: U+{:04X} in {:?}", c as u32, shown()));
            }
            for b in chunk.invalid() {
                bad.push(format!("line {n}: byte {b:#04x} in {:?}", shown()));
            }
        }
    }
    bad
}
