//! The real dashboard in a real terminal (tmux) over either store, and
//! what its screen says, read back as data: the header's counts and hazard
//! count, and the table's rows. Every wait polls up to a deadline; no sleep
//! is ever the assertion.

use crate::backend::{claims_of, counts_of, hazards_of, Backend};
use crate::common::tmux::Tmux;
use claimtop::claims::Counts;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_claimtop");
/// Generous: a loaded CI box can be slow to spawn and to notice a change.
pub const PATIENCE: Duration = Duration::from_secs(15);
/// How long the faces may take to agree after a change: the watch, a
/// re-read and a redraw on the dashboard's side.
pub const SETTLE: Duration = Duration::from_secs(10);

pub struct Dash {
    tmux: Tmux,
}

impl Dash {
    /// The dashboard over `b` at 160×48, once it shows its first screen;
    /// None (after saying why) when tmux is missing outside CI.
    pub fn start(b: &Backend) -> Option<Dash> {
        Dash::over(b.home(), &b.store_args())
    }

    /// The dashboard over what `args` name (`--root`s and `--store`s, in
    /// any mix), in the sandboxed `home`.
    pub fn over(home: &std::path::Path, args: &[String]) -> Option<Dash> {
        if let Err(why) = Tmux::available() {
            crate::common::cannot_run(&format!("the dashboard tests need tmux: {why}"));
            return None;
        }
        let tmux = Tmux::start(160, 48);
        tmux.wait_for("the shell prompt", PATIENCE, |s| !s.trim().is_empty());
        let args: Vec<String> = args.iter().map(|a| quote(a)).collect();
        tmux.type_line(&format!(
            "env -u FNO_CLAIMS_STORE -u FNO_CLAIMS_ROOT HOME={} USER=tester {} {}; echo EXIT=$?",
            quote(&home.to_string_lossy()),
            quote(BIN),
            args.join(" ")
        ));
        let dash = Dash { tmux };
        dash.wait_for("the first screen", |s| {
            header(s).is_some() && (!s.contains(" store ") || s.contains("● connected"))
        });
        Some(dash)
    }

    pub fn screen(&self) -> String {
        self.tmux.screen()
    }

    /// Press keys by tmux name (`F`, `Enter`, `Escape` ...).
    pub fn keys(&self, keys: &[&str]) {
        self.tmux.keys(keys);
    }

    /// Type text literally (into a form or a confirmation).
    pub fn type_text(&self, text: &str) {
        self.tmux.run(&["send-keys", "-t", "e2e", "-l", text]);
    }

    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.tmux.wait_for(what, PATIENCE, pred)
    }

    /// Select the row of `key`: `/` filters to it (so it is the only row,
    /// and selected), Enter keeps the filter.
    pub fn select(&self, key: &str) {
        self.keys(&["/"]);
        self.type_text(&format!("key:{key}"));
        self.keys(&["Enter"]);
        self.wait_for(&format!("the row of {key} alone"), |s| {
            let r = rows(s);
            r.len() == 1 && r[0].0 == key
        });
    }

    /// Drop the filter (Esc clears it once the input is closed).
    pub fn unselect(&self) {
        self.keys(&["Escape"]);
        self.wait_for("the filter gone", |s| !s.contains("· filter:"));
    }

    /// q, answering the quit question (if any) by keeping the claims.
    pub fn quit(self) {
        self.keys(&["q"]);
        std::thread::sleep(Duration::from_millis(200));
        if self.screen().contains("release them and quit") {
            self.keys(&["k"]);
        }
        self.wait_for("a clean exit", |s| s.contains("EXIT=0"));
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The header's counts and hazard count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub counts: Counts,
    pub hazards: usize,
}

/// The header line read back: `● N live ◐ N suspect ✖ N stale ‼ N
/// corrupted [? N unreadable] ⚠ N hazards` (the words may be gone on a
/// narrow terminal; the symbols and numbers stay).
pub fn header(screen: &str) -> Option<Header> {
    let line = screen.lines().next()?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let after = |sym: &str| -> Option<usize> {
        let i = words.iter().position(|w| *w == sym)?;
        words.get(i + 1)?.parse().ok()
    };
    Some(Header {
        counts: Counts {
            live: after("●")?,
            suspect: after("◐")?,
            stale: after("✖")?,
            corrupted: after("‼")?,
            // Said only when there are any.
            unreadable: after("?").unwrap_or(0),
            last_known: after("◌").unwrap_or(0),
        },
        hazards: after("⚠")?,
    })
}

/// The table's rows as (key, state word), by key: a row is `[▶] SYMBOL
/// WORD KEY …` left of the detail pane's border.
pub fn rows(screen: &str) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = screen
        .lines()
        .skip(2)
        .map(|l| l.split('│').next().unwrap_or_default())
        .filter_map(|l| {
            let words: Vec<&str> = l.trim_start_matches('▶').split_whitespace().collect();
            let [sym, state, key, ..] = words.as_slice() else {
                return None;
            };
            if !["●", "◐", "✖", "‼", "?"].contains(sym) {
                return None;
            }
            // The state column is 11 wide: `? unreadable` is cut short.
            let state = ["live", "suspect", "stale", "corrupted", "unreadable"]
                .into_iter()
                .find(|w| w.starts_with(state.trim_end_matches('…')))?;
            Some((key.to_string(), state.to_string()))
        })
        .collect();
    rows.sort();
    rows
}

/// Everything each face says at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Faces {
    pub header: Option<Header>,
    pub rows: Vec<(String, String)>,
    pub list_counts: Counts,
    pub list_rows: Vec<(String, String)>,
    pub doctor: Vec<String>,
}

impl Faces {
    pub fn read(b: &Backend, dash: &Dash) -> (Faces, String) {
        let screen = dash.screen();
        let list = b.list();
        let doctor = b.doctor();
        let faces = Faces {
            header: header(&screen),
            rows: rows(&screen),
            list_counts: counts_of(&list),
            list_rows: claims_of(&list)
                .into_iter()
                .map(|(k, s, _)| (k, s))
                .collect(),
            doctor: hazards_of(&doctor),
        };
        (faces, screen)
    }

    /// The header's counts are `list`'s, its hazard count is `doctor`'s,
    /// and the table's rows are `list`'s claims in their states.
    pub fn agree(&self) -> bool {
        self.header
            == Some(Header {
                counts: self.list_counts,
                hazards: self.doctor.len(),
            })
            && self.rows == self.list_rows
    }
}

/// What the faces said last when they did not come to agree, and the screen.
pub type Disagreed = Box<(Faces, String)>;

/// Wait (up to [`SETTLE`]) for the dashboard, `list` and `doctor` to
/// agree; what they said, or what they said last and the screen.
pub fn settle(b: &Backend, dash: &Dash) -> Result<Faces, Disagreed> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let (faces, screen) = Faces::read(b, dash);
        if faces.agree() {
            return Ok(faces);
        }
        if Instant::now() >= deadline {
            return Err(Box::new((faces, screen)));
        }
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// [`settle`], or fail saying where the faces part.
pub fn must_settle(b: &Backend, dash: &Dash, after: &str) -> Faces {
    settle(b, dash).unwrap_or_else(|d| {
        let (f, screen) = *d;
        panic!(
            "{}: after {after} the faces disagree:\n header {:?}\n list   {:?}\n doctor {} {:?}\n rows   {:?}\n listed {:?}\n{screen}",
            b.name(),
            f.header,
            f.list_counts,
            f.doctor.len(),
            f.doctor,
            f.rows,
            f.list_rows
        )
    })
}
