//! The command line's verbs that take words after them. Every key's
//! command is also a verb by its name (`:timeline`, `:hazards`): the
//! keymap gives those; this table gives the rest, and the help lists both.

/// One verb of the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verb {
    pub name: &'static str,
    /// The words it takes, as the help spells them.
    pub args: &'static str,
    pub help: &'static str,
    /// What its words complete from.
    pub completes: Completes,
}

/// What a verb's words are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completes {
    Nothing,
    /// Column names (`:sort`, `:columns`).
    Columns,
    /// Keys of the claims shown (`:release KEY`).
    Keys,
    /// Filter fields and states (`:filter state:stale`).
    Filter,
    /// The events filter's fields and types (`:events type:…`).
    Events,
    /// Nothing to complete from, but words to take (a path).
    Path,
}

pub const VERBS: &[Verb] = &[
    Verb {
        name: "filter",
        args: "[TEXT]",
        help: "filter the claims as / does (state:stale holder:… words); no text clears it",
        completes: Completes::Filter,
    },
    Verb {
        name: "sort",
        args: "COLUMN [rev]",
        help: "sort the claims by a column (state, key, holder, pid, machine, age, ttl, …); rev reverses",
        completes: Completes::Columns,
    },
    Verb {
        name: "goto",
        args: "TIME",
        help: "browse the events log from TIME: 03:00 (today), 2026-12-01T03:00Z, or 1h (an hour ago)",
        completes: Completes::Nothing,
    },
    Verb {
        name: "asof",
        args: "TIME",
        help: "the claims table as it stood at TIME, rebuilt from the events log: who held what, since when, how it ended (G or Esc: back to now)",
        completes: Completes::Nothing,
    },
    Verb {
        name: "events",
        args: "[TERMS]",
        help: "filter the events pane: type:claim_released holder:ci key:k1, - leaves a term's lines out (-holder:ci), every term must hold; no terms clears it",
        completes: Completes::Events,
    },
    Verb {
        name: "write",
        args: "PATH",
        help: "write the focused table (rows as shown: filtered, sorted) or the events pane's filtered events to PATH: CSV when it ends in .csv, else JSON lines; never over a file (:write! PATH replaces it)",
        completes: Completes::Path,
    },
    Verb {
        name: "columns",
        args: "[LIST | all]",
        help: "show only these columns (state and key always); all: as many as the width fits; no words: say which are shown",
        completes: Completes::Columns,
    },
    Verb {
        name: "release",
        args: "[KEY]",
        help: "release your claim on KEY (no KEY: the selected or marked claims)",
        completes: Completes::Keys,
    },
    Verb {
        name: "renew",
        args: "[KEY]",
        help: "renew the claim on KEY (no KEY: the selected or marked claims)",
        completes: Completes::Keys,
    },
    Verb {
        name: "force-release",
        args: "[KEY]",
        help: "force-release the claim on KEY, after the same confirmation as F",
        completes: Completes::Keys,
    },
];

/// The verb named `name` exactly.
pub fn verb(name: &str) -> Option<&'static Verb> {
    VERBS.iter().find(|v| v.name == name)
}
