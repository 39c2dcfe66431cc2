//! The events pane's search over the whole log, as less and lnav search:
//! `/` then Enter lands on the nearest match at or above the cursor (the
//! pane opens at the log's end, where a reader of a log looks first), `n`
//! goes to the next match towards newer lines and `N` back, and either
//! wraps at the log's end to its other end. The title counts the matches
//! ("match 3 of 41"): a pass over the whole history, which the events
//! service runs on its own thread, never this one.

use super::browse::{Browse, Hits, Land, Search, PAGE};
use crate::events::backward::{Needle, SearchFrom};
use crate::events::service::{Anchor, Matches, Request};

impl Browse {
    /// Enter in the search input with `text` typed (empty: the last
    /// search again): count the matches, and find the nearest one at or
    /// above the cursor.
    pub fn submit_input(&mut self, text: &str, asks: &mut Vec<Request>) {
        let text = text.to_string();
        if !text.is_empty() {
            self.next_id += 1;
            self.search = Some(Search {
                needle: Needle::new(&text),
                id: 0,
                running: false,
                older: true,
                count_id: self.next_id,
                hits: Hits::default(),
                focus: None,
            });
            asks.push(Request::Count {
                id: self.next_id,
                needle: text,
            });
        }
        // Before the line after the cursor: the cursor's own line first.
        let from = match (self.rows.get(self.cursor + 1), self.selected()) {
            (Some(next), _) => SearchFrom::Before(next.line.offset),
            (None, Some(r)) if !self.at_end => SearchFrom::Before(r.line.offset),
            _ => SearchFrom::Before(u64::MAX),
        };
        self.ask_search(from, true, asks);
    }

    /// `n` (`older` false: towards newer lines) / `N`: the next matching
    /// line from the cursor, wrapping at the log's end.
    pub fn find(&mut self, older: bool, asks: &mut Vec<Request>) {
        let from = match self.selected() {
            Some(r) if older => SearchFrom::Before(r.line.offset),
            Some(r) => SearchFrom::After(r.line.offset),
            None if older => SearchFrom::Before(u64::MAX),
            None => SearchFrom::Start,
        };
        self.ask_search(from, older, asks);
    }

    fn ask_search(&mut self, from: SearchFrom, older: bool, asks: &mut Vec<Request>) {
        let Some(s) = &mut self.search else {
            return;
        };
        self.next_id += 1;
        s.id = self.next_id;
        s.running = true;
        s.older = older;
        self.message = None;
        asks.push(Request::Search {
            id: s.id,
            needle: s.needle.text().to_string(),
            from,
            wrap: true,
        });
    }

    /// Esc: the search is forgotten, and its count stopped.
    pub fn clear_search(&mut self, asks: &mut Vec<Request>) {
        if self.search.take().is_some() {
            self.next_id += 1;
            asks.push(Request::Count {
                id: self.next_id,
                needle: String::new(),
            });
        }
        self.message = None;
    }

    /// The service's answer to search `id`; the words for the status line
    /// when it wrapped.
    pub fn on_search(
        &mut self,
        id: u64,
        found: Option<u64>,
        wrapped: bool,
        asks: &mut Vec<Request>,
    ) -> Option<String> {
        let s = self.search.as_mut().filter(|s| s.id == id)?;
        s.running = false;
        s.focus = found;
        s.hits.rank = None;
        let Some(at) = found else {
            self.message = Some(format!(
                "no {} matches \"{}\"",
                self.nouns.entry,
                crate::sanitize::sanitize(s.needle.text())
            ));
            return None;
        };
        let end = if s.older { "bottom" } else { "top" };
        self.request(Anchor::At(at), PAGE, PAGE + 1, Land::At(at), asks);
        wrapped.then(|| format!("search wrapped to the {end}"))
    }

    /// How far the service's count of the matches is.
    pub fn on_matches(&mut self, m: Matches) {
        if let Some(s) = self.search.as_mut().filter(|s| s.count_id == m.id) {
            s.hits = Hits {
                counted: m.counted,
                done: m.done,
                rank: m.rank,
            };
        }
    }

    /// Does this row match the search?
    pub fn is_match(&self, row: &super::browse::BrowseRow) -> bool {
        self.search
            .as_ref()
            .is_some_and(|s| s.needle.matches(&row.line.text))
    }

