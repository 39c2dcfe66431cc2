//! What a search looks for: a string, or with a leading `~` a regular
//! expression, both matched ignoring ASCII case; in each line as written
//! (the JSON, as `grep -i` sees it) or, given a [`Shown`], in the text a
//! face shows for the line, so what is found is what is on screen.

use std::ops::Range;
use std::sync::Arc;

use memchr::memmem;

/// The text a face shows for one raw line of the log.
pub type Shown = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A `~` search whose pattern does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a regular expression: {0}")]
pub struct NeedleError(String);

/// A search string, or pattern.
#[derive(Clone)]
pub struct Needle {
    text: String,
    lower: Vec<u8>,
    regex: Option<regex::Regex>,
    shown: Option<Shown>,
}

impl std::fmt::Debug for Needle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Needle")
            .field("text", &self.text)
            .field("regex", &self.regex.is_some())
            .field("shown", &self.shown.is_some())
            .finish()
    }
}

/// Two needles are the same search when they read the same and look in the
/// same text (a count of one stands for the other): a plain string ignoring
/// case, a pattern as typed (`(?-i)` may make its case count).
impl PartialEq for Needle {
    fn eq(&self, other: &Needle) -> bool {
        let same = match self.regex {
            Some(_) => self.text == other.text,
            None => self.lower == other.lower,
        };
        same && self.regex.is_some() == other.regex.is_some()
            && self.shown.is_some() == other.shown.is_some()
    }
}

/// A plain string over the lines as written.
impl From<&str> for Needle {
    fn from(text: &str) -> Needle {
        Needle::new(text)
    }
}

impl Needle {
    /// A plain string, matched in each line as written.
    pub fn new(text: &str) -> Needle {
        Needle {
            text: text.to_string(),
            lower: text.as_bytes().to_ascii_lowercase(),
            regex: None,
            shown: None,
        }
    }

    /// What the operator typed: a plain string, or after a leading `~` a
    /// regular expression (ignoring case as the plain search does; `(?-i)`
    /// turns that off).
    pub fn parse(text: &str) -> Result<Needle, NeedleError> {
        let mut n = Needle::new(text);
        if let Some(pattern) = text.strip_prefix('~') {
            let re = regex::RegexBuilder::new(pattern)
                .case_insensitive(true)
                // A pattern typed into a pane is small; a bound keeps a
                // hostile one from taking the log thread's memory.
                .size_limit(1 << 20)
                .build()
                .map_err(|e| NeedleError(gist(&e.to_string())))?;
            n.regex = Some(re);
        }
        Ok(n)
    }

    /// Match in the text `shown` makes of each line rather than the line.
    pub fn shown_as(mut self, shown: Shown) -> Needle {
        self.shown = Some(shown);
        self
    }

