//! Reaching etcd: endpoints, TLS, auth, and the `--timeout` every call obeys.
//!
//! The faces are synchronous, the client is tokio-based: the connection owns
//! a one-worker runtime and blocks on each call, bounded by the timeout, so a
//! dead cluster costs at most `--timeout` and never hangs a command.

use super::super::url::EtcdTarget;
use super::super::{StoreError, DEFAULT_TIMEOUT};
use etcd_client::{Certificate, Client, ConnectOptions, Identity, TlsOptions};
use std::future::Future;
use std::path::Path;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tonic::Code;

/// How to reach etcd: the connection settings, named as `etcdctl` names
/// them (read from the open context by `site::conn_opts`).
#[derive(Clone, Default)]
pub struct ConnOpts {
    /// `--etcd-cacert`, `--etcd-cert`, `--etcd-key`.
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// `--etcd-user`; the password comes from `$ETCD_PASSWORD` only, never a
    /// flag, so it cannot show in a process listing.
    pub user: Option<String>,
    pub password: Option<String>,
    /// `--timeout` (default 5 s): every call answers within it.
    pub timeout: Option<Duration>,
    /// `--events-retention` (default 7 days).
    pub events_retention: Option<Duration>,
    /// How often this connection's own traffic is answered by the member
    /// (a publisher's lease renewals). HTTP/2 pings go out only after a
    /// silence as long as their period, so with the period above this one
    /// no ping is sent while that traffic flows: the renewals already prove
    /// the member is there, and a hundred idle publishers pinging every
    /// 6 s besides cost etcd about a quarter of its idle CPU.
    pub heartbeat: Option<Duration>,
}

impl std::fmt::Debug for ConnOpts {
    // Hand-written so that the password never reaches a log or a panic message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnOpts")
            .field("cacert", &self.cacert)
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("events_retention", &self.events_retention)
            .field("heartbeat", &self.heartbeat)
            .finish()
    }
}

/// One client and the runtime that drives it.
pub struct Conn {
    rt: tokio::runtime::Runtime,
    client: Client,
    /// `a:1,b:2`, for every message that says which cluster failed.
    endpoints: String,
    timeout: Duration,
}

impl Conn {
    pub fn open(target: &EtcdTarget, opts: &ConnOpts) -> Result<Conn, StoreError> {
        let timeout = opts.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let rt = tokio::runtime::Builder::new_multi_thread()
            // One worker: enough for a keep-alive or a watch to run while
            // the caller blocks, and nothing more to start per command.
            .worker_threads(1)
            .thread_name("claimtop-etcd")
            .enable_all()
            .build()
            .map_err(|e| setup(target, format!("cannot start the etcd client: {e}")))?;
        let endpoints = target.hosts.join(",");
        let options = connect_options(target, opts, timeout)?;
        let eps = target.endpoints();
        let client = Self::bounded(&rt, &endpoints, timeout, async move {
            Client::connect(eps, Some(options)).await
        })?;
        Ok(Conn {
            rt,
            client,
            endpoints,
            timeout,
        })
    }

    pub fn endpoints(&self) -> &str {
        &self.endpoints
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A client handle for tasks spawned on [`Conn::runtime`].
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.rt
    }

    /// Run one client call to completion within the timeout.
    ///
    /// A call that cannot reach a member (refused, reset, no leader yet) is
    /// tried again until the timeout: with several endpoints the next try
    /// goes to a member that answers, and an election is over in about a
    /// second. Retrying is safe because every write compares first; a
    /// write that did land answers the retry as "already done".
    pub fn call<T, Fut>(&self, f: impl Fn(Client) -> Fut) -> Result<T, StoreError>
    where
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = Instant::now() + self.timeout;
        let mut last = String::from("no answer");
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let fut = f(self.client.clone());
            match self
                .rt
                .block_on(async { tokio::time::timeout(left, fut).await })
            {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => match classify(&self.endpoints, self.timeout, e) {
                    StoreError::Unreachable { detail, .. } => last = detail,
                    other => return Err(other),
                },
                Err(_) => break,
            }
            std::thread::sleep(RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now())));
        }
        Err(StoreError::Unreachable {
            what: format!("etcd at {}", self.endpoints),
            after: self.timeout,
            detail: last,
        })
    }

    fn bounded<T>(
        rt: &tokio::runtime::Runtime,
        endpoints: &str,
        timeout: Duration,
        fut: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, StoreError> {
        match rt.block_on(async { tokio::time::timeout(timeout, fut).await }) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(classify(endpoints, timeout, e)),
            Err(_) => Err(StoreError::Unreachable {
                what: format!("etcd at {endpoints}"),
                after: timeout,
                detail: "no answer".into(),
            }),
        }
    }
}

