//! The operator's own keys (`[dashboard.keys]` in the settings file): a
//! command, by the name `:` knows it by, bound to other keys. The keymap
//! stays the one table; an override replaces the keys of that command's
//! bindings, everywhere the table is read (dispatch, footer, help).
//!
//! A rebound key never takes another binding's place: one key would then
//! do the other thing than its help says, or the other command would have
//! no key left (`force-release = "q"` left only Ctrl-C to quit). Esc,
//! Ctrl-C and `q` are the ways out of everything: no other command may
//! have them.

use super::binding::{Binding, Cmd, Key, Pane, Scope};
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
        let o = Overrides { bound };
        o.shadows_nothing()?;
        Ok(o)
    }

    /// Every rebound key is free where its command works: not one of the
    /// keys every view keeps, and not another binding's there.
    fn shadows_nothing(&self) -> Result<(), String> {
        for (cmd, keys, _) in &self.bound {
            let name = cmd.name().unwrap_or("?");
            for k in keys {
                if let Some(owner) = reserved(*k).filter(|owner| owner != cmd) {
                    return Err(format!(
                        "{name}: {} is {}'s key (Esc, Ctrl-C and q are the way out of every \
                         view: no other command may have them)",
                        label(*k),
                        words(owner)
                    ));
                }
                let mine = KEYMAP.iter().filter(|b| b.cmd == *cmd);
                let clash = mine.flat_map(|m| {
                    KEYMAP.iter().filter(move |b| {
                        b.cmd != m.cmd && overlaps(m, b) && self.keys_of(b).contains(k)
                    })
                });
                if let Some(other) = clash.into_iter().next() {
                    return Err(format!(
                        "{name}: {} is already bound to {}",
                        label(*k),
                        words(other.cmd)
                    ));
                }
            }
        }
        Ok(())
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

/// The command a key belongs to whatever is rebound: Esc closes, q and
/// Ctrl-C quit.
fn reserved(k: Key) -> Option<Cmd> {
    match k {
        Key::Code(KeyCode::Esc) => Some(Cmd::Close),
        Key::Char('q') | Key::Ctrl('c') => Some(Cmd::Quit),
        _ => None,
    }
}

/// A command as the error names it: by the name `:` knows, else by its
/// footer word.
fn words(cmd: Cmd) -> String {
    cmd.name().map(str::to_string).unwrap_or_else(|| {
        KEYMAP
            .iter()
            .find(|b| b.cmd == cmd)
            .map_or_else(|| format!("{cmd:?}"), |b| b.short.to_string())
    })
}

/// Can one key press reach both bindings? In a pane both work in, or in
/// the timeline, whose own keys come before the pane keys it shares.
fn overlaps(a: &Binding, b: &Binding) -> bool {
    match (a.scope, b.scope) {
        (Scope::Timeline, Scope::Timeline) => true,
        (Scope::Timeline, _) => super::shared_with_timeline(b.cmd),
        (_, Scope::Timeline) => super::shared_with_timeline(a.cmd),
        (x, y) => [Pane::Table, Pane::Detail, Pane::Events]
            .iter()
            .any(|p| x.covers(*p) && y.covers(*p)),
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
        Key::Ctrl(' ') => "C-space".into(),
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

    #[test]
    fn a_key_another_binding_has_where_the_command_works_is_refused_naming_both() {
        let e = Overrides::parse(&map(&[("release", "t")])).unwrap_err();
        assert_eq!(e, "release: t is already bound to timeline");
        // The timeline's own keys come first there: a shared key lost.
        let e = Overrides::parse(&map(&[("pause", "l")])).unwrap_err();
        assert!(e.starts_with("pause: l is already bound to"), "{e}");
        // Moved away first, the key is free.
        let o = Overrides::parse(&map(&[("timeline", "T"), ("release", "t")]));
        assert!(o.is_ok(), "{o:?}");
        // A key of another pane only: no press reaches both.
        let o = Overrides::parse(&map(&[("sort-next", "N")]));
        assert!(o.is_ok(), "{o:?}");
    }

    #[test]
    fn esc_ctrl_c_and_q_belong_to_closing_and_quitting_whatever_is_rebound() {
        let e = Overrides::parse(&map(&[("force-release", "q")])).unwrap_err();
        assert!(e.starts_with("force-release: q is quit's key"), "{e}");
        let e = Overrides::parse(&map(&[("quit", "Q"), ("help", "q")])).unwrap_err();
        assert!(e.starts_with("help: q is quit's key"), "{e}");
        let e = Overrides::parse(&map(&[("help", "esc")])).unwrap_err();
        assert!(e.starts_with("help: Esc is close's key"), "{e}");
        let e = Overrides::parse(&map(&[("timeline", "ctrl-c")])).unwrap_err();
        assert!(e.starts_with("timeline: C-c is quit's key"), "{e}");
        assert!(Overrides::parse(&map(&[("quit", "q Q")])).is_ok());
    }
}
