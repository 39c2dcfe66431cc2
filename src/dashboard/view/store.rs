//! The pieces of the screen that only a store with a connection has: the
//! header's store line, the hosts line and the lease in the detail pane.

use super::cells::{clock, safe, Theme};
use crate::claims::words::count;
use crate::claims::Status;
use crate::dashboard::model::store::{Link, StoreView};
use crate::dashboard::model::App;
use crate::dashboard::model::RowId;
use crate::store::fleet::RootState;
use crate::time::human_ms;
use ratatui::text::{Line, Span};

/// ` store etcd://…  endpoints a:1  leader m1  rev 42  ● connected`, or,
/// while the store is away, how old the view is instead of the cluster
/// facts (which are as old as the view).
pub fn header_line(app: &App, store: &StoreView, theme: &Theme) -> Line<'static> {
    let mut spans = vec![
        Span::styled(" store ", theme.label()),
        Span::raw(safe(&store.url).into_owned()),
    ];
    let link = store.link();
    let (dot, style) = match link {
        Link::Connected => ("●", theme.ok()),
        Link::Reconnecting { .. } => ("◌", theme.badge()),
        Link::Disconnected { .. } => ("○", theme.error()),
    };
    spans.push(Span::raw("  "));
    spans.push(Span::styled(
        format!("{dot} {}", store.link_text(app.local_time)),
        style,
    ));
    if let Some(info) = &store.info {
        let leader = info.leader.as_deref().unwrap_or("unknown");
        for (label, value) in [
            ("  endpoints ", safe(&info.endpoints).into_owned()),
            ("  leader ", safe(leader).into_owned()),
            ("  revision ", info.revision.to_string()),
        ] {
            spans.push(Span::styled(label, theme.label()));
            spans.push(Span::raw(value));
        }
    }
    Line::from(spans)
}

/// A site's link (`● connected`, `○ disconnected since …`) after a line
/// that names several origins, when it fits in `width`.
pub fn link_spans(
    line: &mut Line<'static>,
    app: &App,
    store: &StoreView,
    theme: &Theme,
    width: u16,
) {
    let (dot, style) = match store.link() {
        Link::Connected => ("●", theme.ok()),
        Link::Reconnecting { .. } => ("◌", theme.badge()),
        Link::Disconnected { .. } => ("○", theme.error()),
    };
    let text = format!("  {dot} {}", store.link_text(app.local_time));
    if line.width() + text.chars().count() <= usize::from(width) {
        line.spans.push(Span::styled(text, style));
    }
}

/// While the store is away, the table says how old what it shows is.
pub fn mark_view<'a>(title: &mut Vec<Span<'a>>, app: &App, store: &StoreView, theme: &Theme) {
    if let Some(stale) = store.stale_view_text(app.now, app.local_time) {
        title.push(Span::styled(format!(" · {stale}"), theme.error()));
    }
    if let Some(n) = store.partial {
        title.push(Span::styled(
            format!(" · listing the store: its first {n} claims so far"),
            theme.dim(),
        ));
    }
    if let Some(s) = store.fleet.loading() {
        title.push(Span::styled(
            format!(" · loading {} of {}", store.fleet.rows(), s.counts.total()),
            theme.dim(),
        ));
    }
}

