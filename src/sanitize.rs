//! Untrusted text → safe display.
//!
//! Holders, reasons, metadata, keys, file names and event lines are written by
//! any process that can touch the claims root. Printed raw, an ESC or OSC
//! sequence in a holder string could retitle the operator's terminal, hide
//! rows, or fake a "released" line; a bidi override could make one key read as
//! another. Everything untrusted passes through here before a terminal sees it,
//! and the dangerous characters are shown as visible escapes instead.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io;

/// Is `c` something that must never reach a terminal verbatim?
///
/// C0 controls (including TAB, CR and LF: a multi-line holder must not break a
/// table row), DEL, C1 controls (0x80–0x9F: CSI is 0x9B on some terminals),
/// the line and paragraph separators (a row break in disguise, as NEL is),
/// bidi embeddings/overrides/isolates and marks, and the invisible format
/// characters (zero-width, the invisible operators, tag characters) that make
/// two different keys look identical.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{061c}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{e0001}'
        | '\u{e0020}'..='\u{e007f}'
    )
}

/// Must `c` be written as an escape? The unsafe characters, and the
/// backslash itself: escapes are spelled with it, so a literal `\e[2J` in a
/// key would otherwise look exactly like a real ESC shown escaped.
fn needs_escape(c: char) -> bool {
    c == '\\' || is_unsafe(c)
}

/// Escape every unsafe character of `s` (and every backslash); borrow when
/// nothing needs escaping (the common case, so a 10 000-row table allocates
/// nothing extra).
pub fn sanitize(s: &str) -> Cow<'_, str> {
    // Printable ASCII other than `\` is always safe. Checked over bytes with
    // no early exit, so it vectorises: a 10 000-row `list` sanitizes 50 000
    // cells, and decoding each char cost an eighth of the process.
    let plain_ascii = s
        .bytes()
        .fold(true, |ok, b| ok & (0x20..0x7f).contains(&b) & (b != b'\\'));
    if plain_ascii || !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// Like [`sanitize`] for raw bytes that may not be UTF-8 (file names, the first
/// bytes of a corrupted lockfile): invalid bytes show as `\xNN`.
pub fn sanitize_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            push_escaped(&mut out, c);
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Escape only the unsafe characters of `s`, backslashes left alone: the
/// last guard at an output edge (every line on stderr).
/// Text that went through [`sanitize`] holds no unsafe character, so it
/// passes unchanged (no doubled backslashes); text some caller forgot to
/// sanitize still cannot reach the terminal as a control.
pub fn guard(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    guard_into(&mut out, s, false);
    Cow::Owned(out)
}

/// [`guard`] with newlines kept: for a format that escapes them itself (a
/// Prometheus label value), or text made of whole lines.
pub fn guard_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && c != '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    guard_into(&mut out, s, true);
    Cow::Owned(out)
}

/// [`guard`] into `out`; `keep_newlines` for text made of whole lines.
fn guard_into(out: &mut String, s: &str, keep_newlines: bool) {
    for c in s.chars() {
        if is_unsafe(c) && !(keep_newlines && c == '\n') {
            push_escaped(out, c);
        } else {
            out.push(c);
        }
    }
}

/// A writer that lets through only what a terminal shows as text: every
/// unsafe character except the newlines that end lines is escaped as
/// [`sanitize`] spells it, and bytes that are not UTF-8 as `\xNN` (a lone
/// 0x9B is CSI to a terminal that is not in UTF-8 mode).
///
/// Every text-mode byte of stdout passes through one of these, so a field
/// that reaches a line unsanitized is shown escaped, never obeyed. Callers
/// still [`sanitize`] each untrusted field: only that keeps a literal `\e`
/// distinguishable from a real ESC.
pub struct TerminalText<W: io::Write> {
    inner: W,
    /// Off for a JSON document: its bytes are data for a program, and
    /// serde already escapes the C0 controls inside its strings.
    on: bool,
    /// The first bytes of a character the last write cut in two.
    partial: Vec<u8>,
}

impl<W: io::Write> TerminalText<W> {
    pub fn new(inner: W, on: bool) -> TerminalText<W> {
        TerminalText {
            inner,
            on,
            partial: Vec::new(),
        }
    }

