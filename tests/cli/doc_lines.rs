//! Every `claimtop …` line of README.md and docs/guide.md runs, and exits as
//! the document says, so that a new team following them meets no surprise.
//!
//! The rules:
//! - The lines are those of the documents' ```` ```sh ```` blocks, and the
//!   `$ ` lines of ```` ```console ```` blocks, whose command is `claimtop`
//!   (after any `NAME=value` words). Each ```` ```bash ```` block is a script:
//!   it runs whole, with bash, and must exit 0.
//! - A line must exit 0, unless its comment says `(exit N)`.
//! - A document is one session: its lines run in order in one `sh` that
//!   reads them as a reader types them, so a claim taken without `--pid` is
//!   bound to that shell, alive until the document ends. `HOME` and the
//!   working directory are a scratch directory; `$FNO_CLAIMS_ROOT` is a
//!   root inside it, the shared root the guide asks for.
//! - The README's lines run over a root holding the stuck claim its
//!   force-release line is for: `node:gpu`, held by `gemini:cli-7f2e`, its
//!   TTL running and its pid gone (suspect). The guide starts from nothing.
//! - What runs after `--` is the reader's own work: `make` and `./deploy.sh`
//!   are stubs that exit 0.
//! - A `>` into a file under `~` gets its directory made first, and so does
//!   a `--root ~/…`: the reader's project directories exist.
//! - The dashboard (no subcommand) needs a terminal: its lines are parsed
//!   as the binary parses them (clap, then its own checks), not run.
//! - Lines that run until stopped (`events --follow`, `metrics`, `publish`)
//!   are started on their own, stopped with SIGTERM once they show they
//!   work (a first line of output; the metrics page answering; the log line
//!   naming a root it publishes), and must then exit 0. `metrics` listens
//!   on port 0, not on the line's port, which may be taken.
//! - Lines with an `etcd://` store run against a scratch etcd when the
//!   test is built with `--features etcd` (the URL's hosts replaced by it,
//!   its prefix kept); a default build can only parse them, and says so.

use crate::common::{self, BIN};
use claimtop::cli::args::{Cli, Command as Sub};
use clap::Parser;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// How long a line may take before the test calls it hung: generous, as
/// the property is only "it returns" (the machine may be loaded).
const HUNG: Duration = Duration::from_secs(60);

#[test]
fn every_claimtop_line_of_the_readme_runs_as_it_says() {
    let world = World::new();
    // The README's force-release line frees a stuck key: plant one.
    let root = common::root_in(world.root());
    let mut stuck = common::record(
        "node:gpu",
        "gemini:cli-7f2e",
        common::dead_pid(),
        claimtop::time::now_ms(),
    );
    stuck.expires_at = Some(stuck.acquired_at + 30 * 60_000);
    common::plant(&root, &stuck);
    world.run_doc("README.md");
}

#[test]
fn every_claimtop_line_of_the_guide_runs_as_it_says() {
    World::new().run_doc("docs/guide.md");
}

/// One runnable piece of a document.
#[derive(Debug)]
struct Piece {
    at: String,
    text: String,
    script: bool,
}

/// The pieces of `text` the rules above name, in order.
fn pieces(doc: &str, text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut fence: Option<(String, usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let at = format!("{doc}:{}", i + 1);
        if let Some(info) = line.trim_start().strip_prefix("```") {
            match fence.take() {
                Some((lang, start, body)) if lang == "bash" => out.push(Piece {
                    at: format!("{doc}:{start}"),
                    text: body,
                    script: true,
                }),
                Some(_) => {}
                None => fence = Some((info.trim().to_string(), i + 1, String::new())),
            }
            continue;
        }
        let Some((lang, _, body)) = fence.as_mut() else {
            continue;
        };
        let command = match lang.as_str() {
            "bash" => {
                body.push_str(line);
                body.push('\n');
                continue;
            }
            "sh" => line.trim(),
            "console" => match line.trim().strip_prefix("$ ") {
                Some(c) => c,
                None => continue,
            },
            _ => continue,
        };
        if command_word(command) == Some("claimtop") {
            out.push(Piece {
                at,
                text: command.to_string(),
                script: false,
            });
        }
    }
    assert!(fence.is_none(), "{doc}: a code block is never closed");
    out
}

