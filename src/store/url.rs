//! Store URLs: `file:DIR`, `etcd://HOST:PORT[,HOST:PORT...][/PREFIX]`, and
//! `etcds://` for TLS. Parsed in every build, so that a build without the
//! `etcd` feature can still say what it was asked for and why it cannot.

use std::path::PathBuf;

/// The etcd prefix when the URL names none.
pub const DEFAULT_PREFIX: &str = "/fno";

/// A parsed `--store` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// The lockfile protocol under this root.
    File(PathBuf),
    Etcd(EtcdTarget),
}

/// Where the etcd claims live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdTarget {
    /// `host:port`, in the order given.
    pub hosts: Vec<String>,
    /// Starts with `/`, never ends with one (`/fno`): keys are `PREFIX/claims/...`.
    pub prefix: String,
    /// `etcds://`: every endpoint is spoken to over TLS.
    pub tls: bool,
}

impl EtcdTarget {
    /// The gRPC endpoints, as the client takes them.
    pub fn endpoints(&self) -> Vec<String> {
        let scheme = if self.tls { "https" } else { "http" };
        self.hosts
            .iter()
            .map(|h| format!("{scheme}://{h}"))
            .collect()
    }

    /// The URL back, normalised (`etcd://a:1,b:2/fno`).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "etcds" } else { "etcd" };
        format!("{scheme}://{}{}", self.hosts.join(","), self.prefix)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreUrlError {
    #[error("store URL {0:?} is empty")]
    Empty(String),
    #[error("store URL {0:?}: unknown scheme (expected file:DIR, etcd://HOST:PORT[/PREFIX] or etcds://...)")]
    UnknownScheme(String),
    #[error("store URL {url:?}: {why}")]
    BadEndpoint { url: String, why: String },
    #[error("store URL {url:?}: prefix {prefix:?} {why}")]
    BadPrefix {
        url: String,
        prefix: String,
        why: &'static str,
    },
}

impl StoreUrl {
    pub fn parse(text: &str) -> Result<StoreUrl, StoreUrlError> {
        if text.trim().is_empty() {
            return Err(StoreUrlError::Empty(text.to_string()));
        }
        if let Some(dir) = text.strip_prefix("file:") {
            // `file://DIR` is what people type from habit; both mean the path.
            let dir = dir.strip_prefix("//").unwrap_or(dir);
            if dir.is_empty() {
                return Err(StoreUrlError::Empty(text.to_string()));
            }
            return Ok(StoreUrl::File(PathBuf::from(dir)));
        }
        let (rest, tls) = if let Some(r) = text.strip_prefix("etcd://") {
            (r, false)
        } else if let Some(r) = text.strip_prefix("etcds://") {
            (r, true)
        } else {
            return Err(StoreUrlError::UnknownScheme(text.to_string()));
        };
        let (hosts, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let bad = |why: String| StoreUrlError::BadEndpoint {
            url: text.to_string(),
            why,
        };
        let hosts = hosts
            .split(',')
            .map(|h| check_host_port(h).map_err(&bad))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StoreUrl::Etcd(EtcdTarget {
            hosts,
            prefix: normalise_prefix(text, prefix)?,
            tls,
        }))
    }
}

/// An `etcd://` or `etcds://` URL, checked as the etcd backend would check
/// it: a build without etcd still tells a mistyped URL from a good one.
pub fn check_etcd(text: &str) -> Result<EtcdTarget, StoreUrlError> {
    match StoreUrl::parse(text)? {
        StoreUrl::Etcd(t) => Ok(t),
        StoreUrl::File(_) => Err(StoreUrlError::UnknownScheme(text.to_string())),
    }
}

/// `HOST:PORT` with a non-empty host and a port in 1..=65535.
fn check_host_port(h: &str) -> Result<String, String> {
    let Some((host, port)) = h.rsplit_once(':') else {
        return Err(format!("endpoint {h:?} needs HOST:PORT"));
    };
    if host.is_empty() || host.contains(['@', '?', '#', ' ']) {
        return Err(format!("endpoint {h:?} has no usable host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(h.to_string()),
        _ => Err(format!("endpoint {h:?}: port {port:?} is not 1-65535")),
    }
}

/// `""` and `"/"` mean the default; a trailing `/` is dropped so that
/// `PREFIX/claims/` is never written with a doubled slash.
fn normalise_prefix(url: &str, prefix: &str) -> Result<String, StoreUrlError> {
    let trimmed = prefix.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(DEFAULT_PREFIX.to_string());
    }
    if trimmed.contains("//") {
        return Err(StoreUrlError::BadPrefix {
            url: url.to_string(),
            prefix: prefix.to_string(),
            why: "has an empty path segment",
        });
    }
    Ok(trimmed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn etcd(text: &str) -> EtcdTarget {
        match StoreUrl::parse(text) {
            Ok(StoreUrl::Etcd(t)) => t,
            other => panic!("{text:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn an_etcd_url_without_prefix_gets_the_default_prefix() {
        let t = etcd("etcd://127.0.0.1:2379");
        assert_eq!(t.hosts, vec!["127.0.0.1:2379"]);
        assert_eq!(t.prefix, "/fno");
        assert_eq!(t.endpoints(), vec!["http://127.0.0.1:2379"]);
    }

    #[test]
    fn several_endpoints_and_a_prefix_are_kept_in_order_without_trailing_slash() {
        let t = etcd("etcds://a:1,b:2,c:3/team/claims/");
        assert_eq!(t.hosts, vec!["a:1", "b:2", "c:3"]);
        assert_eq!(t.prefix, "/team/claims");
        assert!(t.tls);
        assert_eq!(t.endpoints()[1], "https://b:2");
        assert_eq!(t.url(), "etcds://a:1,b:2,c:3/team/claims");
    }

    #[test]
    fn a_file_url_names_its_directory_with_or_without_slashes() {
        assert_eq!(
            StoreUrl::parse("file:/tmp/r"),
            Ok(StoreUrl::File("/tmp/r".into()))
        );
        assert_eq!(
            StoreUrl::parse("file:///tmp/r"),
            Ok(StoreUrl::File("/tmp/r".into()))
        );
    }

    #[test]
    fn malformed_urls_are_refused_with_the_reason() {
        for bad in [
            "",
            "http://x:1",
            "etcd://",
            "etcd://host",
            "etcd://host:0",
            "etcd://host:99999",
            "etcd://:2379",
            "etcd://a:1,,b:2",
            "etcd://a:1/x//y",
            "file:",
        ] {
            let err = StoreUrl::parse(bad).expect_err(bad);
            assert!(!err.to_string().is_empty(), "{bad:?}");
        }
    }
}
