//! A first listing's pages, said to a face as rows while the rest of the
//! listing is read (a big store's, a fleet's copies host after host).

use super::Update;
use crate::claims::ItemRules;
use crate::store::backend::MemberListing;
use crate::store::compose::OriginIx;
use crate::store::mirror::{Delta, Row};
use std::sync::Arc;

/// A first listing's pages, said as rows while the rest is read: each
/// batch is said when the next page comes (a listing of one page says
/// none: the whole listing follows at once) and once it is at least as
/// big as everything said before it, so a face rebuilds its table a few
/// times over a big listing, not once a page.
pub(super) struct Pages {
    at: OriginIx,
    rules: ItemRules,
    words: bool,
    now: i64,
    pending: Vec<Row>,
    said: usize,
}

/// The smallest batch of a first listing's rows said on their own.
const PAGE_ROWS: usize = 1000;

impl Pages {
    pub(super) fn new(at: OriginIx, rules: ItemRules, words: bool, now: i64) -> Pages {
        Pages {
            at,
            rules,
            words,
            now,
            pending: Vec::new(),
            said: 0,
        }
    }

    pub(super) fn take(&mut self, page: &MemberListing, say: &mut dyn FnMut(Vec<Update>) -> bool) {
        if self.pending.len() >= PAGE_ROWS.max(self.said) {
            self.said += self.pending.len();
            let delta = Delta {
                rows: std::mem::take(&mut self.pending),
                at: self.now,
                ..Delta::default()
            };
            say(vec![Update {
                at: self.at,
                delta: Some(delta),
                facts: None,
                tick: None,
            }]);
        }
        for (i, s) in page.sweep.claims.iter().enumerate() {
            let mut s = s.clone();
            s.file = s.file.stamped(self.at.0, self.rules);
            if !self.words && s.record.is_some() {
                s.why = String::new();
            }
            self.pending.push(Row {
                path: s.file.clone(),
                tenure: page.tenures.get(i).copied().flatten(),
                status: Arc::new(s),
            });
        }
    }
}
