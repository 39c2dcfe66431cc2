//! What owns the keys: a stack of layers over the panes, as gitui stacks
//! its components. The layer on top takes a key first; a layer that has no
//! use for it lets the one below try, and the focused pane comes last. A
//! layer is pushed when it opens and popped when it closes, so "what is
//! open" has one answer, and Esc always leaves the layer the operator sees.
//!
//! Two kinds of layer: modal ones (a dialog, a text input, an overlay)
//! take every key while on top; the others (the events pane browsing the
//! whole log, the table as of an instant) take only the commands that mean
//! something to them and pass the rest down.

use super::asof::AsOf;
use super::dialogs::{Dialog, Overlay};
use super::prompt::Prompt;
use crate::dashboard::input::TextInput as Input;
use crate::dashboard::keys::{Cmd, Pane};

/// One thing open over the panes.
// A stack holds a handful of layers, once: boxing the big dialogs would
// cost every push and match a pointer to save bytes nobody has many of.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Layer {
    /// A form or a confirmation: every key is its own until answered.
    Dialog(Dialog),
    /// The command line (`:`).
    Prompt(Prompt),
    /// The table's `/` filter, applied as typed.
    Filter(Input),
    /// The events pane's `/` search, run on Enter.
    Search(Input),
    /// Help, hazards, a claim in full, the messages, the timeline; with
    /// how far it is scrolled.
    Overlay { which: Overlay, scroll: u16 },
    /// The events pane reads a window of the whole log instead of
    /// following its tail (its keys work while the pane has the focus).
    Browse,
    /// The table shows the claims as they stood at an instant.
    AsOf(AsOf),
}

impl Layer {
    /// Does it take every key while on top (a dialog, a text input, an
    /// overlay), rather than only the commands it knows?
    pub fn is_modal(&self) -> bool {
        !matches!(self, Layer::Browse | Layer::AsOf(_))
    }

    /// Does this layer refuse `cmd` with the focus on `focus`? The table
    /// as of an instant refuses every verb on a claim and every key that
    /// picks claims, in any pane: they would act on the claims of now,
    /// unseen under the rows of then (the table's `/` and `s` only in the
    /// table: elsewhere they mean another pane's search or nothing).
    pub fn refuses(&self, cmd: Cmd, focus: Pane) -> bool {
        if !matches!(self, Layer::AsOf(_)) {
            return false;
        }
        let table_key = matches!(cmd, Cmd::Filter | Cmd::SortNext | Cmd::SortReverse);
        let on_claims = matches!(
            cmd,
            Cmd::Acquire
                | Cmd::Mark
                | Cmd::MarkAll
                | Cmd::Release
                | Cmd::Renew
                | Cmd::ForceRelease
                | Cmd::ForgetHost
                | Cmd::EventsForKey
                | Cmd::Copy
                | Cmd::Open
        );
        on_claims || (table_key && focus == Pane::Table)
    }
}

/// The layers open, bottom first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Modes {
    stack: Vec<Layer>,
}

impl Modes {
    pub fn top(&self) -> Option<&Layer> {
        self.stack.last()
    }

    pub fn top_mut(&mut self) -> Option<&mut Layer> {
        self.stack.last_mut()
    }

    /// The layer at `i` (0: the bottom).
    pub fn get(&self, i: usize) -> Option<&Layer> {
        self.stack.get(i)
    }

