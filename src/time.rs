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

/// An instant as an operator types one (`events --since/--until`):
/// RFC 3339 (`2026-12-01T03:00:00Z`, any offset), or `HH:MM[:SS]` today, in
/// UTC or, with `local`, in the local zone. `None` when it is neither.
pub fn parse_instant(text: &str, now_ms: i64, local: bool) -> Option<i64> {
    let text = text.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    let time = chrono::NaiveTime::parse_from_str(text, "%H:%M:%S")
        .or_else(|_| chrono::NaiveTime::parse_from_str(text, "%H:%M"))
        .ok()?;
    let now = chrono::DateTime::from_timestamp_millis(now_ms)?;
    if local {
        let today = now.with_timezone(&chrono::Local).date_naive();
        // A time skipped by a DST change has no instant; a repeated one
        // takes its first.
        let at = today
            .and_time(time)
            .and_local_timezone(chrono::Local)
            .earliest()?;
        Some(at.timestamp_millis())
    } else {
        Some(now.date_naive().and_time(time).and_utc().timestamp_millis())
    }
}

/// `--since`: a TTL-style duration counts back from now (`1h`: the last
/// hour), anything else is an instant as [`parse_instant`] reads it; `None`
/// for what [`read_instant`] refuses.
pub fn parse_since(text: &str, now_ms: i64, local: bool) -> Option<i64> {
    read_instant(text, now_ms, local).ok()
}

/// The latest instant any face reads or shows: 9999-12-31T23:59:59.999Z.
/// Past it (or before 1970) no log has a line, and no clock words it.
pub const LATEST_MS: i64 = 253_402_300_799_999;

/// Why a time typed for `--since`, `--as-of`, `:goto` or `:asof` names no
/// instant to read the log at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InstantError {
    #[error("not a time: 03:00 (today), 2026-12-01T03:00:00Z, or 1h (an hour ago)")]
    NotATime,
    #[error("that is before 1970 or after 9999: no log reaches it")]
    OutOfRange,
    #[error("that is in the future; the log can only say what was")]
    Future,
}

/// An instant as every face reads one: a duration back from now (`1h`),
/// RFC 3339, or `HH:MM[:SS]` today ([`parse_instant`]); refused when it
/// lies outside 1970..=9999 (a duration of a billion hours must not wrap
/// round to a time no clock can word).
pub fn read_instant(text: &str, now_ms: i64, local: bool) -> Result<i64, InstantError> {
    let at = match parse_ttl_ms(text) {
        // A saturated duration (too many digits) is as far out of range
        // as any.
        Some(ago) if ago < i64::MAX => now_ms.checked_sub(ago),
        Some(_) => None,
        None => Some(parse_instant(text, now_ms, local).ok_or(InstantError::NotATime)?),
    };
    at.filter(|t| (0..=LATEST_MS).contains(t))
        .ok_or(InstantError::OutOfRange)
}

/// An instant in the past, for "as of" (`list --as-of`, `:asof`): what
/// [`read_instant`] reads, and refused when it is after `now_ms` (`23:59:60`
/// today is tomorrow's first second).
pub fn read_past(text: &str, now_ms: i64, local: bool) -> Result<i64, InstantError> {
    let at = read_instant(text, now_ms, local)?;
    if at > now_ms {
        return Err(InstantError::Future);
    }
    Ok(at)
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

impl HumanMs {
    /// The words, written piece by piece: a sweep words a duration for
    /// thousands of claims, and `write!`'s argument machinery and integer
    /// padding were most of that cost.
    pub(crate) fn write_to<W: std::fmt::Write + ?Sized>(&self, w: &mut W) -> std::fmt::Result {
        let s = self.0.max(0) / 1000;
        let (big, big_unit, small, small_unit, pad) = match s {
            0..=59 => {
                push_decimal(w, s)?;
                return w.write_str("s");
            }
            60..=3599 => (s / 60, "m", s % 60, "s", true),
            3600..=86_399 => (s / 3600, "h", (s % 3600) / 60, "m", true),
            _ => (s / 86_400, "d", (s % 86_400) / 3600, "h", false),
        };
        push_decimal(w, big)?;
        w.write_str(big_unit)?;
        if pad && small < 10 {
            w.write_str("0")?;
        }
        push_decimal(w, small)?;
        w.write_str(small_unit)
    }
}

impl std::fmt::Display for HumanMs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write_to(f)
    }
}

