//! One-line text editing for the filter and the dialogs, on the tui-input
//! crate: ←/→ and Home/End move, Backspace/Delete, Ctrl-U / Ctrl-K cut to
//! the start / end, Ctrl-W cuts a word. Keys that mean something to the
//! dialog around it (Tab, Enter, Esc, ↑/↓) are left to the dialog.

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent};
use tui_input::backend::crossterm::to_input_request;
use tui_input::{Input, InputRequest};

#[derive(Debug, Clone, Default)]
pub struct TextInput(Input);

impl PartialEq for TextInput {
    fn eq(&self, other: &TextInput) -> bool {
        self.value() == other.value() && self.cursor() == other.cursor()
    }
}

impl PartialEq<&str> for TextInput {
    fn eq(&self, other: &&str) -> bool {
        self.value() == *other
    }
}

/// Reads as the text typed so far.
impl std::ops::Deref for TextInput {
    type Target = str;
    fn deref(&self) -> &str {
        self.value()
    }
}

impl From<&str> for TextInput {
    fn from(s: &str) -> TextInput {
        TextInput::new(s)
    }
}

impl From<String> for TextInput {
    fn from(s: String) -> TextInput {
        TextInput::new(s)
    }
}

impl TextInput {
    /// `text`, with the cursor at its end.
    pub fn new(text: impl Into<String>) -> TextInput {
        TextInput(Input::new(text.into()))
    }

    pub fn value(&self) -> &str {
        self.0.value()
    }

    /// The cursor, in characters from the start.
    pub fn cursor(&self) -> usize {
        self.0.cursor()
    }

    /// Apply `ev` if it is an editing key; true when it was one.
    pub fn key(&mut self, ev: &KeyEvent) -> bool {
        if matches!(
            ev.code,
            KeyCode::Tab
                | KeyCode::BackTab
                | KeyCode::Enter
                | KeyCode::Esc
                | KeyCode::Up
                | KeyCode::Down
        ) {
            return false;
        }
        match to_input_request(&Event::Key(*ev)) {
            // Control characters never go into a key, holder or filter.
            Some(InputRequest::InsertChar(c)) if c.is_control() => false,
            Some(req) => {
                self.0.handle(req);
                true
            }
            None => false,
        }
    }

    /// The text split at the cursor, for drawing it.
    pub fn split(&self) -> (&str, &str) {
        let at = self
            .value()
            .char_indices()
            .nth(self.cursor())
            .map_or(self.value().len(), |(i, _)| i);
        self.value().split_at(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    fn press(input: &mut TextInput, code: KeyCode, m: KeyModifiers) {
        input.key(&KeyEvent::new(code, m));
    }

    #[test]
    fn editing_keys_move_the_cursor_and_cut_as_a_shell_does() {
        let mut t = TextInput::new("holder:pty");
        let none = KeyModifiers::NONE;
        press(&mut t, KeyCode::Home, none);
        press(&mut t, KeyCode::Char('x'), none);
        assert_eq!(t.value(), "xholder:pty");
        press(&mut t, KeyCode::Delete, none);
        assert_eq!(t.value(), "xolder:pty");
        press(&mut t, KeyCode::End, none);
        press(&mut t, KeyCode::Left, none);
        press(&mut t, KeyCode::Backspace, none);
        assert_eq!(t.value(), "xolder:py");
        assert_eq!(t.split(), ("xolder:p", "y"));
        press(&mut t, KeyCode::Char('k'), KeyModifiers::CONTROL);
        assert_eq!(t.value(), "xolder:p");
        press(&mut t, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert!(t.value().len() < "xolder:p".len(), "{}", t.value());
        press(&mut t, KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(t.value(), "");
    }

    #[test]
    fn dialog_keys_are_not_editing() {
        let mut t = TextInput::new("a");
        for code in [KeyCode::Tab, KeyCode::Enter, KeyCode::Esc, KeyCode::Up] {
            assert!(!t.key(&KeyEvent::new(code, KeyModifiers::NONE)));
        }
        assert_eq!(t.value(), "a");
    }
}
