//! Reading `/metrics` over plain HTTP: claimtop's exporter, and etcd's own
//! (its gRPC counters say what a client asked of it).

use std::process::{Child, Command, Stdio};

/// The body of one GET of `/metrics` from `addr`, in the classic text
/// format (no `Accept` header), as `promtool` and curl get it.
pub fn metrics_text(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    // Bytes, not text: a big answer comes in chunks, whose size lines may
    // fall inside a multi-byte character.
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).expect("response");
    let at = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head and body");
    let head = String::from_utf8_lossy(&bytes[..at]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let body = &bytes[at + 4..];
    let body = match head.contains("transfer-encoding: chunked") {
        true => dechunk(body),
        false => body.to_vec(),
    };
    String::from_utf8_lossy(&body).into_owned()
}

/// A chunked body's bytes without its size lines, which otherwise cut
/// whichever series lines they fall into.
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rest.len());
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size = String::from_utf8_lossy(&rest[..eol]);
        let size = size.split(';').next().unwrap_or_default().trim();
        let n = usize::from_str_radix(size, 16).expect("a chunk size");
        if n == 0 {
            return out;
        }
        let data = &rest[eol + 2..];
        out.extend_from_slice(&data[..n]);
        rest = &data[n + 2..];
    }
}

/// How many gRPC calls etcd at `addr` has started, by method
/// (`grpc_server_started_total`, from its own `/metrics`).
pub fn grpc_started(addr: &str) -> std::collections::BTreeMap<String, f64> {
    grpc_by_method(addr, "grpc_server_started_total")
}

/// A gRPC counter of etcd at `addr` (`grpc_server_msg_received_total`:
/// messages, a keep-alive stream's renewals among them), by method.
pub fn grpc_by_method(addr: &str, series: &str) -> std::collections::BTreeMap<String, f64> {
    let mut by_method = std::collections::BTreeMap::new();
    let text = metrics_text(addr);
    let head = format!("{series}{{");
    for line in text.lines() {
        let Some((labels, n)) = line
            .strip_prefix(head.as_str())
            .and_then(|l| l.rsplit_once(' '))
        else {
            continue;
        };
        let n: f64 = n.parse().expect("a count");
        let method = labels
            .split(',')
            .find_map(|l| l.strip_prefix("grpc_method=\""))
            .map(|m| m.trim_end_matches(['"', '}']).to_string())
            .unwrap_or_default();
        *by_method.entry(method).or_insert(0.0) += n;
    }
    by_method
}

/// One GET of `/metrics` from `addr`: `series → value`.
pub fn scrape(addr: &str) -> std::collections::BTreeMap<String, f64> {
    metrics_text(addr)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(k, v)| (k.to_string(), v.parse().expect("number")))
        .collect()
}

/// Start `cmd` (a `claimtop --store ...` command) as `metrics --listen
/// 127.0.0.1:0`, and the address its first line on stderr names.
pub fn start_metrics(cmd: Command) -> (Child, String) {
    start_metrics_with(cmd, &[])
}

/// [`start_metrics`] with more of `metrics`' flags.
pub fn start_metrics_with(mut cmd: Command, flags: &[&str]) -> (Child, String) {
    use std::io::BufRead;
    let mut server = cmd
        .args(["metrics", "--listen", "127.0.0.1:0"])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn metrics");
    let mut line = String::new();
    std::io::BufReader::new(server.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("the address line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.trim().strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (server, addr)
}
