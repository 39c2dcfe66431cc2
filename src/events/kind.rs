//! The claim event types, one entry each: the name the log carries, the
//! word a pane shows, the data fields worth showing and the tone it is
//! drawn in. Writers, readers, `metrics` and the panes all read this table,
//! so a type is spelled once and a new one is one entry.

/// A claim event type the protocol writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    Acquired,
    Reacquired,
    Reclaimed,
    Released,
    ForceReleased,
    Renewed,
    Expired,
}

/// How an event reads at a glance; the view gives each tone its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// A claim taken.
    Good,
    /// A claim kept going (re-acquired, renewed).
    Info,
    /// A claim given back by its holder.
    Quiet,
    /// A claim taken from a holder judged stale.
    Warn,
    /// A claim taken away by an operator.
    Alarm,
    /// Nothing to say by colour (an expiry, a type from another writer).
    Plain,
}

struct Spec {
    name: &'static str,
    short: &'static str,
    fields: &'static [&'static str],
    tone: Tone,
}

/// In [`EventKind::ALL`]'s order: the seed's four, then claimtop's
/// force-release and renewal, then etcd's expiry.
const SPECS: [Spec; 7] = [
    Spec {
        name: "claim_acquired",
        short: "acquired",
        fields: &["pid", "expires_at", "reason"],
        tone: Tone::Good,
    },
    Spec {
        name: "claim_idempotent_reacquired",
        short: "reacquired",
        fields: &["pid", "previous_acquired_at"],
        tone: Tone::Info,
    },
    Spec {
        name: "claim_stale_reclaimed",
        short: "stale_reclaimed",
        fields: &["previous_holder", "previous_pid"],
        tone: Tone::Warn,
    },
    Spec {
        name: "claim_released",
        short: "released",
        fields: &["duration_held_ms"],
        tone: Tone::Quiet,
    },
    Spec {
        name: "claim_force_released",
        short: "force_released",
        fields: &["operator", "previous_state", "archived_to"],
        tone: Tone::Alarm,
    },
    Spec {
        name: "claim_renewed",
        short: "renewed",
        fields: &["ttl_ms", "previous_expires_at"],
        tone: Tone::Info,
    },
    Spec {
        name: "claim_expired",
        short: "expired",
        fields: OTHER_FIELDS,
        tone: Tone::Plain,
    },
];

/// The fields shown for a type this table does not know.
pub const OTHER_FIELDS: &[&str] = &["pid"];

/// The prefix every claim event type shares, which a pane leaves out.
const PREFIX: &str = "claim_";

impl EventKind {
    /// Every type, in the order `metrics` exports them and `events --type`
    /// names them.
    pub const ALL: [EventKind; 7] = [
        EventKind::Acquired,
        EventKind::Reacquired,
        EventKind::Reclaimed,
        EventKind::Released,
        EventKind::ForceReleased,
        EventKind::Renewed,
        EventKind::Expired,
    ];

    fn spec(self) -> &'static Spec {
        &SPECS[self as usize]
    }

    /// The type as the log names it.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The type named `name` in a log, if the protocol writes it.
    pub fn parse(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The word a pane shows (`reacquired`, not `idempotent_reacquired`).
    pub fn short(self) -> &'static str {
        self.spec().short
    }

    /// The data fields worth showing beside the key and holder.
    pub fn fields(self) -> &'static [&'static str] {
        self.spec().fields
    }

    pub fn tone(self) -> Tone {
        self.spec().tone
    }
}

/// The names of [`EventKind::ALL`], in its order.
pub const EVENT_TYPES: [&str; EventKind::ALL.len()] = {
    let mut names = [""; EventKind::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = SPECS[i].name;
        i += 1;
    }
    names
};

/// A type as a log line carries it: known, or another writer's, kept as
/// written so it is still shown.
pub type Typed = Result<EventKind, String>;

/// `name` read as a [`Typed`].
pub fn typed(name: &str) -> Typed {
    EventKind::parse(name).ok_or_else(|| name.to_string())
}

/// The word a pane shows for any type: a known one's own, another
/// writer's without the shared prefix (untrusted: the caller escapes it).
pub fn short_of(kind: &Typed) -> &str {
    match kind {
        Ok(k) => k.short(),
        Err(name) => name.strip_prefix(PREFIX).unwrap_or(name),
    }
}

/// The data fields worth showing for any type.
pub fn fields_of(kind: &Typed) -> &'static [&'static str] {
    kind.as_ref().map_or(OTHER_FIELDS, |k| k.fields())
}

/// The tone of any type.
pub fn tone_of(kind: &Typed) -> Tone {
    kind.as_ref().map_or(Tone::Plain, |k| k.tone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_its_own_entry_and_parses_back_from_its_name() {
        for (i, k) in EventKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i, "ALL and the enum disagree at {k:?}");
            assert_eq!(EventKind::parse(k.name()), Some(k));
            assert_eq!(EVENT_TYPES[i], k.name());
            assert!(k.name().starts_with(PREFIX), "{}", k.name());
        }
        assert_eq!(EventKind::parse("claim_frobbed"), None);
    }

    #[test]
    fn another_writers_type_is_kept_and_shown_without_the_prefix() {
        let other = typed("claim_frobbed");
        assert_eq!(other, Err("claim_frobbed".to_string()));
        assert_eq!(short_of(&other), "frobbed");
        assert_eq!(short_of(&typed("job_done")), "job_done");
        assert_eq!(fields_of(&other), OTHER_FIELDS);
        assert_eq!(tone_of(&other), Tone::Plain);
        assert_eq!(
            short_of(&typed("claim_idempotent_reacquired")),
            "reacquired"
        );
    }
}