/// The command a shell line runs: its first word after `NAME=value` ones.
fn command_word(line: &str) -> Option<&str> {
    line.split_whitespace()
        .find(|w| !w.split_once('=').is_some_and(|(n, _)| is_name(n)))
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The status a line's comment promises: `(exit N)`, else 0.
fn expected_status(line: &str) -> i32 {
    line.split("(exit ")
        .nth(1)
        .and_then(|rest| rest.split_once(')'))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0)
}

/// A line's words as `sh` would split them, up to a comment or a
/// redirection (enough for the documents' lines: quotes, no expansions
/// that matter to parsing).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                w.extend(chars.by_ref().take_while(|&q| q != '\''));
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                w.extend(chars.by_ref().take_while(|&q| q != '"'));
            }
            '#' if word.is_none() => break,
            '>' | '|' | ';' | '&' if word.is_none() => break,
            c if c.is_whitespace() => out.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    out
}

/// What the rules do with a line, from the command line the binary would
/// parse.
enum Way {
    Run,
    ParseOnly,
    /// Runs until stopped; the sign that it works.
    Until(Sign),
}

enum Sign {
    FirstLine,
    MetricsPage,
    Publishing,
}

fn way(piece: &Piece) -> (Way, Cli) {
    let argv: Vec<String> = words(&piece.text)
        .into_iter()
        .skip_while(|w| w != "claimtop")
        .collect();
    let cli = Cli::try_parse_from(&argv)
        .and_then(|cli| cli.check().map(|()| cli))
        .and_then(|cli| cli.check_roots_kept(&argv).map(|()| cli))
        .unwrap_or_else(|e| panic!("{}: `{}` does not parse: {e}", piece.at, piece.text));
    let way = match &cli.command {
        None => Way::ParseOnly,
        Some(Sub::Events(e)) if e.follow => Way::Until(Sign::FirstLine),
        Some(Sub::Metrics(_)) => Way::Until(Sign::MetricsPage),
        Some(Sub::Publish(_)) => Way::Until(Sign::Publishing),
        Some(_) => Way::Run,
    };
    (way, cli)
}

/// A scratch home with a root, the stubs and, when built for it, an etcd.
struct World {
    home: tempfile::TempDir,
    #[cfg(feature = "etcd")]
    etcd: std::cell::OnceCell<Option<crate::etcd_common::Etcd>>,
}

impl World {
    fn new() -> World {
        let home = common::tempdir();
        let bin = home.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(BIN, bin.join("claimtop")).unwrap();
        for stub in [bin.join("make"), home.path().join("deploy.sh")] {
            std::fs::write(&stub, "#!/bin/sh\nexit 0\n").unwrap();
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(&stub, mode).unwrap();
        }
        std::fs::create_dir_all(home.path().join("agents")).unwrap();
        World {
            home,
            #[cfg(feature = "etcd")]
            etcd: std::cell::OnceCell::new(),
        }
    }

    fn root(&self) -> PathBuf {
        self.home.path().join("agents")
    }