    pub fn len(&self) -> usize {
        self.stack.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// Every layer, bottom first.
    pub fn layers(&self) -> impl DoubleEndedIterator<Item = &Layer> {
        self.stack.iter()
    }

    pub fn push(&mut self, l: Layer) {
        self.stack.push(l);
    }

    pub fn pop(&mut self) -> Option<Layer> {
        self.stack.pop()
    }

    /// Take out the topmost layer `pick` chooses, wherever it is.
    pub fn remove(&mut self, pick: impl Fn(&Layer) -> bool) -> Option<Layer> {
        let i = self.stack.iter().rposition(pick)?;
        Some(self.stack.remove(i))
    }

    /// The top layer, taken off when `pick` chooses it.
    pub fn pop_if(&mut self, pick: impl Fn(&Layer) -> bool) -> Option<Layer> {
        if self.top().is_some_and(pick) {
            self.stack.pop()
        } else {
            None
        }
    }

    /// The dialog on top, if any (nothing else is answered while one is).
    pub fn dialog(&self) -> Option<&Dialog> {
        self.stack.iter().rev().find_map(|l| match l {
            Layer::Dialog(d) => Some(d),
            _ => None,
        })
    }

    /// The topmost overlay open.
    pub fn overlay(&self) -> Option<Overlay> {
        self.stack.iter().rev().find_map(|l| match l {
            Layer::Overlay { which, .. } => Some(*which),
            _ => None,
        })
    }

    /// Lines the topmost overlay is scrolled.
    pub fn overlay_scroll(&self) -> u16 {
        self.stack
            .iter()
            .rev()
            .find_map(|l| match l {
                Layer::Overlay { scroll, .. } => Some(*scroll),
                _ => None,
            })
            .unwrap_or(0)
    }

    /// Scroll the topmost overlay to `to`.
    pub fn set_overlay_scroll(&mut self, to: u16) {
        let top = self.stack.iter_mut().rev().find_map(|l| match l {
            Layer::Overlay { scroll, .. } => Some(scroll),
            _ => None,
        });
        if let Some(s) = top {
            *s = to;
        }
    }

    /// Open `which` on top, scrolled to its start (one of a kind on top:
    /// opening it again does not stack a second).
    pub fn open_overlay(&mut self, which: Overlay) {
        self.pop_if(|l| matches!(l, Layer::Overlay { which: w, .. } if *w == which));
        self.push(Layer::Overlay { which, scroll: 0 });
    }

    /// Close the overlay on top, if one is; true when one was.
    pub fn close_overlay(&mut self) -> bool {
        self.pop_if(|l| matches!(l, Layer::Overlay { .. }))
            .is_some()
    }

    pub fn prompt(&self) -> Option<&Prompt> {
        match self.top() {
            Some(Layer::Prompt(p)) => Some(p),
            _ => None,
        }
    }

    /// The table's filter being typed.
    pub fn filter_input(&self) -> Option<&Input> {
        match self.top() {
            Some(Layer::Filter(i)) => Some(i),
            _ => None,
        }
    }

    /// The events search being typed.
    pub fn search_input(&self) -> Option<&Input> {
        self.stack.iter().rev().find_map(|l| match l {
            Layer::Search(i) => Some(i),
            _ => None,
        })
    }

    /// The events pane browses the whole log.
    pub fn browsing(&self) -> bool {
        self.stack.iter().any(|l| matches!(l, Layer::Browse))
    }

    /// The table as of an instant, while it shows.
    pub fn asof(&self) -> Option<&AsOf> {
        self.stack.iter().rev().find_map(|l| match l {
            Layer::AsOf(v) => Some(v),
            _ => None,
        })
    }

    pub fn asof_mut(&mut self) -> Option<&mut AsOf> {
        self.stack.iter_mut().rev().find_map(|l| match l {
            Layer::AsOf(v) => Some(v),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asof(at: i64) -> Layer {
        Layer::AsOf(AsOf {
            at,
            rows: None,
            complete: false,
            span: None,
            selected: 0,
            select: None,
        })
    }

    #[test]
    fn what_is_open_is_read_from_the_one_stack_top_first() {
        let mut m = Modes::default();
        assert!(m.top().is_none() && !m.browsing() && m.asof().is_none());
        m.push(Layer::Browse);
        m.push(asof(5));
        m.open_overlay(Overlay::Help);
        m.open_overlay(Overlay::Help);
        assert_eq!(m.len(), 3, "an overlay opened twice is on top once");
        assert_eq!(m.overlay(), Some(Overlay::Help));
        m.set_overlay_scroll(7);
        assert_eq!(m.overlay_scroll(), 7);
        assert!(m.browsing());
        assert_eq!(m.asof().map(|v| v.at), Some(5));
        assert!(
            m.prompt().is_none(),
            "a prompt under an overlay is not typed into"
        );
        assert!(m.close_overlay());
        assert!(!m.close_overlay(), "the as-of table is no overlay");
        assert_eq!(
            m.remove(|l| matches!(l, Layer::Browse)),
            Some(Layer::Browse)
        );
        assert_eq!(m.pop(), Some(asof(5)));
        assert!(m.is_empty());
    }

    #[test]
    fn only_the_browse_and_as_of_layers_let_keys_through() {
        assert!(!Layer::Browse.is_modal());
        assert!(!asof(0).is_modal());
        assert!(Layer::Filter(Input::default()).is_modal());
        assert!(Layer::Overlay {
            which: Overlay::Help,
            scroll: 0
        }
        .is_modal());
    }
}