/// `n` in decimal, written into `buf` (no formatter, no allocation: a
/// `list` writes one or more numbers for each of thousands of claims).
pub fn decimal(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// [`decimal`] onto a text writer.
pub(crate) fn push_decimal<W: std::fmt::Write + ?Sized>(w: &mut W, n: i64) -> std::fmt::Result {
    let mut buf = [0u8; 20];
    // Digits and a sign: always UTF-8.
    w.write_str(std::str::from_utf8(decimal(n, &mut buf)).map_err(|_| std::fmt::Error)?)
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
        // Years 0..=9999, every real claim's, are written by hand (a
        // sweep words this for every suspect claim, and chrono's
        // conversion plus `write!`'s padding was 2 000 instructions each);
        // anything else goes through chrono as before.
        if let Some(text) = utc_text(self.0) {
            // ASCII digits and separators only.
            return f.write_str(std::str::from_utf8(&text).map_err(|_| std::fmt::Error)?);
        }
        match chrono::DateTime::from_timestamp_millis(self.0) {
            Some(t) => write!(f, "{}", t.format("%Y-%m-%dT%H:%M:%SZ")),
            None => write!(f, "{}ms", self.0),
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for an epoch-ms instant in years 0..=9999.
fn utc_text(ms: i64) -> Option<[u8; 20]> {
    let secs = ms.div_euclid(1000);
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date (proleptic Gregorian), after Howard Hinnant's
    // `civil_from_days`: eras of 400 years from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        return None;
    }
    let mut out = *b"0000-00-00T00:00:00Z";
    let mut put = |at: usize, n: i64, width: usize| {
        let mut n = n;
        for i in (at..at + width).rev() {
            out[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, sod / 3_600, 2);
    put(14, sod / 60 % 60, 2);
    put(17, sod % 60, 2);
    Some(out)
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

/// Whether instants worded below the faces (a refusal's reason, a verb's
/// outcome) read in the local zone. Set once, at the edge, from
/// `--local-time`: the words are made where no face is at hand (in the
/// verbs, or by a publisher answering over the store), and the zone is a
/// setting of the whole process anyway, as `TZ` is.
static LOCAL_WORDS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Make [`instant_words`] read in the local zone (`--local-time`).
pub fn set_local_words(local: bool) {
    LOCAL_WORDS.store(local, std::sync::atomic::Ordering::Relaxed);
}

/// An instant as a verb's words say it: `2026-12-04T20:34:56Z`, or with
/// `--local-time` `2026-12-05T02:04:56+05:30`; `precise` adds the
/// milliseconds, for instants a guard compares to the millisecond.
pub fn instant_words(ms: i64, precise: bool) -> String {
    let fmt = match precise {
        true => "%Y-%m-%dT%H:%M:%S%.3f",
        false => "%Y-%m-%dT%H:%M:%S",
    };
    clock(
        ms,
        LOCAL_WORDS.load(std::sync::atomic::Ordering::Relaxed),
        fmt,
    )
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

    /// What `UtcHms` wrote before: chrono's fields, zero-padded.
    fn by_chrono(ms: i64) -> String {
        match chrono::DateTime::from_timestamp_millis(ms) {
            Some(t) => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            None => format!("{ms}ms"),
        }
    }

    proptest::proptest! {
        #[test]
        fn utc_text_by_hand_is_chronos(ms in -70_000_000_000_000i64..260_000_000_000_000i64) {
            proptest::prop_assert_eq!(UtcHms(ms).to_string(), by_chrono(ms));
        }
    }

    #[test]
    fn utc_text_at_the_edges_is_chronos() {
        let day = 86_400_000i64;
        for ms in [
            0,
            -1,
            1,
            999,
            -day,
            951_782_400_000,     // 2000-02-29
            4_107_542_399_999,   // 2100-02-28T23:59:59.999
            253_402_300_799_999, // 9999-12-31T23:59:59.999
            253_402_300_800_000, // 10000-01-01: past the fast path
            -62_167_219_200_000, // 0000-01-01
            -62_167_219_200_001, // one ms before year 0
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(UtcHms(ms).to_string(), by_chrono(ms), "{ms}");
        }
    }

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
    fn hand_written_durations_and_numbers_read_as_the_format_macro_wrote_them() {
        let by_format = |ms: i64| {
            let s = ms.max(0) / 1000;
            match s {
                0..=59 => format!("{s}s"),
                60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
                3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
                _ => format!("{}d{}h", s / 86_400, (s % 86_400) / 3600),
            }
        };
        let mut ms = 1;
        while ms < i64::MAX / 3 {
            for m in [ms - 1, ms, ms + 999, ms * 2 + 7] {
                assert_eq!(human_ms(m), by_format(m), "{m}");
            }
            ms *= 3;
        }
        for n in [
            0,
            7,
            -7,
            10,
            99,
            -100,
            1_764_460_000_000,
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(decimal(n, &mut [0; 20]), n.to_string().as_bytes());
        }
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

    #[test]
    fn since_reads_a_duration_back_from_now_and_an_instant_as_written() {
        let now = 1_764_558_000_000; // 2025-12-01T03:00:00Z
        assert_eq!(parse_since("1h", now, false), Some(now - 3_600_000));
        assert_eq!(parse_since("90", now, false), Some(now - 90_000));
        assert_eq!(
            parse_since("2025-11-30T23:00:00Z", now, false),
            Some(now - 4 * 3_600_000)
        );
        assert_eq!(
            parse_since("2025-12-01T04:00:00+01:00", now, false),
            Some(now)
        );
        assert_eq!(parse_since("02:30", now, false), Some(now - 1_800_000));
        assert_eq!(parse_since("02:30:15", now, false), Some(now - 1_785_000));
        for bad in [
            "",
            "yesterday",
            "25:00",
            "1x",
            "-5m",
            "2025-13-01T00:00:00Z",
        ] {
            assert_eq!(parse_since(bad, now, false), None, "{bad:?}");
        }
    }

    #[test]
    fn a_clock_time_is_today_in_the_zone_asked_for() {
        let now = 1_764_558_000_000; // 2025-12-01T03:00:00Z
        let local = parse_instant("03:00", now, true).unwrap();
        let offset_ms = i64::from(
            chrono::DateTime::from_timestamp_millis(now)
                .unwrap()
                .with_timezone(&chrono::Local)
                .offset()
                .local_minus_utc(),
        ) * 1000;
        // 03:00 local is 03:00 UTC less the zone's offset, on the local date.
        let day = 86_400_000;
        assert_eq!((local + offset_ms).rem_euclid(day), 3 * 3_600_000);
    }

    #[test]
    fn an_instant_past_any_clock_is_refused_not_wrapped() {
        use super::{read_instant, read_past, InstantError, LATEST_MS};
        let now = 1_764_547_200_000; // 2025-12-01T00:00:00Z
        assert_eq!(read_instant("1h", now, false), Ok(now - 3_600_000));
        assert_eq!(
            read_instant("1000000000000000h", now, false),
            Err(InstantError::OutOfRange),
            "saturated"
        );
        assert_eq!(
            read_instant("2000000000000h", now, false),
            Err(InstantError::OutOfRange),
            "before 1970"
        );
        assert_eq!(
            read_instant("yesterday", now, false),
            Err(InstantError::NotATime)
        );
        assert_eq!(
            read_instant("9999-12-31T23:59:59.999Z", now, false),
            Ok(LATEST_MS)
        );
        // "As of" refuses the future, however it is typed: 23:59:60 today
        // is tomorrow.
        assert_eq!(read_past("23:59:60", now, false), Err(InstantError::Future));
        assert_eq!(
            read_past("2999-01-01T00:00:00Z", now, false),
            Err(InstantError::Future)
        );
        assert_eq!(read_past("00:00", now, false), Ok(now));
        assert_eq!(read_past("10m", now, false), Ok(now - 600_000));
    }
}