/// How often an idle connection proves the member is still there. Not
/// under 5 s: etcd refuses pings closer than its `--grpc-keepalive-min-time`
/// (5 s by default) and, after two, closes the connection with
/// "too many pings" (at 2 s, every watch was cut and resumed every ~8 s).
const KEEPALIVE_EVERY: Duration = Duration::from_secs(6);

/// How late an answer to the connection's own heartbeat may come (a
/// renewal answered within the call timeout) before a ping is due.
const HEARTBEAT_SLACK: Duration = Duration::from_secs(5);

/// The HTTP/2 ping period: [`KEEPALIVE_EVERY`], or longer than the
/// connection's own heartbeat, so that pings fill only its silences.
fn ping_every(heartbeat: Option<Duration>) -> Duration {
    heartbeat.map_or(KEEPALIVE_EVERY, |h| {
        KEEPALIVE_EVERY.max(h + HEARTBEAT_SLACK)
    })
}

/// Between two tries of a call that could not reach a member.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Transport trouble is "unreachable"; anything etcd itself answered is
/// passed on in its own words.
pub fn classify(endpoints: &str, timeout: Duration, e: etcd_client::Error) -> StoreError {
    use etcd_client::Error as E;
    let unreachable = |detail: String| StoreError::Unreachable {
        what: format!("etcd at {endpoints}"),
        after: timeout,
        detail,
    };
    match e {
        E::TransportError(t) => unreachable(t.to_string()),
        E::IoError(io) => unreachable(io.to_string()),
        E::GRpcStatus(s)
            if matches!(
                s.code(),
                Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled
            ) =>
        {
            unreachable(s.message().to_string())
        }
        E::GRpcStatus(s) => answered(endpoints, s.message().to_string()),
        other => answered(endpoints, other.to_string()),
    }
}

/// What etcd answered (auth, permission, NOSPACE...), in its words,
/// naming the cluster.
pub fn answered(endpoints: &str, detail: String) -> StoreError {
    StoreError::Backend {
        store: format!("etcd at {endpoints}"),
        detail,
    }
}

/// A connection setting that cannot work (TLS files, a user without a
/// password), naming the cluster it was for.
fn setup(target: &EtcdTarget, detail: impl Into<String>) -> StoreError {
    answered(&target.hosts.join(","), detail.into())
}

fn connect_options(
    target: &EtcdTarget,
    opts: &ConnOpts,
    timeout: Duration,
) -> Result<ConnectOptions, StoreError> {
    let mut o = ConnectOptions::new()
        .with_connect_timeout(timeout)
        .with_timeout(timeout)
        // A leaderless member must not answer reads as if it were current.
        .with_require_leader(true)
        // HTTP/2 pings, also while idle: a stopped or partitioned member
        // otherwise leaves a watch silent forever instead of failing it.
        .with_keep_alive(ping_every(opts.heartbeat), timeout)
        .with_keep_alive_while_idle(true);
    match (&opts.user, &opts.password) {
        (Some(user), Some(pw)) => o = o.with_user(user.clone(), pw.clone()),
        (Some(user), None) => {
            return Err(setup(
                target,
                format!("--etcd-user {user:?} needs its password in $ETCD_PASSWORD"),
            ))
        }
        (None, _) => {}
    }
    let tls_files = opts.cacert.is_some() || opts.cert.is_some() || opts.key.is_some();
    if tls_files && !target.tls {
        return Err(setup(
            target,
            "TLS files were given for a plain etcd:// store; use etcds:// to speak TLS",
        ));
    }
    if target.tls {
        let Some(ca) = &opts.cacert else {
            return Err(setup(
                target,
                "an etcds:// store needs --etcd-cacert (the CA that signed the servers)",
            ));
        };
        let mut tls = TlsOptions::new().ca_certificate(Certificate::from_pem(read(target, ca)?));
        match (&opts.cert, &opts.key) {
            (Some(cert), Some(key)) => {
                tls = tls.identity(Identity::from_pem(read(target, cert)?, read(target, key)?));
            }
            (None, None) => {}
            _ => {
                return Err(setup(
                    target,
                    "--etcd-cert and --etcd-key go together (a client certificate and its key)",
                ))
            }
        }
        o = o.with_tls(tls);
    }
    Ok(o)
}

fn read(target: &EtcdTarget, path: &Path) -> Result<Vec<u8>, StoreError> {
    std::fs::read(path).map_err(|e| {
        setup(
            target,
            format!("cannot read {}: {e}", path.to_string_lossy()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pings_fill_only_the_silences_of_a_heartbeat() {
        assert_eq!(ping_every(None), KEEPALIVE_EVERY);
        // Renewals answered every 10 s: a ping only after 15 s of silence,
        // so none while they flow.
        let renewals = Duration::from_secs(10);
        assert_eq!(ping_every(Some(renewals)), Duration::from_secs(15));
        // Never closer than etcd lets a client ping.
        assert_eq!(
            ping_every(Some(Duration::from_millis(100))),
            KEEPALIVE_EVERY
        );
    }
}
