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

/// Is `c` something that must never reach a terminal verbatim?
///
/// C0 controls (including TAB, CR and LF: a multi-line holder must not break a
/// table row), DEL, C1 controls (0x80–0x9F: CSI is 0x9B on some terminals),
/// bidi embeddings/overrides/isolates and marks, and zero-width characters that
/// make two different keys look identical.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}'
        | '\u{061c}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
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
    fn a_literal_escape_and_a_real_one_look_different() {
        let literal = sanitize("job\\e[2J");
        let real = sanitize("job\u{1b}[2J");
        assert_eq!(literal, "job\\\\e[2J");
        assert_eq!(real, "job\\e[2J");
        assert_ne!(literal, real);
        assert_eq!(sanitize_bytes(b"a\\b\xff"), "a\\\\b\\xff");
    }

    #[test]
    fn invalid_utf8_bytes_show_as_hex() {
        assert_eq!(sanitize_bytes(b"ok\xff\xfe\x1b"), "ok\\xff\\xfe\\e");
    }
}