    /// As typed (with its `~`).
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.lower.is_empty() || self.regex.as_ref().is_some_and(|_| self.lower.len() == 1)
    }

    /// A plain string over the raw bytes: a block is searched whole, with
    /// no line looked at by itself.
    fn is_raw(&self) -> bool {
        self.regex.is_none() && self.shown.is_none()
    }

    /// The needle as it is compared: ASCII-lowercased bytes.
    pub fn lowered(&self) -> &[u8] {
        &self.lower
    }

    /// Every match in `text`, left to right, not overlapping, as byte
    /// ranges of `text` on char boundaries (a regex's empty matches are
    /// none: nothing would show them).
    pub fn ranges(&self, text: &str) -> Vec<Range<usize>> {
        if self.is_empty() {
            return Vec::new();
        }
        if let Some(re) = &self.regex {
            return re
                .find_iter(text)
                .filter(|m| !m.is_empty())
                .map(|m| m.range())
                .collect();
        }
        // ASCII lowercasing keeps every byte where it was, and the needle
        // is valid UTF-8: its ranges lie on char boundaries.
        let hay = text.as_bytes().to_ascii_lowercase();
        let mut out: Vec<Range<usize>> = Vec::new();
        for p in memmem::find_iter(&hay, &self.lower) {
            if out.last().is_none_or(|r| p >= r.end) {
                out.push(p..p + self.lower.len());
            }
        }
        out
    }

    /// Does this line match (in the text shown for it, when that is set)?
    pub fn matches(&self, line: &str) -> bool {
        if self.is_empty() {
            return false;
        }
        match &self.shown {
            Some(shown) => self.matches_text(&shown(line)),
            None => self.matches_text(line),
        }
    }

    fn matches_text(&self, text: &str) -> bool {
        match &self.regex {
            Some(re) => re.find_iter(text).any(|m| !m.is_empty()),
            None => memmem::find(&text.as_bytes().to_ascii_lowercase(), &self.lower).is_some(),
        }
    }

    /// Position of the first (or, `last`, the last) match in `block`. A
    /// raw needle lowercases the block in place, then runs one vectorised
    /// substring search over it, instead of a case-folding compare at
    /// every byte; any other looks at the block's lines one by one and
    /// answers with the start of the matching line.
    pub fn find_in(&self, block: &mut [u8], last: bool) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        if !self.is_raw() {
            return self.line_in(block, last);
        }
        block.make_ascii_lowercase();
        if last {
            memmem::rfind(block, &self.lower)
        } else {
            memmem::find(block, &self.lower)
        }
    }

    /// The start of the first (or last) line of `block` that matches.
    fn line_in(&self, block: &[u8], last: bool) -> Option<usize> {
        let mut starts = line_starts(block);
        let hit = |&(at, line): &(usize, &[u8])| {
            self.matches(&String::from_utf8_lossy(line)).then_some(at)
        };
        if last {
            starts.rev().find_map(|l| hit(&l))
        } else {
            starts.find_map(|l| hit(&l))
        }
    }

    /// The starts of the lines of `block` (its first byte starts one) that
    /// match, pushed on `found` each plus `base`.
    /// A raw needle lowercases `block` in place, as [`Needle::find_in`].
    pub fn lines_matching(&self, block: &mut [u8], base: u64, found: &mut Vec<u64>) {
        if self.is_empty() {
            return;
        }
        if self.is_raw() {
            block.make_ascii_lowercase();
            let hay = &*block;
            let mut next_line = 0usize;
            for p in memmem::find_iter(hay, &self.lower) {
                if p < next_line {
                    continue;
                }
                let start = memchr::memrchr(b'\n', &hay[..p]).map_or(0, |i| i + 1);
                found.push(base + start as u64);
                next_line = memchr::memchr(b'\n', &hay[p..]).map_or(hay.len(), |i| p + i + 1);
            }
            return;
        }
        for (at, line) in line_starts(block) {
            if self.matches(&String::from_utf8_lossy(line)) {
                found.push(base + at as u64);
            }
        }
    }
}

/// Each line of `block` with where it starts (without its `\n`).
fn line_starts(block: &[u8]) -> impl DoubleEndedIterator<Item = (usize, &[u8])> {
    let mut at = 0usize;
    block
        .split(|&b| b == b'\n')
        .map(move |line| {
            let start = at;
            at += line.len() + 1;
            (start, line)
        })
        .collect::<Vec<_>>()
        .into_iter()
        .filter(|(_, line)| !line.is_empty())
}

/// A regex error's last line, what went wrong: the lines above it point
/// into the pattern, and a status line has one line.
fn gist(text: &str) -> String {
    let last = text.lines().last().unwrap_or(text);
    last.trim().trim_start_matches("error: ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_stands_for_a_search_that_reads_the_same() {
        let p = |t: &str| Needle::parse(t).expect("parses");
        assert_eq!(p("GPU"), p("gpu"), "a plain string ignores case");
        assert_ne!(p("~(?-i)GPU"), p("~(?-i)gpu"), "a pattern may not");
        assert_ne!(p("~gpu"), p("gpu"));
        assert!(p("~").is_empty() && p("").is_empty());
    }
}
