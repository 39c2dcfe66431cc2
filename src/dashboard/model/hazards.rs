//! The `h` list's entries, in the order it draws them, and which one is
//! selected: what Enter goes to and `x` acts on.

use super::App;
use crate::claims::{Hazard, HazardAt};

impl App {
    /// Every hazard the view counts, most urgent kind first: this view's
    /// own (root by root when there are several), then what publishing
    /// hosts found in theirs, host by host.
    pub fn hazard_entries(&self) -> Vec<Hazard> {
        // A host's hazards are its copies' member's, each saying where.
        let (mut own, mut published): (Vec<Hazard>, Vec<Hazard>) =
            self.hazards().into_iter().partition(|h| h.copy().is_none());
        if self.origins.several() {
            // Stable: each root's keep their severity order.
            own.sort_by_key(|h| self.origins.of_path(h.path()));
        }
        let at = |h: &Hazard| h.copy().map(|c| (c.host_id.clone(), c.root.clone()));
        published.sort_by_cached_key(at);
        own.extend(published);
        own
    }

    /// The selected entry of the `h` list.
    pub fn selected_hazard(&self) -> Option<Hazard> {
        self.hazard_entries().into_iter().nth(self.hazard_cursor)
    }

    /// The table row a hazard is about: the claim file it names (or the
    /// store key), when the table shows it.
    pub fn row_of_hazard(&self, h: &Hazard) -> Option<usize> {
        let shown = self.shown();
        self.table.rows.iter().position(|id| {
            shown.get(id).is_some_and(|s| match &h.at {
                HazardAt::Path(p) => AsRef::<std::path::Path>::as_ref(&s.file) == p.as_path(),
                HazardAt::Key(k) => s.key == **k,
                HazardAt::Copy(_) => false,
            })
        })
    }
}
