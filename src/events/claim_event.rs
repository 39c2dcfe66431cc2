//! One line of the audit log read as the claim event it records: its kind,
//! key, holders and the most precise time it carries, borrowed from the
//! line (unknown fields skipped, not built), and the envelope's timestamp
//! read without a calendar library on the hot path.

use super::kind::EventKind;
use serde::Deserialize;
use std::borrow::Cow;

/// The fields of a claim event the timeline uses, borrowed from the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimEvent<'a> {
    pub kind: EventKind,
    /// When it happened, epoch ms (the most precise field the event has).
    pub at: i64,
    pub key: &'a str,
    pub holder: Option<&'a str>,
    pub acquired_at: Option<i64>,
    pub previous_holder: Option<&'a str>,
    pub previous_acquired_at: Option<i64>,
    pub operator: Option<&'a str>,
}

/// A [`ClaimEvent`] that owns its strings: carried beside a line cut at
/// the reader's cap ([`super::tail::Line::claim`]), whose text no longer
/// holds the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedClaimEvent {
    pub kind: EventKind,
    pub at: i64,
    pub key: String,
    pub holder: Option<String>,
    pub acquired_at: Option<i64>,
    pub previous_holder: Option<String>,
    pub previous_acquired_at: Option<i64>,
    pub operator: Option<String>,
}

impl ClaimEvent<'_> {
    pub fn to_owned_event(&self) -> OwnedClaimEvent {
        OwnedClaimEvent {
            kind: self.kind,
            at: self.at,
            key: self.key.to_string(),
            holder: self.holder.map(String::from),
            acquired_at: self.acquired_at,
            previous_holder: self.previous_holder.map(String::from),
            previous_acquired_at: self.previous_acquired_at,
            operator: self.operator.map(String::from),
        }
    }
}

impl OwnedClaimEvent {
    pub fn as_event(&self) -> ClaimEvent<'_> {
        ClaimEvent {
            kind: self.kind,
            at: self.at,
            key: &self.key,
            holder: self.holder.as_deref(),
            acquired_at: self.acquired_at,
            previous_holder: self.previous_holder.as_deref(),
            previous_acquired_at: self.previous_acquired_at,
            operator: self.operator.as_deref(),
        }
    }
}

/// The envelope as written; unknown fields are skipped, not built.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    ts: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    data: Option<WireData<'a>>,
}

#[derive(Deserialize)]
struct WireData<'a> {
    #[serde(borrow, default)]
    key: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    holder: Option<Cow<'a, str>>,
    #[serde(default)]
    acquired_at: Option<i64>,
    #[serde(default)]
    duration_held_ms: Option<i64>,
    #[serde(borrow, default)]
    previous_holder: Option<Cow<'a, str>>,
    #[serde(default)]
    previous_acquired_at: Option<i64>,
    #[serde(borrow, default)]
    operator: Option<Cow<'a, str>>,
}

/// Latest instant an event may carry: 9999-12-31T23:59:59.999Z. Times come
/// from other writers' clocks and JSON; outside 1970..=9999 they are
/// nonsense, and near `i64`'s ends they would overflow every span.
const MAX_TIME_MS: i64 = 253_402_300_799_999;

fn sane(ms: Option<i64>) -> Option<i64> {
    ms.filter(|t| (0..=MAX_TIME_MS).contains(t))
}

/// Parse one log line into the claim event it records, and hand it to `f`.
/// `None` for lines that are not claim events (other types, bad JSON, a
/// field of the wrong type, no key, no usable time).
pub fn with_claim_event<R>(line: &str, f: impl FnOnce(&ClaimEvent<'_>) -> R) -> Option<R> {
    let wire: Wire<'_> = serde_json::from_str(line).ok()?;
    claim_event_of(&wire, f)
}

/// [`with_claim_event`] for a line as bytes: text that is not UTF-8 is
/// read as the lossy text a line reader would have made of it.
pub fn with_claim_event_bytes<R>(line: &[u8], f: impl FnOnce(&ClaimEvent<'_>) -> R) -> Option<R> {
    match std::str::from_utf8(line) {
        Ok(text) => with_claim_event(text, f),
        Err(_) => with_claim_event(&String::from_utf8_lossy(line), f),
    }
}

/// [`with_claim_event`] for a line read piece by piece (one too long to
/// hold: a `--reason` of megabytes): the claim fields are kept, everything
/// else is walked past, so memory is one buffer plus those few strings.
pub fn with_claim_event_read<R>(
    line: impl std::io::Read,
    f: impl FnOnce(&ClaimEvent<'_>) -> R,
) -> Option<R> {
    let reader = std::io::BufReader::with_capacity(64 * 1024, line);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let wire = Wire::deserialize(&mut de).ok()?;
    de.end().ok()?;
    claim_event_of(&wire, f)
}

fn claim_event_of<R>(wire: &Wire<'_>, f: impl FnOnce(&ClaimEvent<'_>) -> R) -> Option<R> {
    let kind = EventKind::parse(&wire.kind)?;
    let data = wire.data.as_ref()?;
    let key = data.key.as_deref()?;
    let ts = sane(wire.ts.as_deref().and_then(parse_ts));
    let acquired_at = sane(data.acquired_at);
    // The ms fields are more precise than `ts` (whole seconds), where the
    // event type says what they mean.
    let at = match kind {
        EventKind::Acquired | EventKind::Reclaimed | EventKind::Reacquired => acquired_at.or(ts),
        EventKind::Released => match (acquired_at, data.duration_held_ms) {
            (Some(a), Some(d)) => sane(a.checked_add(d)).or(ts),
            _ => ts,
        },
        _ => ts,
    }?;
    let ev = ClaimEvent {
        kind,
        at,
        key,
        holder: data.holder.as_deref(),
        acquired_at,
        previous_holder: data.previous_holder.as_deref(),
        previous_acquired_at: sane(data.previous_acquired_at),
        operator: data.operator.as_deref(),
    };
    Some(f(&ev))
}

/// `2026-11-30T12:34:56Z` (the envelope's form) as epoch ms; other forms
/// go through chrono's RFC 3339 parser.
pub fn parse_ts(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        b.get(r)?.iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    if b.len() == 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'Z'
    {
        let (y, mo, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
        let (h, mi, s) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
            return None;
        }
        return Some((days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s) * 1000);
    }
    chrono::DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm), so the hot path needs no calendar library.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_timestamp_parses_to_the_same_instant_as_chrono() {
        for ts in [
            "2026-11-30T12:34:56Z",
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
        ] {
            let want = chrono::DateTime::parse_from_rfc3339(ts)
                .unwrap()
                .timestamp_millis();
            assert_eq!(parse_ts(ts), Some(want), "{ts}");
        }
        assert_eq!(parse_ts("2026-13-30T12:34:56Z"), None);
        assert_eq!(parse_ts("yesterday"), None);
    }
}