    /// The writer underneath, for bytes that are not text for a person
    /// (a generated completion script keeps its tabs).
    pub fn raw(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Swap the writer underneath, dropping any cut character.
    pub fn replace(&mut self, inner: W) -> W {
        self.partial.clear();
        std::mem::replace(&mut self.inner, inner)
    }

    fn write_guarded(&mut self, buf: &[u8]) -> io::Result<()> {
        // Printable ASCII and newlines, the common case, go out as they
        // stand: checked with no early exit, so it vectorises.
        let plain = buf.iter().fold(true, |ok, &b| {
            ok & ((0x20..0x7f).contains(&b) | (b == b'\n'))
        });
        if plain && self.partial.is_empty() {
            return self.inner.write_all(buf);
        }
        let mut bytes = std::mem::take(&mut self.partial);
        bytes.extend_from_slice(buf);
        let mut out = String::with_capacity(bytes.len() + 8);
        let mut rest = &bytes[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    guard_into(&mut out, s, true);
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    if let Ok(s) = std::str::from_utf8(good) {
                        guard_into(&mut out, s, true);
                    }
                    match e.error_len() {
                        // Cut at the end: the next write may complete it.
                        None => {
                            self.partial = bad.to_vec();
                            break;
                        }
                        Some(n) => {
                            for b in &bad[..n] {
                                let _ = write!(out, "\\x{b:02x}");
                            }
                            rest = &bad[n..];
                        }
                    }
                }
            }
        }
        self.inner.write_all(out.as_bytes())
    }
}

impl<W: io::Write> io::Write for TerminalText<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.on {
            self.write_guarded(buf)?;
        } else {
            self.inner.write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // A character still cut in two when the writer is flushed will not
        // be completed: its bytes are shown, not held back.
        for b in std::mem::take(&mut self.partial) {
            write!(self.inner, "\\x{b:02x}")?;
        }
        self.inner.flush()
    }
}

