//! What the model hears, as actions: updates, log lines and resets, mirror
//! deltas, a collector's changes and ticks, a store's listings and re-reads.

use super::*;

/// What one member's lane says, as the model hears it.
pub fn heard(u: Update) -> Action {
    Action::Update(Box::new(u))
}

/// New lines of origin `at`'s events log, as the model hears them.
pub fn log_lines_in(at: usize, lines: Vec<Line>) -> Action {
    let news = claimtop::store::LogNews::Lines {
        log: claimtop::events::history::Log::Own,
        lines,
        next: claimtop::store::Cursor::start(),
        file_id: None,
    };
    Action::News(OriginIx(at as u16), news)
}

/// New lines of the first origin's events log.
pub fn log_lines(lines: Vec<Line>) -> Action {
    log_lines_in(0, lines)
}

/// Origin `at`'s events log was truncated or replaced.
pub fn log_reset_in(at: usize) -> Action {
    let log = claimtop::events::history::Log::Own;
    Action::News(OriginIx(at as u16), claimtop::store::LogNews::Reset { log })
}

/// A delta of member `at`'s mirror, as the model hears it.
pub fn mirrored(at: usize, delta: claimtop::store::mirror::Delta) -> Action {
    heard(Update {
        at: OriginIx(at as u16),
        delta: Some(delta),
        facts: None,
        tick: None,
    })
}

/// Ask the collector for `input` and apply what it sends; true when any
/// of it asked for a redraw.
pub fn collect(app: &mut App, c: &mut Collector, input: Input) -> bool {
    c.handle(input, NOW)
        .expect("the collector's reads")
        .into_iter()
        .fold(false, |dirty, u| update(app, heard(u)).redraw | dirty)
}

/// A second of the collector's clock, applied: what time changed, then
/// the tick.
pub fn tick(app: &mut App, c: &mut Collector, now: i64) -> bool {
    let dirty = c
        .handle(Input::Tick(now), now)
        .expect("the collector's reads")
        .into_iter()
        .fold(false, |dirty, u| update(app, heard(u)).redraw | dirty);
    // The clock says each tick, moved or not.
    update(app, Action::Tick(now)).redraw | dirty
}

/// What the root's feed would say of these paths changing: a lockfile of
/// its claims dir names its key, any other entry there is looked at, and
/// what is outside the claims dir names nothing.
pub fn changed(root: &Root, paths: Vec<PathBuf>) -> Input {
    use claimtop::claims::entry::{Entry, Role};
    let dir = root.claims_dir();
    let changes = paths
        .into_iter()
        .filter(|p| p.parent() == Some(dir.as_path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_os_string();
            if let Some(key) = claimtop::claims::key_of_lockfile(&name) {
                return Some(Change::Claim { key });
            }
            let role = Role::in_claims_dir(&name)?;
            Some(Change::Entry {
                entry: Entry::look(role, &p),
                path: p,
            })
        })
        .collect();
    Input::Feed(changes)
}

/// A store's listing as its collector's mirror hands it to the model: the
/// store's own verdicts stand (no pids judged here).
pub fn listed(listing: MemberListing, at: i64, resync: Option<String>) -> Action {
    let store = FixedStore(listing);
    let mut m = Mirror::new(
        claimtop::store::OriginIx(0),
        claimtop::store::Claims::rules(&store),
        None,
        at,
    );
    m.list(&store, at, resync).expect("a fixed listing");
    let delta = m.take_delta().expect("a listing");
    mirrored(0, delta)
}

/// A big store's first page, shown while the rest is listed.
pub fn head(listing: MemberListing, at: i64) -> Action {
    let mut a = listed(listing, at, None);
    if let Action::Update(u) = &mut a {
        if let Some(w) = u.delta.as_mut().and_then(|d| d.whole.as_mut()) {
            w.partial = true;
        }
    }
    a
}

/// Claims the collector read again (state Free: gone), with the counts its
/// mirror tallies once they are in `app`'s rows.
pub fn reread(app: &App, items: Vec<(Status, Option<claimtop::store::Tenure>)>, at: i64) -> Action {
    use claimtop::dashboard::testing::RowId;
    use claimtop::store::mirror::{Delta, Row, Tally};
    use std::collections::HashMap;
    let rows: Vec<Row> = items
        .into_iter()
        .map(|(s, tenure)| Row {
            path: s.file.clone(),
            status: std::sync::Arc::new(s),
            tenure,
        })
        .collect();
    let mut states: HashMap<RowId, ClaimState> = app
        .claims
        .live
        .by_row
        .iter()
        .filter(|(id, _)| !id.is_copy())
        .map(|(id, s)| (id.clone(), s.state))
        .collect();
    for row in &rows {
        let id = RowId::of(row.path.clone());
        match row.status.state {
            ClaimState::Free => states.remove(&id),
            st => states.insert(id, st),
        };
    }
    let mut counts = Counts::default();
    states.values().for_each(|st| counts.add(*st));
    let hazards = app.origins.origin(0).map(|o| o.tally.hazards.clone());
    mirrored(
        0,
        Delta {
            rows,
            tally: Some(Tally {
                counts,
                hazards: hazards.unwrap_or_default(),
            }),
            at,
            ..Delta::default()
        },
    )
}
