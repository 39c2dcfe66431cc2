//! A published copy for `list --json`, kept as the bytes its host wrote.
//!
//! A host stores each copy as `list --json` printed it there: compact JSON,
//! as serde_json writes it. Most copies go out exactly as they were read,
//! with where they come from added at their end; parsing 200 000 of them
//! into trees only to write them again was most of a fleet's `list --json`.
//! So a copy whose bytes are provably what serde_json would write of them
//! ([`canonical`]) keeps its bytes; any other is parsed and written the plain
//! way ([`FleetItem::into_json`]). Both give the same bytes (the tests below
//! compare them on generated copies).

use super::fleet::{list_order, FleetItem, FleetRest, FleetState, PublishedRoot, SOURCE_PUBLISHED};
use crate::claims::census::count_copies;
use serde_json::Value;
use std::io::{self, Write};
use std::sync::Arc;

/// One root of one host: what each of its copies gains at its end.
#[derive(Debug, PartialEq)]
pub struct CopyRoot {
    pub host_id: String,
    pub root_id: String,
    /// `,"host":…,"source":"published","host_id":…,"root":…,"root_id":…}`,
    /// as [`FleetItem::into_json`] adds them.
    tail: Vec<u8>,
}

impl CopyRoot {
    pub fn new(host_id: &str, hostname: &str, root: &PublishedRoot) -> CopyRoot {
        let mut tail = Vec::with_capacity(128);
        let mut field = |name: &str, value: &str| {
            tail.extend_from_slice(b",\"");
            tail.extend_from_slice(name.as_bytes());
            tail.extend_from_slice(b"\":");
            // Writing a str into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut tail, value);
        };
        field("host", hostname);
        field("source", SOURCE_PUBLISHED);
        field("host_id", host_id);
        field("root", &root.path);
        field("root_id", &root.id);
        tail.push(b'}');
        CopyRoot {
            host_id: host_id.to_string(),
            root_id: root.id.clone(),
            tail,
        }
    }
}

/// A copy whose stored bytes print as they stand.
#[derive(Debug, Clone, PartialEq)]
pub struct RawCopy {
    pub root: Arc<CopyRoot>,
    bytes: Vec<u8>,
    /// Where its `"key"` and `"state"` strings are in `bytes` (no escapes
    /// in either).
    key: (u32, u32),
    state: Option<(u32, u32)>,
}

impl RawCopy {
    /// The copy as it stands, or None when its bytes are not exactly what
    /// serde_json writes of them (then it is parsed).
    pub fn of(root: &Arc<CopyRoot>, bytes: Vec<u8>) -> Result<RawCopy, Vec<u8>> {
        match canonical(&bytes) {
            Some(Found {
                key: Some(key),
                state,
            }) => Ok(RawCopy {
                root: Arc::clone(root),
                bytes,
                key,
                state,
            }),
            _ => Err(bytes),
        }
    }

    fn text(&self, (from, to): (u32, u32)) -> &str {
        // Checked as UTF-8 whole, cut at quotes.
        std::str::from_utf8(&self.bytes[from as usize..to as usize]).unwrap_or("")
    }

    pub fn key(&self) -> &str {
        self.text(self.key)
    }

    pub fn state(&self) -> &str {
        self.state.map_or("", |s| self.text(s))
    }

    pub fn write(&self, w: &mut dyn Write) -> io::Result<()> {
        w.write_all(&self.bytes[..self.bytes.len() - 1])?;
        w.write_all(&self.root.tail)
    }
}

/// A copy as `list --json` writes it: its bytes, or parsed.
#[derive(Debug)]
pub enum ListCopy {
    Raw(RawCopy),
    /// [`FleetItem::into_json`], with its [`list_order`].
    Json(Value, (String, String, String)),
}

impl ListCopy {
    pub fn of_item(item: FleetItem) -> ListCopy {
        let v = item.into_json();
        let order = list_order(&v);
        ListCopy::Json(v, order)
    }

    /// Its place among `list --json`'s claims: key, host id, root id.
    pub fn order(&self) -> (&str, &str, &str) {
        match self {
            ListCopy::Raw(r) => (r.key(), &r.root.host_id, &r.root.root_id),
            ListCopy::Json(_, (k, h, r)) => (k, h, r),
        }
    }

    /// [`ListCopy::order`] as bytes, which sort as the text does (and
    /// need no check that they are text).
    pub fn order_bytes(&self) -> (&[u8], &[u8], &[u8]) {
        match self {
            ListCopy::Raw(r) => {
                let (from, to) = r.key;
                let key = &r.bytes[from as usize..to as usize];
                (key, r.root.host_id.as_bytes(), r.root.root_id.as_bytes())
            }
            ListCopy::Json(_, (k, h, r)) => (k.as_bytes(), h.as_bytes(), r.as_bytes()),
        }
    }

    /// Its `"state"` ("" when it has none).
    pub fn state(&self) -> &str {
        match self {
            ListCopy::Raw(r) => r.state(),
            ListCopy::Json(v, _) => v.get("state").and_then(Value::as_str).unwrap_or(""),
        }
    }

    pub fn write(&self, w: &mut dyn Write) -> io::Result<()> {
        match self {
            ListCopy::Raw(r) => r.write(w),
            ListCopy::Json(v, _) => Ok(serde_json::to_writer(w, v)?),
        }
    }
}

/// What [`canonical`] found at the top of an object.
#[derive(Debug, PartialEq)]
struct Found {
    key: Option<(u32, u32)>,
    state: Option<(u32, u32)>,
}

