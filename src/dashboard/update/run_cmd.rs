//! A command run as its key means it now, which is also what `:` runs:
//! refused when a layer refuses it, else the command-taking layers top
//! first, then the focused pane. Below both the key dispatch and the
//! prompt, which each run commands.

use super::effects::Effects;
use super::handled::Handled;
use super::{asof, commands, events_cmds};
use crate::dashboard::keys::Cmd;
use crate::dashboard::model::{App, Layer, Level};

/// Run a command as its key means it now (also what `:` runs): refused
/// when a layer refuses it, else the command-taking layers top first, then
/// the focused pane.
pub fn run(app: &mut App, cmd: Cmd, fx: &mut Effects) -> bool {
    if let Some(why) = refusal(app, cmd) {
        app.say(Level::Error, why);
        return true;
    }
    for i in (0..app.modes.len()).rev() {
        let handled = match app.modes.get(i).map(kind) {
            Some(Kind::AsOf) => asof::command(app, cmd),
            Some(Kind::Browse) => events_cmds::browse_command(app, cmd, fx),
            // A modal layer under the top one waits for it to close.
            _ => Handled::Pass,
        };
        if let Handled::Done(redraw) = handled {
            return redraw;
        }
    }
    commands::command(app, cmd, fx)
}

/// Why `cmd` may not run now, in words: `--read-only` refuses what
/// writes, and a layer may refuse what it cannot mean (the table as of an
/// instant refuses every verb on a claim, wherever the focus is).
pub fn refusal(app: &App, cmd: Cmd) -> Option<String> {
    if cmd.mutates() && app.read_only {
        return Some("read-only: a, r, n and F are disabled (started with --read-only)".into());
    }
    let refusing = app
        .modes
        .layers()
        .rev()
        .find(|l| l.refuses(cmd, app.focus))?;
    match refusing {
        Layer::AsOf(v) => Some(asof::refusal(app, v, cmd)),
        _ => Some(format!(
            "{} does nothing here",
            cmd.name().unwrap_or("that key")
        )),
    }
}

/// A layer's kind, without its data: what the dispatch matches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Dialog,
    Prompt,
    Filter,
    Search,
    Overlay,
    Browse,
    AsOf,
}

pub(super) fn kind(l: &Layer) -> Kind {
    match l {
        Layer::Dialog(_) => Kind::Dialog,
        Layer::Prompt(_) => Kind::Prompt,
        Layer::Filter(_) => Kind::Filter,
        Layer::Search(_) => Kind::Search,
        Layer::Overlay { .. } => Kind::Overlay,
        Layer::Browse => Kind::Browse,
        Layer::AsOf(_) => Kind::AsOf,
    }
}