fn push_escaped(out: &mut String, c: char) {
    if !needs_escape(c) {
        out.push(c);
        return;
    }
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{1b}' => out.push_str("\\e"),
        c if (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_printable_ascii_character_but_the_backslash_is_safe_as_it_stands() {
        for b in 0u8..0x80 {
            let c = char::from(b);
            let expect_plain = (0x20..0x7f).contains(&b) && b != b'\\';
            assert_eq!(!needs_escape(c), expect_plain, "byte {b:#x}");
            let s = format!("pty:{c}");
            assert_eq!(matches!(sanitize(&s), Cow::Borrowed(_)), expect_plain);
        }
    }

    #[test]
    fn a_text_of_nothing_but_backslashes_has_each_one_doubled() {
        // Not for the plain-ASCII fast path: a backslash left single reads
        // as the start of an escape that was never there.
        for n in 1..=3 {
            assert_eq!(sanitize(&"\\".repeat(n)), "\\".repeat(2 * n));
        }
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(sanitize("pty:worker-1 ✓ 走"), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_sequences_are_shown_not_emitted() {
        let s = sanitize("a\u{1b}[2J\u{1b}]0;pwned\u{7}b");
        assert_eq!(s, "a\\e[2J\\e]0;pwned\\x07b");
        assert!(!s.chars().any(is_unsafe));
    }

    #[test]
    fn c1_del_newlines_and_tabs_are_escaped() {
        assert_eq!(
            sanitize("x\u{9b}31m\u{7f}\r\n\t"),
            "x\\x9b31m\\x7f\\r\\n\\t"
        );
    }

    #[test]
    fn bidi_overrides_and_zero_width_are_escaped() {
        assert_eq!(
            sanitize("key\u{202e}gnp.exe\u{200b}\u{2066}"),
            "key\\u{202e}gnp.exe\\u{200b}\\u{2066}"
        );
    }

    #[test]
    fn line_separators_tags_and_the_other_invisible_format_characters_are_escaped() {
        assert_eq!(
            sanitize("a\u{2028}b\u{2029}c\u{180e}d\u{206a}\u{206f}"),
            "a\\u{2028}b\\u{2029}c\\u{180e}d\\u{206a}\\u{206f}"
        );
        // Tag characters spell ASCII invisibly: "key" and "key" + tags
        // would read the same.
        assert_eq!(
            sanitize("key\u{e0001}\u{e0041}\u{e007f}"),
            "key\\u{e0001}\\u{e0041}\\u{e007f}"
        );
        // Their neighbours stay as they are.
        for c in [
            '\u{2027}',
            '\u{202f}',
            '\u{2070}',
            '\u{e0000}',
            '\u{e0002}',
            '\u{e0080}',
        ] {
            assert!(!is_unsafe(c), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn a_literal_escape_and_a_real_one_look_different() {
        let literal = sanitize("job\\e[2J");
        let real = sanitize("job\u{1b}[2J");
        assert_eq!(literal, "job\\\\e[2J");
        assert_eq!(real, "job\\e[2J");
        assert_ne!(literal, real);
        assert_eq!(sanitize_bytes(b"a\\b\xff"), "a\\\\b\\xff");
    }

    #[test]
    fn guard_leaves_sanitized_text_as_it_is_and_escapes_what_slipped_through() {
        let hostile = "r1\u{1b}]52;c;eA==\u{7}\u{1b}]0;PWNED\u{7}\u{9b}2J\u{202e}\\e\n";
        let once = sanitize(hostile);
        assert_eq!(guard(&once), once, "no doubled backslashes");
        let guarded = guard(hostile);
        assert!(!guarded.chars().any(is_unsafe), "{guarded:?}");
        assert_eq!(
            guarded,
            "r1\\e]52;c;eA==\\x07\\e]0;PWNED\\x07\\x9b2J\\u{202e}\\e\\n"
        );
    }

    #[test]
    fn guard_lines_keeps_the_newlines_and_escapes_every_other_control() {
        // For text made of whole lines (a Prometheus label value escapes
        // its own newlines): they stay; a CR, ESC or bidi control does not.
        assert_eq!(guard_lines("host a\nhost b\n"), "host a\nhost b\n");
        assert_eq!(
            guard_lines("a\r\u{1b}[2J\n\u{202e}b\\e"),
            "a\\r\\e[2J\n\\u{202e}b\\e"
        );
    }

    fn through_terminal_text(writes: &[&[u8]]) -> Vec<u8> {
        use std::io::Write as _;
        let mut w = TerminalText::new(Vec::new(), true);
        for bytes in writes {
            w.write_all(bytes).unwrap();
        }
        w.flush().unwrap();
        w.inner
    }

    #[test]
    fn terminal_text_keeps_line_ends_and_escapes_every_other_control() {
        let out = through_terminal_text(&["ok \\ line\n".as_bytes(), b"a\x1b[2J\tb\x07\x7f\n"]);
        assert_eq!(out, b"ok \\ line\na\\e[2J\\tb\\x07\\x7f\n");
    }

    #[test]
    fn terminal_text_escapes_c1_and_bidi_even_when_a_write_cuts_them_in_two() {
        let c1 = "\u{9b}".as_bytes();
        let rlo = "\u{202e}".as_bytes();
        let out = through_terminal_text(&[&c1[..1], &c1[1..], b"x", &rlo[..2], &rlo[2..]]);
        assert_eq!(String::from_utf8(out).unwrap(), "\\x9bx\\u{202e}");
        assert_eq!(
            through_terminal_text(&[b"a\xff\x9bz", &rlo[..1]]),
            b"a\\xff\\x9bz\\xe2"
        );
    }

    #[test]
    fn terminal_text_switched_off_passes_bytes_unchanged() {
        use std::io::Write as _;
        let mut w = TerminalText::new(Vec::new(), false);
        w.write_all(b"{\"k\":\"\xe2\x80\xae\"}\n").unwrap();
        assert_eq!(w.inner, b"{\"k\":\"\xe2\x80\xae\"}\n");
    }

    #[test]
    fn invalid_utf8_bytes_show_as_hex() {
        assert_eq!(sanitize_bytes(b"ok\xff\xfe\x1b"), "ok\\xff\\xfe\\e");
    }
}