/// Fields the copy must not have: they are what [`CopyRoot`] adds, and an
/// object having one already has it replaced in place.
const ADDED: [&[u8]; 5] = [b"host", b"source", b"host_id", b"root", b"root_id"];

/// Deeper than this, a copy is parsed (serde_json stops at 128).
const DEPTH_MAX: usize = 64;

/// `bytes` when they are one JSON object exactly as serde_json (keeping
/// the order of fields) writes it back after reading it: valid UTF-8, no
/// whitespace, no repeated field, integers of at most 18 digits (never
/// `-0`), no fractions or exponents, strings escaped only as serde_json
/// escapes them; and none of the [`ADDED`] fields at its top. Where the
/// top's `"key"` and `"state"` strings are, when they are strings with no
/// escapes. None for anything else: the caller then takes the plain way.
fn canonical(bytes: &[u8]) -> Option<Found> {
    std::str::from_utf8(bytes).ok()?;
    let mut s = Scan { b: bytes, at: 0 };
    let mut found = Found {
        key: None,
        state: None,
    };
    if s.peek()? != b'{' {
        return None;
    }
    s.object(0, Some(&mut found))?;
    (s.at == bytes.len()).then_some(found)
}

struct Scan<'a> {
    b: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1, None),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(|_| ()),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => self.integer(),
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        let end = self.at + w.len();
        (self.b.get(self.at..end)? == w).then(|| self.at = end)
    }

    fn integer(&mut self) -> Option<()> {
        let negative = self.peek()? == b'-';
        if negative {
            self.at += 1;
        }
        let from = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let digits = &self.b[from..self.at];
        let ok = match digits {
            [] => false,
            [b'0'] => !negative,
            [b'0', ..] => false,
            d => d.len() <= 18,
        };
        // A fraction or an exponent is left to serde_json.
        let next = self.peek();
        (ok && !matches!(next, Some(b'.' | b'e' | b'E'))).then_some(())
    }

    /// A string; where its text is (inside the quotes) and whether it has
    /// escapes.
    fn string(&mut self) -> Option<((usize, usize), bool)> {
        self.eat(b'"')?;
        let from = self.at;
        let mut escaped = false;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.at += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                        b'u' => self.control()?,
                        _ => return None,
                    }
                }
                c if c < 0x20 => return None,
                _ => self.at += 1,
            }
        }
        let to = self.at;
        self.at += 1;
        Some(((from, to), escaped))
    }

    /// `\u00xx` as serde_json writes it: lower-case hex, only for a control
    /// character that has no short escape.
    fn control(&mut self) -> Option<()> {
        let hex = self.b.get(self.at + 1..self.at + 5)?;
        let [b'0', b'0', hi, lo] = *hex else {
            return None;
        };
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let c = digit(hi)? * 16 + digit(lo)?;
        let short = matches!(c, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
        self.at += 5;
        (c < 0x20 && !short).then_some(())
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > DEPTH_MAX {
            return None;
        }
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(depth)?;
            if self.eat(b']').is_some() {
                return Some(());
            }
            self.eat(b',')?;
        }
    }

    /// An object; at the top (`found`), where its key and state are.
    fn object(&mut self, depth: usize, mut found: Option<&mut Found>) -> Option<()> {
        if depth > DEPTH_MAX {
            return None;
        }
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        let mut names: Vec<(usize, usize)> = Vec::new();
        loop {
            let ((from, to), _) = self.string()?;
            let name = &self.b[from..to];
            // Escapes are written one way only, so equal names are equal
            // bytes.
            if names.iter().any(|&(f, t)| &self.b[f..t] == name) {
                return None;
            }
            names.push((from, to));
            self.eat(b':')?;
            match found.as_deref_mut() {
                Some(_) if ADDED.contains(&name) => return None,
                Some(top) if name == b"key" || name == b"state" => {
                    let is_key = name == b"key";
                    if self.peek()? == b'"' {
                        let ((f, t), escaped) = self.string()?;
                        if escaped {
                            return None;
                        }
                        let at = Some((u32::try_from(f).ok()?, u32::try_from(t).ok()?));
                        match is_key {
                            true => top.key = at,
                            false => top.state = at,
                        }
                    } else {
                        self.value(depth)?;
                    }
                }
                _ => self.value(depth)?,
            }
            if self.eat(b'}').is_some() {
                return Some(());
            }
            self.eat(b',')?;
        }
    }
}

/// A fleet's copies with those kept as their bytes among them.
impl FleetState {
    /// [`FleetState::into_copies`] with the copies kept as their bytes
    /// (`raw`, an online host's) among them, each written as it stands.
    pub fn into_listed(mut self, raw: Vec<RawCopy>) -> (Vec<ListCopy>, FleetRest) {
        let items = std::mem::take(&mut self.items);
        let mut copies: Vec<ListCopy> = Vec::with_capacity(raw.len() + items.len());
        copies.extend(raw.into_iter().map(ListCopy::Raw));
        copies.extend(items.into_iter().map(ListCopy::of_item));
        let (none, mut rest) = self.into_copies();
        debug_assert!(none.is_empty());
        for c in &copies {
            rest.published += count_copies(std::iter::once(c.state()), true);
        }
        copies.sort_by(|a, b| a.order_bytes().cmp(&b.order_bytes()));
        (copies, rest)
    }
}

#[cfg(test)]
#[path = "raw_copy_tests.rs"]
mod tests;
