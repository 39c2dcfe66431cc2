//! The command line (`:`): what is typed, what went wrong with the last
//! command, and the commands typed before.

use crate::dashboard::input::TextInput;

/// Most command lines remembered for ↑/↓.
pub const PROMPT_HISTORY: usize = 50;

/// The open command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    pub input: TextInput,
    /// Why the last command was refused; the line stays open to fix it.
    pub error: Option<String>,
    /// What Tab offers for the word under the cursor, when there is more
    /// than one way to go on.
    pub offers: Vec<String>,
    /// Where ↑/↓ is in the history while typing.
    pub history_pos: Option<usize>,
}
