//! What every pane writes into a cell: untrusted text made safe (the one
//! place the view calls the sanitiser), instants and spans in words, the
//! state's label, and the theme's colours.

use crate::claims::ClaimState;
use crate::events::kind::{tone_of, Tone, Typed};
// Instants are worded in the crate's one home for time, a table's cells
// (the state, coarse durations, countdowns) in the columns' own.
pub use crate::columns::{coarse, state_label, time_bucket, ttl_cell};
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

/// An instant as a cell says it beside `now`: its time of day when it is
/// today, else its date and minute: short enough that a table's column
/// keeps it whole, never a date that says nothing.
pub fn time_cell(at: i64, now: i64, local: bool) -> String {
    let day = |ms| crate::time::bare_clock(ms, local, "%Y-%m-%d");
    if day(at) == day(now) {
        clock(at, local, "%H:%M:%S")
    } else {
        clock(at, local, "%m-%d %H:%M")
    }
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
