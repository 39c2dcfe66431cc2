//! `claimtop publish` (mirror local roots into etcd) and `force-release
//! --host` (ask a publishing host to do it). Only with the `etcd` feature;
//! without it both answer that this build has no etcd support.

use super::args::{ForceArgs, GlobalArgs, PublishArgs};
use super::output::{CmdResult, Out};
use crate::claims::Roots;
use crate::store::StoreUrl;

/// Test-only: the machine id a publisher announces, so that two publishers
/// on one machine act as two hosts. Never set it in production: two hosts
/// with one id would overwrite each other's mirror.
pub const TEST_MACHINE_ID_ENV: &str = "CLAIMTOP_TEST_MACHINE_ID";

/// What a build without etcd says when asked to reach one.
#[cfg(not(feature = "etcd"))]
fn not_built() -> crate::store::StoreError {
    crate::store::StoreError::NotBuilt {
        scheme: "etcd".into(),
        feature: "etcd",
    }
}

#[cfg(not(feature = "etcd"))]
pub fn publish(
    _url: &StoreUrl,
    _roots: &Roots,
    _a: PublishArgs,
    _g: &GlobalArgs,
    out: &mut Out,
) -> CmdResult {
    out.error(&not_built().to_string())
}

#[cfg(not(feature = "etcd"))]
pub fn force_release_on_host(
    _url: &StoreUrl,
    _a: ForceArgs,
    _g: &GlobalArgs,
    out: &mut Out,
) -> CmdResult {
    out.error(&not_built().to_string())
}

#[cfg(feature = "etcd")]
pub use with_etcd::{force_release_on_host, publish};

#[cfg(feature = "etcd")]
mod with_etcd {
    use super::*;
    use crate::claims::{self, ForceOpts};
    use crate::cli::output::{EXIT_DECLINED, EXIT_OK};
    use crate::publish::{Level, PublishOpts, Publisher};
    use crate::sanitize::sanitize;
    use crate::store::compose::{Origin, Store};
    use crate::store::etcd::fleet::{FleetAsk, FleetError};
    use crate::store::etcd::sink::EtcdSink;
    use crate::store::etcd::EtcdStore;
    use crate::store::file::feed::FeedOpts;
    use crate::store::file::FileStore;
    use crate::store::Backend;
    use serde_json::{json, Value};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    /// `heartbeat`: how often the connection's own traffic (a publisher's
    /// lease renewals) proves etcd is there, so pings need not.
    fn connect(
        url: &StoreUrl,
        g: &GlobalArgs,
        heartbeat: Option<Duration>,
    ) -> Result<EtcdStore, String> {
        match url {
            StoreUrl::Etcd(target) => {
                let mut opts = crate::store::etcd::conn_opts(&g.open_ctx(None));
                opts.heartbeat = heartbeat;
                EtcdStore::connect(target, &opts).map_err(|e| e.to_string())
            }
            StoreUrl::File(_) => Err("publish and force-release --host need an etcd store \
                 (--store etcd://HOST:PORT[/PREFIX])"
                .into()),
        }
    }

