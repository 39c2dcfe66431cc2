//! Time, in one home: the clock, TTLs as people type them, instants in UTC
//! (or local time, where asked) and durations in words. The claims, the
//! events log and every face format time through here, so one fact reads
//! one way wherever it is shown.

/// Current UTC time as epoch milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Parse a human TTL (`1h`, `30m`, `3600s`, bare digits = SECONDS, as Python's
/// `_parse_ttl` and `sleep` read them) into milliseconds. `None` on garbage or
/// a non-positive result.
pub fn parse_ttl_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let unit_ms = match text.as_bytes().last()? {
        b'h' => 3_600_000,
        b'm' => 60_000,
        b's' => 1_000,
        b'0'..=b'9' => 1_000,
        _ => return None,
    };
    // Exactly one unit letter: "5hm" is garbage, not five somethings.
    let digits = match text.as_bytes().last() {
        Some(b'0'..=b'9') => text,
        _ => &text[..text.len() - 1],
    }
    .trim();
    let n: i64 = digits.parse().ok()?;
    Some(n.saturating_mul(unit_ms)).filter(|ms| *ms > 0)
}

/// A span as the TTL syntax (`1h`, `30m`, `90s`), exact when possible. A
/// single minute reads `60s`, the way the protocol's floor is spoken.
pub fn ttl_text(ms: i64) -> String {
    let s = ms / 1000;
    if s > 0 && s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s > 60 && s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// A duration in the largest two units that matter: `45s`, `3m12s`, `2h5m`,
/// `3d4h`.
pub fn human_ms(ms: i64) -> String {
    HumanMs(ms).to_string()
}

/// [`human_ms`] without the intermediate String.
pub(crate) struct HumanMs(pub(crate) i64);

impl std::fmt::Display for HumanMs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0.max(0) / 1000;
        match s {
            0..=59 => write!(f, "{s}s"),
            60..=3599 => write!(f, "{}m{:02}s", s / 60, s % 60),
            3600..=86_399 => write!(f, "{}h{:02}m", s / 3600, (s % 3600) / 60),
            _ => write!(f, "{}d{}h", s / 86_400, (s % 86_400) / 3600),
        }
    }
}

/// `2026-11-30T12:34:56Z` for an epoch-ms instant.
pub fn utc_hms(ms: i64) -> String {
    UtcHms(ms).to_string()
}

/// [`utc_hms`] without the intermediate String, and without strftime's
/// format-string parsing for the four-digit years every real claim has.
pub(crate) struct UtcHms(pub(crate) i64);

impl std::fmt::Display for UtcHms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use chrono::{Datelike, Timelike};
        match chrono::DateTime::from_timestamp_millis(self.0) {
            Some(t) if (0..=9999).contains(&t.year()) => write!(
                f,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
            Some(t) => write!(f, "{}", t.format("%Y-%m-%dT%H:%M:%SZ")),
            None => write!(f, "{}ms", self.0),
        }
    }
}

/// An epoch-ms instant in `fmt`, followed by its zone so it never reads
/// ambiguously: `Z` in UTC (the default), the offset (`+01:00`) in local
/// time (`--local-time`).
pub fn clock(ms: i64, local: bool, fmt: &str) -> String {
    let Some(t) = chrono::DateTime::from_timestamp_millis(ms) else {
        return format!("{ms}ms");
    };
    if local {
        let t = t.with_timezone(&chrono::Local);
        format!("{}{}", t.format(fmt), t.format("%:z"))
    } else {
        format!("{}Z", t.format(fmt))
    }
}

/// [`clock`] without the zone, for a view that says the zone once (the
/// timeline's axis).
pub fn bare_clock(ms: i64, local: bool, fmt: &str) -> String {
    let Some(t) = chrono::DateTime::from_timestamp_millis(ms) else {
        return format!("{ms}ms");
    };
    if local {
        t.with_timezone(&chrono::Local).format(fmt).to_string()
    } else {
        t.format(fmt).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_strings_parse_with_bare_digits_as_seconds() {
        assert_eq!(parse_ttl_ms("3h"), Some(10_800_000));
        assert_eq!(parse_ttl_ms("45m"), Some(2_700_000));
        assert_eq!(parse_ttl_ms("90s"), Some(90_000));
        assert_eq!(parse_ttl_ms("120"), Some(120_000));
        assert_eq!(parse_ttl_ms(" 2h  "), Some(7_200_000));
        for bad in ["", "abc", "0", "-5m", "1d", "h", "5hm", "5ss", "1.5h"] {
            assert_eq!(parse_ttl_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn utc_instants_read_exactly_as_strftime_writes_them() {
        for ms in [
            0,
            1_800_000_000_000,
            1_764_460_123_456,
            -1,
            -62_135_596_800_000,
            253_402_300_799_999,
            253_402_300_800_000,
            i64::MAX,
        ] {
            let want = chrono::DateTime::from_timestamp_millis(ms)
                .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_else(|| format!("{ms}ms"));
            assert_eq!(utc_hms(ms), want, "{ms}");
        }
    }

    #[test]
    fn durations_read_in_two_units() {
        assert_eq!(human_ms(45_000), "45s");
        assert_eq!(human_ms(192_000), "3m12s");
        assert_eq!(human_ms(7_500_000), "2h05m");
        assert_eq!(human_ms(-5), "0s");
        assert_eq!(human_ms(90_000_000), "1d1h");
    }

    #[test]
    fn times_say_their_zone() {
        assert_eq!(clock(1_800_000_000_000, false, "%H:%M:%S"), "08:00:00Z");
        let local = clock(1_800_000_000_000, true, "%H:%M:%S");
        assert!(
            local.ends_with(":00") && (local.contains('+') || local.contains('-')),
            "{local}"
        );
    }

    #[test]
    fn ttls_read_in_the_syntax_they_are_typed_in() {
        assert_eq!(ttl_text(10_000), "10s");
        assert_eq!(ttl_text(60_000), "60s");
        assert_eq!(ttl_text(90_000), "90s");
        assert_eq!(ttl_text(1_800_000), "30m");
        assert_eq!(ttl_text(86_400_000), "24h");
        for t in ["10s", "60s", "30m", "24h", "90s"] {
            assert_eq!(parse_ttl_ms(t).map(ttl_text).as_deref(), Some(t));
        }
    }
}
