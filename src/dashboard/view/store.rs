//! The pieces of the screen that only a store with a connection has: the
//! header's store line and the table's columns with the lease countdown.

use super::{safe, Theme};
use crate::dashboard::app::{App, Column};
use crate::dashboard::store_view::{Link, StoreView};
use ratatui::text::{Line, Span};

/// The table's columns over a store: the file dashboard's, with the lease
/// countdown after the TTL (it is read next to it).
pub fn columns(full: bool, narrow: bool) -> &'static [Column] {
    use Column::*;
    if full {
        &[
            State, Key, Holder, Pid, Machine, Age, Ttl, Lease, Harness, Reason,
        ]
    } else if narrow {
        &[State, Key, Holder, Age, Lease]
    } else {
        &[State, Key, Holder, Pid, Age, Ttl, Lease]
    }
}

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
}
