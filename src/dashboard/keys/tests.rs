use super::*;
use ratatui::crossterm::event::{KeyCode, KeyModifiers};

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

#[test]
fn every_key_is_bound_once_per_pane() {
    for pane in [Pane::Table, Pane::Detail, Pane::Events] {
        let mut seen: Vec<Key> = Vec::new();
        for b in KEYMAP.iter().filter(|b| b.scope.covers(pane)) {
            for k in b.keys {
                assert!(!seen.contains(k), "{k:?} bound twice in {pane:?}");
                seen.push(*k);
            }
        }
    }
}

#[test]
fn release_is_not_a_key_of_the_events_pane() {
    assert_eq!(
        lookup(Pane::Table, &key(KeyCode::Char('r')), &Overrides::default()),
        Some(Cmd::Release)
    );
    assert_eq!(
        lookup(
            Pane::Events,
            &key(KeyCode::Char('r')),
            &Overrides::default()
        ),
        None
    );
}

#[test]
fn ctrl_c_quits_but_plain_c_does_nothing() {
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(
        lookup(Pane::Table, &ctrl_c, &Overrides::default()),
        Some(Cmd::Quit)
    );
    assert!(is_interrupt(&ctrl_c));
    assert_eq!(
        lookup(Pane::Table, &key(KeyCode::Char('c')), &Overrides::default()),
        None
    );
}

#[test]
fn alt_slash_is_not_slash() {
    let alt = KeyEvent::new(KeyCode::Char('/'), KeyModifiers::ALT);
    assert_eq!(lookup(Pane::Table, &alt, &Overrides::default()), None);
    assert_eq!(
        lookup(Pane::Table, &key(KeyCode::Char('/')), &Overrides::default()),
        Some(Cmd::Filter)
    );
}

#[test]
fn every_bound_control_key_is_spelled_in_its_label() {
    for b in KEYMAP {
        for k in b.keys {
            if let Key::Ctrl(c) = k {
                let spelled = match c {
                    ' ' => "C-space".to_string(),
                    c => format!("C-{c}"),
                };
                assert!(
                    b.label.contains(&spelled)
                        || b.help.contains(&format!("Ctrl-{}", c.to_ascii_uppercase())),
                    "{:?} is bound to Ctrl-{c} but neither label {:?} nor help says so",
                    b.cmd,
                    b.label
                );
            }
        }
    }
}

#[test]
fn read_only_footer_hides_the_mutating_keys() {
    assert!(footer(Pane::Table, false).any(|b| b.cmd == Cmd::ForceRelease));
    assert!(!footer(Pane::Table, true).any(|b| b.cmd.mutates()));
}

#[test]
fn ctrl_space_marks_all_and_ctrl_backslash_drops_the_marks_as_terminals_send_them() {
    let none = Overrides::default();
    // Ctrl-Space arrives as NUL, read back as Ctrl and space.
    let ctrl_space = KeyEvent::new(KeyCode::Char(' '), KeyModifiers::CONTROL);
    assert_eq!(lookup(Pane::Table, &ctrl_space, &none), Some(Cmd::MarkAll));
    assert_eq!(
        lookup(Pane::Table, &key(KeyCode::Char(' ')), &none),
        Some(Cmd::Mark)
    );
    // Ctrl-\ arrives as 0x1C, read back as Ctrl-4 (or as itself under
    // the kitty protocol).
    for c in ['4', '\\'] {
        let ev = KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
        assert_eq!(
            lookup(Pane::Table, &ev, &none),
            Some(Cmd::ClearMarks),
            "{c}"
        );
    }
    assert_eq!(
        lookup(Pane::Table, &key(KeyCode::Char('U')), &none),
        Some(Cmd::ClearMarks)
    );
    assert_eq!(
        lookup(Pane::Events, &key(KeyCode::F(10)), &none),
        Some(Cmd::Quit)
    );
}
