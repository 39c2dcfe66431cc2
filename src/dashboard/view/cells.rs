//! What every pane writes into a cell: untrusted text made safe (the one
//! place the view calls the sanitiser), instants and spans in words, the
//! state's label, and the theme's colours.

use crate::claims::ClaimState;
use crate::events::kind::{tone_of, Tone, Typed};
// Instants are worded in the crate's one home for time; the view keeps
// only its coarse buckets.
pub use crate::time::clock;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use std::borrow::Cow;
use std::path::Path;

/// Untrusted text (key, holder, reason, metadata, event fields) made safe to
/// print: controls, DEL, C1 and bidi overrides escaped. Borrows when clean.
pub fn safe(s: &str) -> Cow<'_, str> {
    crate::sanitize::sanitize(s)
}

/// A text input as spans: the text (escaped) with a bar at the cursor when
/// it has the focus.
pub fn cursor_spans<'a>(
    input: &'a crate::dashboard::input::TextInput,
    focused: bool,
    theme: &Theme,
) -> Vec<Span<'a>> {
    let (before, after) = input.split();
    let mut out = vec![Span::raw(safe(before))];
    if focused {
        out.push(Span::styled("▏", theme.key()));
    }
    out.push(Span::raw(safe(after)));
    out
}

/// A path, which may not be UTF-8, made safe to print.
pub fn safe_path(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    crate::sanitize::sanitize_bytes(p.as_os_str().as_bytes())
}

/// Colours, or none: every style keeps a modifier or a symbol so the screen
/// reads the same without colour.
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    pub fn state(&self, s: ClaimState) -> Style {
        match s {
            ClaimState::Live => self.fg(Color::Green),
            ClaimState::Suspect => self.fg(Color::Yellow),
            ClaimState::Stale => self.fg(Color::Red),
            ClaimState::Corrupted => self.fg(Color::Magenta).add_modifier(Modifier::BOLD),
            ClaimState::Unreadable => self.fg(Color::Magenta),
            // Greyed: what an offline host last said, vouched for by nobody.
            ClaimState::LastKnown | ClaimState::Free => self.fg(Color::DarkGray),
        }
    }

    pub fn event(&self, kind: &Typed) -> Style {
        match tone_of(kind) {
            Tone::Good => self.fg(Color::Green),
            Tone::Info => self.fg(Color::Cyan),
            Tone::Quiet => self.fg(Color::Blue),
            Tone::Warn => self.fg(Color::Yellow),
            Tone::Alarm => self.fg(Color::Magenta),
            Tone::Plain => Style::new(),
        }
    }

    pub fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn ok(&self) -> Style {
        self.fg(Color::Green)
    }

    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }

    pub fn label(&self) -> Style {
        self.fg(Color::Cyan)
    }

    pub fn title(&self, focused: bool) -> Style {
        if focused {
            self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }

    pub fn badge(&self) -> Style {
        if self.color {
            Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)
        }
    }

    pub fn key(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// A search's match inside a line (bold and underlined without
    /// colour: the cursor's line is already reversed).
    pub fn hit(&self) -> Style {
        if self.color {
            Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
        }
    }

    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
}

/// Symbol and word: the state reads without colour.
pub fn state_label(s: ClaimState) -> &'static str {
    match s {
        ClaimState::Live => "● live",
        ClaimState::Suspect => "◐ suspect",
        ClaimState::Stale => "✖ stale",
        ClaimState::Corrupted => "‼ corrupted",
        ClaimState::Unreadable => "? unreadable",
        ClaimState::LastKnown => "◌ last known",
        ClaimState::Free => "○ free",
    }
}

/// A duration as the table shows it: `45s`, `12m`, `3h05m`, `2d4h`.
pub fn coarse(ms: i64) -> String {
    let (unit, v) = bucket(ms.max(0));
    match unit {
        0 => format!("{v}s"),
        1 => format!("{v}m"),
        2 => format!("{}h{:02}m", v / 60, v % 60),
        _ => format!("{}d{}h", v / 24, v % 24),
    }
}

/// The value [`coarse`] shows, as (unit, count): equal buckets print the
/// same text.
fn bucket(ms: i64) -> (u8, i64) {
    let s = ms / 1000;
    match s {
        i64::MIN..=59 => (0, s.max(0)),
        60..=3599 => (1, s / 60),
        3600..=86_399 => (2, s / 60),
        _ => (3, s / 3600),
    }
}

/// What a relative time cell shows, for change detection without
/// formatting: (still in the future, unit, count).
pub fn time_bucket(ms: i64) -> (bool, u8, i64) {
    let (u, v) = bucket(ms.abs());
    (ms > 0, u, v)
}

/// The TTL cell: `in 12m`, `expired 3m ago`, `pid-bound`.
pub fn ttl_cell(expires_at: Option<i64>, now: i64) -> String {
    match expires_at {
        None => "pid-bound".into(),
        Some(e) if e > now => format!("in {}", coarse(e - now)),
        Some(e) => format!("expired {} ago", coarse(now - e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn countdowns_read_coarsely_and_say_which_way() {
        assert_eq!(ttl_cell(Some(12 * 60_000 + 30_000), 0), "in 12m");
        assert_eq!(ttl_cell(Some(0), 3 * 60_000), "expired 3m ago");
        assert_eq!(ttl_cell(None, 0), "pid-bound");
        assert_eq!(coarse(45_000), "45s");
        assert_eq!(coarse(2 * 3_600_000 + 5 * 60_000), "2h05m");
        assert_eq!(coarse(50 * 3_600_000), "2d2h");
    }

    #[test]
    fn equal_buckets_mean_equal_text() {
        for (a, b) in [(61_000, 119_000), (3_600_000, 3_659_000), (5_000, 5_999)] {
            assert_eq!(time_bucket(a), time_bucket(b));
            assert_eq!(coarse(a), coarse(b));
        }
        assert_ne!(time_bucket(5_000), time_bucket(-5_000));
    }
}
