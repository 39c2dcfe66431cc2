//! What a layer that takes commands says it did with one: the answer
//! every command handler gives the dispatch, kept apart so the handlers
//! and the dispatch above them import it from below.

/// What a layer did with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// Taken; true when something visible changed.
    Done(bool),
    /// Not this layer's: the one below (at last the pane) gets it.
    Pass,
}