    /// A command with the scratch environment: nothing of the caller's
    /// roots, stores or settings reaches it.
    fn command(&self, program: &str) -> Command {
        let path = format!(
            "{}:{}",
            self.home.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut c = Command::new(program);
        c.current_dir(self.home.path())
            .env("HOME", self.home.path())
            .env("PATH", path)
            .env("USER", "tester")
            .env("FNO_CLAIMS_ROOT", self.root())
            .env_remove("FNO_CLAIMS_STORE")
            .env_remove("XDG_CONFIG_HOME");
        c
    }

    fn run_doc(&self, doc: &str) {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc))
            .unwrap_or_else(|e| panic!("{doc}: {e}"));
        let all = pieces(doc, &text);
        assert!(all.len() >= 10, "{doc}: only {} lines found", all.len());
        let mut session = Session::start(self);
        for piece in &all {
            if piece.script {
                self.script(piece);
                continue;
            }
            let Some(line) = self.for_this_build(piece) else {
                continue;
            };
            self.make_dirs_named(&line);
            match way(piece).0 {
                Way::ParseOnly => {}
                Way::Run => {
                    let (status, out) = session.run(&line);
                    let want = expected_status(&piece.text);
                    assert_eq!(
                        status, want,
                        "{}: `{line}` exited {status}, the document says {want}\n{out}",
                        piece.at
                    );
                }
                Way::Until(sign) => self.until(piece, &line, sign),
            }
        }
    }

    /// The line as this build runs it: an etcd URL pointed at the scratch
    /// etcd, or `None` (said on stderr) where this build cannot run it.
    fn for_this_build(&self, piece: &Piece) -> Option<String> {
        if !piece.text.contains("etcd://") && !piece.text.contains("etcds://") {
            return Some(piece.text.clone());
        }
        #[cfg(feature = "etcd")]
        {
            let etcd = self.etcd.get_or_init(crate::etcd_common::Etcd::single);
            let Some(etcd) = etcd else {
                eprintln!("{}: parsed only: no etcd to run it against", piece.at);
                let _ = way(piece);
                return None;
            };
            let endpoint = etcd.endpoints().join(",");
            Some(
                piece
                    .text
                    .split(' ')
                    .map(|w| match w.split_once("etcd://") {
                        Some((before, rest)) => {
                            let prefix = rest.find('/').map_or("", |i| &rest[i..]);
                            format!("{before}etcd://{endpoint}{prefix}")
                        }
                        None => w.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        }
        #[cfg(not(feature = "etcd"))]
        {
            let _ = way(piece);
            eprintln!(
                "{}: parsed only, not run: this build has no etcd store \
                 (cargo test --features etcd --test cli doc_lines runs it)",
                piece.at
            );
            None
        }
    }

    /// `> ~/dir/file` and `--root ~/dir`: the reader has `~/dir`, the
    /// scratch home does not.
    fn make_dirs_named(&self, line: &str) {
        let home = self.home.path();
        if let Some((_, target)) = line.split_once("> ~/") {
            let file = target.split_whitespace().next().unwrap_or_default();
            if let Some(dir) = home.join(file).parent() {
                std::fs::create_dir_all(dir).unwrap();
            }
        }
        for root in line.split("--root ~/").skip(1) {
            let dir = root.split_whitespace().next().unwrap_or_default();
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
    }

    fn script(&self, piece: &Piece) {
        let out = self
            .command("bash")
            .arg("-c")
            .arg(&piece.text)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: the script exited {:?}\n{}{}",
            piece.at,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Start a line that runs until stopped, wait for its sign, stop it.
    fn until(&self, piece: &Piece, line: &str, sign: Sign) {
        let line = match sign {
            Sign::MetricsPage => any_port(line),
            _ => line.to_string(),
        };
        let mut child = self
            .command("sh")
            .arg("-c")
            .arg(format!("exec {line}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (stream, want): (Box<dyn Read + Send>, &str) = match sign {
            Sign::FirstLine => (Box::new(child.stdout.take().unwrap()), ""),
            Sign::MetricsPage => (Box::new(child.stderr.take().unwrap()), "serving metrics at"),
            Sign::Publishing => (Box::new(child.stderr.take().unwrap()), "publishing root="),
        };
        let lines = lines_of(stream);
        let mut before = String::new();
        let seen = loop {
            match lines.recv_timeout(HUNG) {
                Ok(l) if l.contains(want) => break l,
                Ok(l) => before.push_str(&format!("{l}\n")),
                Err(_) => {
                    let _ = child.kill();
                    panic!("{}: `{line}` never showed {want:?}:\n{before}", piece.at);
                }
            }
        };
        if let Sign::MetricsPage = sign {
            let page = get(&common::metrics_address(&seen));
            assert!(page.contains("claimtop_up 1"), "{}: {page}", piece.at);
        }
        // SAFETY: kill(2) on a child of ours that has not been waited for.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = wait_for(&mut child);
        // `metrics`, `publish` and `events --follow` promise exit 0 on
        // SIGTERM, whenever it comes.
        assert_eq!(
            status.code(),
            Some(0),
            "{}: `{line}` on SIGTERM: {status:?}",
            piece.at
        );
    }
}

/// `--listen ADDR` made `--listen 127.0.0.1:0`.
fn any_port(line: &str) -> String {
    let mut out: Vec<&str> = line.split(' ').collect();
    if let Some(i) = out.iter().position(|w| *w == "--listen") {
        if i + 1 < out.len() {
            out[i + 1] = "127.0.0.1:0";
        }
    }
    out.join(" ")
}

fn lines_of(stream: Box<dyn Read + Send>) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn get(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to metrics");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// How the child ended, once it is gone.
fn wait_for(child: &mut Child) -> ExitStatus {
    let deadline = std::time::Instant::now() + HUNG;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One `sh` reading lines as a reader types them.
struct Session {
    child: Child,
    input: ChildStdin,
    output: Receiver<String>,
    dir: PathBuf,
    n: usize,
}

impl Session {
    fn start(world: &World) -> Session {
        let mut child = world
            .command("sh")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = lines_of(Box::new(child.stdout.take().unwrap()));
        let dir = world.home.path().join(".session");
        std::fs::create_dir_all(&dir).unwrap();
        Session {
            child,
            input,
            output,
            dir,
            n: 0,
        }
    }

    /// Run one line; its status, and its output for a failure's message.
    fn run(&mut self, line: &str) -> (i32, String) {
        self.n += 1;
        let (out, err) = (self.dir.join("out"), self.dir.join("err"));
        // The line's own stdin is not the session's: a command that reads
        // it would eat the lines after it.
        writeln!(
            self.input,
            "{{\n{line}\n}} >'{}' 2>'{}' </dev/null\necho \"@@ {} $?\"",
            out.display(),
            err.display(),
            self.n
        )
        .unwrap();
        self.input.flush().unwrap();
        let done = format!("@@ {} ", self.n);
        let status = loop {
            match self.output.recv_timeout(HUNG) {
                Ok(l) => match l.strip_prefix(&done) {
                    Some(s) => break s.trim().parse().unwrap(),
                    None => continue,
                },
                Err(_) => {
                    let _ = self.child.kill();
                    panic!("`{line}` did not return within {HUNG:?}");
                }
            }
        };
        let text = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        (
            status,
            format!("stdout:\n{}stderr:\n{}", text(&out), text(&err)),
        )
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_rules_read_lines_as_a_shell_and_a_reader_would() {
    assert_eq!(
        words(r#"claimtop acquire k --holder h --reason "fix the test" # ok (exit 3)"#),
        [
            "claimtop",
            "acquire",
            "k",
            "--holder",
            "h",
            "--reason",
            "fix the test"
        ]
    );
    assert_eq!(
        words("claimtop completions bash > ~/x"),
        ["claimtop", "completions", "bash"]
    );
    assert_eq!(
        expected_status("claimtop acquire k --holder h   # held (exit 3)"),
        3
    );
    assert_eq!(
        expected_status("claimtop acquire k --holder h --wait=10m # (exit 3 after 10m)"),
        0
    );
    assert_eq!(
        command_word("FNO_CLAIMS_ROOT=~/a:~/b claimtop doctor"),
        Some("claimtop")
    );
    let doc = "text\n```sh\nclaimtop list\ncargo install --path .\n```\n```console\n$ claimtop status k\nk  free\n```\n```bash\nclaimtop list\n```\n";
    let found: Vec<(String, bool)> = pieces("d", doc)
        .into_iter()
        .map(|p| (p.text, p.script))
        .collect();
    assert_eq!(
        found,
        [
            ("claimtop list".to_string(), false),
            ("claimtop status k".to_string(), false),
            ("claimtop list\n".to_string(), true)
        ]
    );
}