/// ` hosts  alpha 3 · beta 12 (1 root unreadable) · gamma offline, last seen
/// 12:00:03`: each publishing host with its published claims and the roots
/// whose claims are unknown, an offline one greyed with when it was last seen. Shortened until it fits `width`: first the
/// online hosts' counts go, then the names, down to the totals.
pub fn hosts_line(app: &App, store: &StoreView, theme: &Theme, width: u16) -> Line<'static> {
    let fleet = &store.fleet;
    let offline = |h: &crate::store::fleet::HostInfo| {
        let mut text = format!(
            "{} offline, last seen {}",
            safe(&h.label),
            clock(h.last_seen_ms, app.local_time, "%H:%M:%S")
        );
        // Its rows are what it last said: counted apart, never as live.
        let kept = fleet.count_of(&h.host_id);
        if kept > 0 {
            text.push_str(&format!(" ({kept} last known)"));
        }
        text
    };
    // A root whose claims are unknown is said even when the counts go: its
    // host's count is not all it holds.
    let online = |h: &crate::store::fleet::HostInfo, counts: bool| {
        let n = fleet.count_of(&h.host_id);
        let name = safe(&h.label);
        let mut text = if counts {
            format!("{name} {n}")
        } else {
            name.into_owned()
        };
        for state in [RootState::Unreadable, RootState::Offline] {
            let k = h.unknown_roots().filter(|r| r.state == state).count();
            if k > 0 {
                let roots = if k == 1 { "root" } else { "roots" };
                text.push_str(&format!(" ({k} {roots} {})", state.as_str()));
            }
        }
        text
    };
    let label = " hosts ";
    let room = usize::from(width).saturating_sub(label.len());
    for counts in [true, false] {
        let parts: Vec<(String, bool)> = fleet
            .hosts
            .iter()
            .map(|h| {
                if h.online {
                    (online(h, counts), true)
                } else {
                    (offline(h), false)
                }
            })
            .collect();
        let len: usize = parts.iter().map(|(t, _)| t.chars().count() + 3).sum();
        if len <= room {
            let mut spans = vec![Span::styled(label, theme.label())];
            for (i, (text, up)) in parts.into_iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" · ", theme.dim()));
                }
                spans.push(if up {
                    Span::raw(text)
                } else {
                    Span::styled(text, theme.dim())
                });
            }
            return Line::from(spans);
        }
    }
    let down = fleet.hosts.iter().filter(|h| !h.online).count();
    let claims: usize = fleet
        .hosts
        .iter()
        .filter(|h| h.online)
        .map(|h| fleet.counts.get(&h.host_id).copied().unwrap_or(0))
        .sum();
    let mut spans = vec![
        Span::styled(label, theme.label()),
        Span::raw(format!(
            "{} online ({})",
            fleet.hosts.len() - down,
            count(claims, "claim")
        )),
    ];
    if down > 0 {
        spans.push(Span::styled(format!(" · {down} offline"), theme.dim()));
    }
    let unknown: usize = fleet.hosts.iter().map(|h| h.unknown_roots().count()).sum();
    if unknown > 0 {
        spans.push(Span::raw(format!(" · {unknown} roots' claims unknown")));
    }
    Line::from(spans)
}

/// The help's words on the fleet, while hosts publish into the store.
pub fn help_note(app: &App) -> Option<String> {
    app.store.as_ref().filter(|v| v.fleet.is_active()).map(|_| {
        "Published hosts: rows with source \"published\" are read-only copies of a \
             host's claims (the host column says which). F on one asks that host's \
             publisher to force-release it in its own root and shows its answer; a, r and \
             n act on the store's own claims only. An offline host is greyed with when it \
             was last seen: its claims are unknown, not free. The filter's host:NAME keeps \
             one host's claims; h lists each host's hazards under its name (x cleans only \
             this machine's), and the events pane marks a host's events host=NAME."
            .to_string()
    })
}

/// The detail pane's lines for a store claim: the fencing revision and the
/// lease, (label, value).
pub fn tenure_fields(app: &App, id: &RowId, s: &Status) -> Vec<(&'static str, String)> {
    if let Some(o) = app.store.as_ref().and_then(|v| v.fleet.origin(id)) {
        // A copy has no lease of its own here: say whose it is instead.
        let safe = |t: &str| crate::sanitize::sanitize(t).into_owned();
        return vec![
            (
                "published",
                format!("by {} ({})", safe(&o.hostname), safe(&o.host_id)),
            ),
            (
                "root",
                format!("{} (id {})", safe(&o.root_path), safe(&o.root_id)),
            ),
            (
                "copy",
                "read-only: F asks the host to force-release it in its root".into(),
            ),
        ];
    }
    let Some(h) = app.store.as_ref().and_then(|v| v.held(&s.file)) else {
        return Vec::new();
    };
    let l = h.lease(app.shown_now());
    vec![
        (
            "revision",
            format!(
                "{} (fencing token: hand it to the work this claim guards)",
                h.revision
            ),
        ),
        (
            "lease",
            format!(
                "{} · ttl {} · {} left",
                l.id_hex(),
                human_ms(l.ttl_s * 1000),
                human_ms(h.remaining_ms(app.shown_now()))
            ),
        ),
    ]
}
