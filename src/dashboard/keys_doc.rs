//! The keymap as a Markdown table, for `docs/` and the README: generated
//! from [`KEYMAP`] so the documents say exactly what the keys do
//! (`tests/cli/docs.rs` fails when they differ).

use super::keys::{Binding, Pane, Scope, KEYMAP, VERBS};

/// Which bindings a table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// Every binding, with where it works.
    All,
    /// Only the footer's: what a newcomer needs first.
    Essential,
}

/// A Markdown table of the bindings `which` selects, in the keymap's order.
pub fn markdown_table(which: Keys) -> String {
    let mut out = String::from("| keys | where | what |\n|---|---|---|\n");
    for b in KEYMAP.iter().filter(|b| which == Keys::All || b.in_footer) {
        let keys = spelled(b.label);
        out.push_str(&format!("| {keys} | {} | {} |\n", place(b), cell(b.help)));
    }
    out
}

/// A Markdown table of the command line's verbs: those that take words,
/// then every key's command by its name.
pub fn commands_table() -> String {
    let mut out = String::from("| command | what |\n|---|---|\n");
    for v in VERBS {
        let args = if v.args.is_empty() {
            String::new()
        } else {
            format!(" {}", v.args)
        };
        out.push_str(&format!(
            "| `:{}{}` | {} |\n",
            v.name,
            cell(&args),
            cell(v.help)
        ));
    }
    for b in KEYMAP {
        let Some(name) = b.cmd.name() else { continue };
        if VERBS.iter().any(|v| v.name == name) {
            continue;
        }
        out.push_str(&format!(
            "| `:{name}` | as {}: {} |\n",
            spelled(b.label),
            cell(b.help)
        ));
    }
    out
}

fn place(b: &Binding) -> String {
    match b.scope {
        Scope::Global => "anywhere".into(),
        Scope::Timeline => "timeline".into(),
        Scope::Panes(ps) => ps
            .iter()
            .map(|p| Pane::title(*p))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// `k/↑` is two keys, `k` and `↑`; `/` alone is the slash key.
fn spelled(label: &str) -> String {
    let keys: Vec<&str> = match label {
        "/" => vec!["/"],
        _ => label.split('/').filter(|k| !k.is_empty()).collect(),
    };
    keys.iter()
        .map(|k| format!("`{}`", cell(k)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A table cell: a `|` would end it early.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}
