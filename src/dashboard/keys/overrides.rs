//! The operator's own keys (`[dashboard.keys]` in the settings file): a
//! command, by the name `:` knows it by, bound to other keys. The keymap
//! stays the one table; an override replaces the keys of that command's
//! bindings, everywhere the table is read (dispatch, footer, help).

use super::binding::{Binding, Cmd, Key};
use super::keymap::KEYMAP;
use ratatui::crossterm::event::KeyCode;
use std::collections::BTreeMap;

/// Commands rebound, with the keys and the label the footer and help show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    bound: Vec<(Cmd, Vec<Key>, String)>,
}

impl Overrides {
    /// `name = "KEY"` (or several keys, space-separated) per command; the
    /// first thing wrong, in words naming it.
    pub fn parse(map: &BTreeMap<String, String>) -> Result<Overrides, String> {
        let mut bound: Vec<(Cmd, Vec<Key>, String)> = Vec::new();
        for (name, spec) in map {
            let cmd = KEYMAP
                .iter()
                .map(|b| b.cmd)
                .find(|c| c.name() == Some(name.as_str()))
                .ok_or_else(|| {
                    format!("{name}: no command of that name (the names : knows: release, renew, force-release, timeline, …)")
                })?;
            let words: Vec<&str> = spec.split_whitespace().collect();
            if words.is_empty() {
                return Err(format!("{name}: no key given"));
            }
            let keys = words
                .iter()
                .map(|w| {
                    key_named(w).ok_or_else(|| {
                        format!("{name}: {w:?} is no key (R, ctrl-r, f5, enter, space, …)")
                    })
                })
                .collect::<Result<Vec<Key>, String>>()?;
            for k in &keys {
                if let Some((other, _, _)) = bound.iter().find(|(_, ks, _)| ks.contains(k)) {
                    let other = other.name().unwrap_or("another command");
                    return Err(format!("{name}: {} is already bound to {other}", label(*k)));
                }
            }
            let label = keys.iter().map(|k| label(*k)).collect::<Vec<_>>().join("/");
            bound.push((cmd, keys, label));
        }
        Ok(Overrides { bound })
    }

    pub fn is_empty(&self) -> bool {
        self.bound.is_empty()
    }

    /// The keys `b` answers to: the operator's, else the table's.
    pub fn keys_of<'a>(&'a self, b: &'a Binding) -> &'a [Key] {
        self.find(b.cmd).map_or(b.keys, |(_, k, _)| k.as_slice())
    }

    /// How the footer and help spell `b`'s keys.
    pub fn label_of<'a>(&'a self, b: &'a Binding) -> &'a str {
        self.find(b.cmd).map_or(b.label, |(_, _, l)| l.as_str())
    }

    /// Is `b` one the operator rebound? (Those are looked up first, so a
    /// key moved onto a command wins over the table's use of it.)
    pub fn rebinds(&self, b: &Binding) -> bool {
        self.find(b.cmd).is_some()
    }

    fn find(&self, cmd: Cmd) -> Option<&(Cmd, Vec<Key>, String)> {
        self.bound.iter().find(|(c, _, _)| *c == cmd)
    }
}

/// A key as an operator types it in the settings file.
fn key_named(w: &str) -> Option<Key> {
    let lower = w.to_ascii_lowercase();
    if let Some(c) = lower
        .strip_prefix("ctrl-")
        .or_else(|| lower.strip_prefix("c-"))
    {
        let mut chars = c.chars();
        return match (chars.next(), chars.next()) {
            (Some(ch), None) if ch.is_ascii_alphabetic() => Some(Key::Ctrl(ch)),
            _ => None,
        };
    }
    let code = match lower.as_str() {
        "enter" => KeyCode::Enter,
        "esc" | "escape" => KeyCode::Esc,
        "tab" => KeyCode::Tab,
        "backtab" => KeyCode::BackTab,
        "space" => return Some(Key::Char(' ')),
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pgup" | "pageup" => KeyCode::PageUp,
        "pgdn" | "pagedown" => KeyCode::PageDown,
        "backspace" => KeyCode::Backspace,
        "delete" | "del" => KeyCode::Delete,
        f if f.starts_with('f') && f.len() > 1 => {
            let n: u8 = f[1..].parse().ok().filter(|n| (1..=12).contains(n))?;
            KeyCode::F(n)
        }
        _ => {
            let mut chars = w.chars();
            return match (chars.next(), chars.next()) {
                (Some(ch), None) if !ch.is_control() => Some(Key::Char(ch)),
                _ => None,
            };
        }
    };
    Some(Key::Code(code))
}

fn label(k: Key) -> String {
    match k {
        Key::Char(' ') => "space".into(),
        Key::Char(c) => c.to_string(),
        Key::Ctrl(c) => format!("C-{c}"),
        Key::Code(KeyCode::F(n)) => format!("F{n}"),
        Key::Code(c) => format!("{c:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn a_command_takes_the_keys_named_and_says_them() {
        let o = Overrides::parse(&map(&[("release", "R ctrl-r"), ("timeline", "f5")])).unwrap();
        let release = KEYMAP.iter().find(|b| b.cmd == Cmd::Release).unwrap();
        assert_eq!(o.keys_of(release), [Key::Char('R'), Key::Ctrl('r')]);
        assert_eq!(o.label_of(release), "R/C-r");
        let help = KEYMAP.iter().find(|b| b.cmd == Cmd::Help).unwrap();
        assert_eq!(o.keys_of(help), help.keys, "the others keep the table's");
    }

    #[test]
    fn an_unknown_command_a_bad_key_or_a_key_twice_is_named() {
        let e = Overrides::parse(&map(&[("relase", "R")])).unwrap_err();
        assert!(e.starts_with("relase: no command"), "{e}");
        let e = Overrides::parse(&map(&[("release", "ctrl-")])).unwrap_err();
        assert!(e.contains("\"ctrl-\" is no key"), "{e}");
        let e = Overrides::parse(&map(&[("release", "R"), ("renew", "R")])).unwrap_err();
        assert!(e.contains("R is already bound to release"), "{e}");
    }
}
