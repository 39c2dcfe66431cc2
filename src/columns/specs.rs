//! Every column: its id and its spec, in the table's order, the one list
//! of columns. A new column is a variant here, its spec below, and its
//! cell in `cells.rs`.

use super::{cells, Cli, ColumnSpec, Find, Needs, Role, TextFn, Tiers, Width};

/// A column, in the order the table shows them (and `s` cycles them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ColumnId {
    State,
    /// Which root the claim lives in (several roots).
    Root,
    /// The host a claim is held on (while hosts publish into the store).
    Host,
    /// Whether the store keeps the claim or a host publishes it.
    Source,
    Key,
    Holder,
    Pid,
    Machine,
    Age,
    Ttl,
    /// Time left on the claim's lease (a store with leases).
    Lease,
    Harness,
    Reason,
    /// The verdict in words: `list`'s last column (the dashboard has its
    /// detail pane for it).
    Why,
}

const fn find(name: &'static str, any: bool, text: Option<TextFn>) -> Option<Find> {
    Some(Find { name, any, text })
}

/// Every column, in [`ColumnId`]'s order (`ColumnId::spec` indexes it).
pub static COLUMNS: [ColumnSpec; 14] = [
    ColumnSpec {
        id: ColumnId::State,
        title: "state",
        width: Width::Fixed(11),
        fill: 7,
        tiers: |_| Tiers::ALL,
        needs: Needs::Always,
        screen: true,
        cli: Cli::Yes,
        text: cells::state,
        // The tie-break that follows every column's order is the severity.
        sort: cells::no_order,
        // `state:` names a state, not text (see the filter).
        filter: None,
        role: Role::State,
    },
    ColumnSpec {
        id: ColumnId::Root,
        title: "root",
        width: Width::Fit { min: 4, max: 16 },
        // A row means little without where it lives.
        fill: 0,
        tiers: |_| Tiers::ALL,
        needs: Needs::Several,
        screen: true,
        cli: Cli::Lead,
        text: cells::root,
        sort: cells::root_order,
        filter: find("root", false, Some(cells::root_path)),
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Host,
        title: "host",
        width: Width::Fit { min: 4, max: 16 },
        fill: 1,
        tiers: |_| Tiers::ALL,
        needs: Needs::Fleet,
        screen: true,
        cli: Cli::Lead,
        text: cells::host,
        sort: cells::host_order,
        filter: find("host", false, None),
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Source,
        title: "source",
        // "last known at 12:00:03" on an offline host's row.
        width: Width::Fit { min: 6, max: 22 },
        fill: 2,
        tiers: |_| Tiers::FROM_MEDIUM,
        needs: Needs::Fleet,
        screen: true,
        cli: Cli::Lead,
        text: cells::source,
        sort: cells::source_order,
        filter: None,
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Key,
        title: "key",
        width: Width::Main { min: 8 },
        fill: u8::MAX,
        tiers: |_| Tiers::ALL,
        needs: Needs::Always,
        screen: true,
        cli: Cli::Yes,
        text: cells::key,
        sort: cells::key_order,
        filter: find("key", true, Some(cells::key_found)),
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Holder,
        title: "holder",
        width: Width::Main { min: 8 },
        fill: u8::MAX,
        tiers: |_| Tiers::ALL,
        needs: Needs::Always,
        screen: true,
        cli: Cli::Yes,
        text: cells::holder,
        sort: cells::holder_order,
        filter: find("holder", true, Some(cells::holder_found)),
        role: Role::Absent,
    },
    ColumnSpec {
        id: ColumnId::Pid,
        title: "pid",
        // Up to pid_max's seven digits, never cut.
        width: Width::Number { min: 5, max: 7 },
        fill: 6,
        // The detail pane shows it: where a root or a host takes the room,
        // key and holder need it more.
        tiers: |a| {
            if a.several || a.fleet {
                Tiers::FULL
            } else {
                Tiers::FROM_MEDIUM
            }
        },
        needs: Needs::Always,
        screen: true,
        cli: Cli::Yes,
        text: cells::pid,
        sort: cells::pid_order,
        filter: None,
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Machine,
        title: "machine",
        width: Width::Fit { min: 6, max: 9 },
        fill: 8,
        // A copy is its host's: the host column says which machine.
        tiers: |a| if a.fleet { Tiers::NONE } else { Tiers::FULL },
        needs: Needs::Always,
        screen: true,
        cli: Cli::No,
        text: cells::machine,
        sort: cells::machine_order,
        filter: None,
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Age,
        title: "age",
        width: Width::Fixed(6),
        fill: 5,
        // Narrow with several roots, the deadline matters more.
        tiers: |a| {
            if a.several {
                Tiers::FROM_MEDIUM
            } else {
                Tiers::ALL
            }
        },
        needs: Needs::Always,
        screen: true,
        cli: Cli::No,
        text: cells::age,
        sort: cells::age_order,
        filter: None,
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Ttl,
        title: "ttl",
        width: Width::Fit { min: 7, max: 15 },
        // What an operator reads next after who holds what.
        fill: 3,
        // Narrow over a store with leases, the lease says the same deadline.
        tiers: |a| {
            if a.leases {
                Tiers::FROM_MEDIUM
            } else {
                Tiers::ALL
            }
        },
        needs: Needs::Always,
        screen: true,
        cli: Cli::No,
        text: cells::ttl,
        sort: cells::deadline_order,
        filter: None,
        role: Role::Deadline,
    },
    ColumnSpec {
        id: ColumnId::Lease,
        title: "lease",
        width: Width::Fit { min: 5, max: 7 },
        fill: 4,
        // Over a fleet most rows are copies, which have no lease here.
        tiers: |a| if a.fleet { Tiers::FULL } else { Tiers::ALL },
        needs: Needs::Leases,
        screen: true,
        cli: Cli::No,
        text: cells::lease,
        sort: cells::deadline_order,
        filter: None,
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Harness,
        title: "harness",
        width: Width::Text { min: 7, max: 12 },
        fill: 9,
        // Over a fleet, the room goes to the host and the source.
        tiers: |a| if a.fleet { Tiers::NONE } else { Tiers::FULL },
        needs: Needs::Always,
        screen: true,
        cli: Cli::No,
        text: cells::harness,
        sort: cells::harness_order,
        filter: find("harness", false, None),
        role: Role::Plain,
    },
    ColumnSpec {
        id: ColumnId::Reason,
        title: "reason",
        width: Width::Rest { min: 6 },
        fill: u8::MAX,
        tiers: |_| Tiers::FULL,
        needs: Needs::Always,
        screen: true,
        cli: Cli::No,
        text: cells::reason,
        sort: cells::reason_order,
        filter: find("reason", true, Some(cells::reason_found)),
        role: Role::Failure,
    },
    ColumnSpec {
        id: ColumnId::Why,
        title: "why",
        width: Width::Rest { min: 3 },
        fill: u8::MAX,
        tiers: |_| Tiers::NONE,
        needs: Needs::Always,
        screen: false,
        cli: Cli::Yes,
        text: cells::why,
        sort: cells::no_order,
        filter: None,
        role: Role::Plain,
    },
];