    /// Is the cursor on the match the last search found?
    pub fn on_focus(&self) -> bool {
        let focus = self.search.as_ref().and_then(|s| s.focus);
        focus.is_some() && self.selected().map(|r| r.line.offset) == focus
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::model::browse::tests::page;

    fn browsing(out: &mut Vec<Request>) -> Browse {
        let mut b = Browse::default();
        b.open(false, out);
        out.clear();
        b.on_page(page(1000, 401, false, true));
        b
    }

    fn typed(b: &mut Browse, text: &str, out: &mut Vec<Request>) -> (u64, u64, SearchFrom, bool) {
        b.submit_input(text, out);
        let Some(Request::Search { id, from, wrap, .. }) = out.pop() else {
            panic!("{out:?}")
        };
        let Some(Request::Count { id: count, needle }) = out.pop() else {
            panic!("{out:?}")
        };
        assert_eq!(needle, text);
        (id, count, from, wrap)
    }

    #[test]
    fn enter_counts_the_matches_and_looks_back_from_the_cursors_own_line() {
        let out = &mut Vec::new();
        let mut b = browsing(out);
        b.move_by(-10, out);
        out.clear();
        let (_, _, from, wrap) = typed(&mut b, "k7", out);
        // The cursor is on line 1390: the search includes it.
        assert_eq!(from, SearchFrom::Before(1391 * 100));
        assert!(wrap);
    }

    #[test]
    fn n_goes_towards_newer_lines_and_capital_n_back_both_wrapping() {
        let out = &mut Vec::new();
        let mut b = browsing(out);
        let (id, _, _, _) = typed(&mut b, "k7", out);
        b.on_search(id, Some(1307 * 100), false, out);
        out.clear();
        b.find(false, out);
        let Some(Request::Search { from, wrap, .. }) = out.pop() else {
            panic!()
        };
        assert_eq!((from, wrap), (SearchFrom::After(1400 * 100), true));
        b.find(true, out);
        let Some(Request::Search { from, .. }) = out.pop() else {
            panic!()
        };
        assert_eq!(from, SearchFrom::Before(1400 * 100));
    }

    #[test]
    fn a_wrapped_answer_says_which_end_it_wrapped_to_and_moves_there() {
        let out = &mut Vec::new();
        let mut b = browsing(out);
        let (id, _, _, _) = typed(&mut b, "k7", out);
        assert_eq!(
            b.on_search(id - 1, Some(5), true, out),
            None,
            "a stale answer"
        );
        assert!(out.is_empty());
        assert_eq!(
            b.on_search(id, Some(7_000), true, out).as_deref(),
            Some("search wrapped to the bottom")
        );
        assert_eq!(
            out.pop(),
            Some(Request::Page {
                anchor: Anchor::At(7_000),
                before: PAGE,
                after: PAGE + 1
            })
        );
        b.find(false, out);
        let Some(Request::Search { id, .. }) = out.pop() else {
            panic!()
        };
        assert_eq!(
            b.on_search(id, Some(100), true, out).as_deref(),
            Some("search wrapped to the top")
        );
        assert_eq!(
            b.on_search(id, Some(100), false, out),
            None,
            "answered once"
        );
    }

    #[test]
    fn no_match_at_all_says_so_in_the_title() {
        let out = &mut Vec::new();
        let mut b = browsing(out);
        let (id, _, _, _) = typed(&mut b, "zz\u{1b}", out);
        assert_eq!(b.on_search(id, None, false, out), None);
        let m = b.message.clone().unwrap_or_default();
        assert!(m.starts_with("no line matches \"zz"), "{m}");
        assert!(!m.contains('\u{1b}'), "escaped: {m:?}");
    }

    #[test]
    fn the_count_of_an_earlier_needle_is_not_taken_for_this_ones() {
        let out = &mut Vec::new();
        let mut b = browsing(out);
        let (_, first, _, _) = typed(&mut b, "k7", out);
        let (id, second, _, _) = typed(&mut b, "k8", out);
        b.on_search(id, Some(1308 * 100), false, out);
        let m = |id, counted| Matches {
            id,
            counted,
            done: true,
            rank: Some(2),
        };
        b.on_matches(m(first, 99));
        assert_eq!(b.search.as_ref().map(|s| s.hits), Some(Hits::default()));
        b.on_matches(m(second, 5));
        let hits = b.search.as_ref().map(|s| s.hits).unwrap_or_default();
        assert_eq!((hits.counted, hits.rank), (5, Some(2)));
        assert!(b.on_focus() || b.waiting(), "the page around it is asked");
    }

    #[test]
    fn esc_forgets_the_search_and_stops_its_count() {
        let out = &mut Vec::new();
        let mut b = browsing(out);
        typed(&mut b, "k7", out);
        b.clear_search(out);
        assert!(b.search.is_none());
        assert!(
            matches!(out.pop(), Some(Request::Count { needle, .. }) if needle.is_empty()),
            "{out:?}"
        );
    }
}
