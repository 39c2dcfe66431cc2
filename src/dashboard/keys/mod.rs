//! The one keymap table. Dispatch, the footer and the `?` help all read it,
//! so a key cannot work without being documented, or be documented without
//! working.

mod binding;
mod keymap;
mod overrides;
#[cfg(test)]
mod tests;
mod verbs;

pub use binding::{Binding, Cmd, Key, Pane, Scope};
pub use keymap::KEYMAP;
pub use overrides::Overrides;
pub use verbs::{verb, Completes, VERBS};

use ratatui::crossterm::event::KeyEvent;

/// The command `ev` means in `pane`, if any. The operator's rebound
/// commands are looked at first: a key moved onto one wins over the
/// table's own use of it.
pub fn lookup(pane: Pane, ev: &KeyEvent, ov: &Overrides) -> Option<Cmd> {
    let rebound = KEYMAP.iter().filter(|b| ov.rebinds(b));
    let rest = KEYMAP.iter().filter(|b| !ov.rebinds(b));
    rebound
        .chain(rest)
        .filter(|b| b.scope.covers(pane))
        .find(|b| ov.keys_of(b).iter().any(|k| k.matches(ev)))
        .map(|b| b.cmd)
}

/// The command `ev` means in the timeline view: its own keys first, then
/// the movement, close, help and quit keys every view shares.
pub fn lookup_timeline(ev: &KeyEvent, ov: &Overrides) -> Option<Cmd> {
    let own = KEYMAP
        .iter()
        .filter(|b| b.scope == Scope::Timeline)
        .find(|b| ov.keys_of(b).iter().any(|k| k.matches(ev)))
        .map(|b| b.cmd);
    own.or_else(|| lookup(Pane::Table, ev, ov).filter(|c| shared_with_timeline(*c)))
}

/// The pane commands the timeline view shares (after its own keys).
pub fn shared_with_timeline(cmd: Cmd) -> bool {
    matches!(
        cmd,
        Cmd::Up
            | Cmd::Down
            | Cmd::PageUp
            | Cmd::PageDown
            | Cmd::Top
            | Cmd::Bottom
            | Cmd::Close
            | Cmd::Help
            | Cmd::Quit
            | Cmd::Timeline
            | Cmd::Pause
            | Cmd::Suspend
    )
}

/// Is `ev` Ctrl-C? Wherever the operator is (dialogs and text inputs
/// included), it asks to quit as `q` does, and twice quits.
pub fn is_interrupt(ev: &KeyEvent) -> bool {
    Key::Ctrl('c').matches(ev)
}

/// The bindings the footer shows for `pane`.
pub fn footer(pane: Pane, read_only: bool) -> impl Iterator<Item = &'static Binding> {
    KEYMAP
        .iter()
        .filter(move |b| b.in_footer && b.scope.covers(pane))
        .filter(move |b| !(read_only && b.cmd.mutates()))
}