    pub fn publish(
        url: &StoreUrl,
        roots: &Roots,
        a: PublishArgs,
        g: &GlobalArgs,
        out: &mut Out,
    ) -> CmdResult {
        for r in roots.as_slice() {
            if !r.root.is_dir() {
                return out.error(&format!(
                    "root {} is not a directory",
                    sanitize(&r.root.to_string_lossy())
                ));
            }
        }
        let renewals = crate::store::etcd::sink::renew_every(a.lease_ttl / 1000);
        let store = match connect(url, g, Some(renewals)) {
            Ok(s) => s,
            Err(e) => return out.error(&e),
        };
        let machine_id = std::env::var(TEST_MACHINE_ID_ENV)
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| {
                Some(claims::machine_id())
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(crate::sys::hostname)
            });
        let mut opts = PublishOpts::new(machine_id, crate::sys::hostname(), a.lease_ttl / 1000);
        opts.tick = Duration::from_millis(a.resweep as u64);
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
                return out.error(&format!("cannot catch signal {sig}: {e}"));
            }
        }
        let sink = Box::new(EtcdSink::of(&store, &opts.machine_id));
        let url = crate::store::Claims::url(&store);
        let mut publisher = Publisher::new(
            sink,
            url,
            roots_store(roots, opts.judge_every),
            roots,
            opts.clone(),
        );
        // The flag above is set inside the handler; this thread then ends
        // the publisher's wait, which an idle publisher makes long.
        let signals = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];
        match signal_hook::iterator::Signals::new(signals) {
            Ok(mut signals) => {
                let wake = publisher.waker();
                std::thread::spawn(move || {
                    if signals.forever().next().is_some() {
                        wake();
                    }
                });
            }
            Err(e) => return out.error(&format!("cannot catch SIGINT/SIGTERM: {e}")),
        }
        let mut log = |level: Level, text: &str| log_line(level, text);
        let stats = match publisher.run(&stop, &mut log) {
            Ok(stats) => stats,
            Err(e) => return out.error(&sanitize(&e.to_string())),
        };
        if out.json_mode() {
            let mut v = serde_json::to_value(stats).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("outcome".into(), json!("stopped"));
                o.insert("host_id".into(), json!(opts.machine_id));
            }
            out.json(&v)?;
        }
        Ok(EXIT_OK)
    }

    /// The roots as the publisher follows them: lockfiles and entries
    /// (the log is read through each root's audit).
    /// Each root's feed looks at its dirs and log as often as the
    /// publisher judges, so that one wake does both.
    fn roots_store(roots: &Roots, judge_every: Duration) -> Store {
        let looks = FeedOpts {
            looks: judge_every,
            ..FeedOpts::default()
        };
        let parts = roots.as_slice().iter().map(|root| {
            let store = FileStore::new(root.clone()).with_feed(looks);
            let backend: Arc<dyn Backend> = Arc::new(store);
            (Origin::Root(root.root.clone()), true, backend)
        });
        Store::of_parts(parts.collect())
    }

    /// One log line on stderr: `ts=… level=… ` then the message's own
    /// `name=value` words, plain so that journald and grep both read it.
    fn log_line(level: Level, text: &str) {
        crate::diag::stderr_line(&format!(
            "ts={} level={} {}",
            crate::time::utc_hms(claims::now_ms()),
            level.as_str(),
            sanitize(text)
        ));
    }

    /// `force-release KEY --host H [--root-id ID]` over etcd: the publisher
    /// of H does it on its own root and answers; this waits `--timeout`.
    pub fn force_release_on_host(
        url: &StoreUrl,
        a: ForceArgs,
        g: &GlobalArgs,
        out: &mut Out,
    ) -> CmdResult {
        let store = match connect(url, g, None) {
            Ok(s) => s,
            Err(e) => return out.error(&e),
        };
        let Some(host) = a.host.as_deref() else {
            return out.usage_error("force-release on a published claim needs --host");
        };
        let opts = ForceOpts {
            expect_holder: a.expect_holder.clone(),
            expect_acquired_at: a.expect_acquired_at,
            operator: Some(a.operator.clone().unwrap_or_else(claims::operator_name)),
            allow_live: a.allow_live,
        };
        let wait = store.conn().timeout();
        let ask = FleetAsk {
            host,
            root_id: a.root_id.as_deref(),
            key: &a.key,
        };
        let answer = match store.request_force_release(&ask, &opts, wait) {
            Ok(v) => v,
            // Nothing there to release, or no publisher there to do it:
            // refused, as on a file root, and nothing was done.
            Err(
                e @ (FleetError::NoSuchClaim { .. }
                | FleetError::Offline { .. }
                | FleetError::RootOffline { .. }),
            ) => {
                json!({"outcome": "refused", "reason": e.to_string(), "text": e.to_string()})
            }
            // The fix is a flag: which host, which root.
            Err(
                e @ (FleetError::UnknownHost(_)
                | FleetError::AmbiguousHost(..)
                | FleetError::WhichRoot { .. }
                | FleetError::UnknownRoot { .. }),
            ) => return out.usage_error(&e.to_string()),
            Err(e) => return out.error(&e.to_string()),
        };
        let outcome = answer["outcome"].as_str().unwrap_or("error");
        let code = match outcome {
            "archived" => EXIT_OK,
            "refused" => EXIT_DECLINED,
            _ => {
                let why = answer["error"]
                    .as_str()
                    .unwrap_or("the host answered an error");
                return out.error(&format!("host {host}: {why}"));
            }
        };
        if out.json_mode() {
            let mut v = answer.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("text");
            }
            out.json(&v)?;
        } else {
            let text = answer
                .get("text")
                .or_else(|| answer.get("error"))
                .and_then(Value::as_str)
                .unwrap_or(outcome);
            out.line(&format!("{} (on host {})", sanitize(text), sanitize(host)))?;
        }
        Ok(code)
    }
}
