//! Writing what `:write` made: the one place the dashboard writes a file
//! of the operator's. Never over a file that is there, unless asked
//! (`:write!`); an error is said in words, with the path, and the
//! dashboard goes on.

use super::model::Level;
use super::update::Save;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `~/…` under `$HOME`, as a shell would; any other path as typed
/// (relative: to the directory the dashboard started in).
fn expand(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

/// Write `s`; what to say of it.
pub fn carry_out(s: &Save) -> (Level, String) {
    let shown =
        crate::sanitize::sanitize_bytes(std::os::unix::ffi::OsStrExt::as_bytes(s.path.as_os_str()));
    let path = expand(&s.path);
    let mut open = std::fs::OpenOptions::new();
    open.write(true);
    if s.replace {
        open.create(true).truncate(true);
    } else {
        // O_EXCL: a file (or a link) already there is never written through.
        open.create_new(true);
    }
    let result = open.open(&path).and_then(|mut f| {
        f.write_all(&s.bytes)?;
        f.sync_all()
    });
    match result {
        Ok(()) => (Level::Info, format!("wrote {} to {shown}", s.what)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => (
            Level::Error,
            format!("{shown} exists: :write! {shown} replaces it"),
        ),
        Err(e) => (Level::Error, format!("cannot write {shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save(path: std::path::PathBuf, replace: bool, text: &str) -> Save {
        Save {
            path,
            replace,
            bytes: text.as_bytes().to_vec(),
            what: "1 row".into(),
        }
    }

    #[test]
    fn a_file_that_is_there_is_kept_unless_replace_is_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("out.csv");
        let (level, words) = carry_out(&save(p.clone(), false, "one"));
        assert_eq!(level, Level::Info, "{words}");
        let (level, words) = carry_out(&save(p.clone(), false, "two"));
        assert_eq!(level, Level::Error);
        assert!(words.contains("exists: :write!"), "{words}");
        assert_eq!(std::fs::read_to_string(&p).ok().as_deref(), Some("one"));
        carry_out(&save(p.clone(), true, "three"));
        assert_eq!(std::fs::read_to_string(&p).ok().as_deref(), Some("three"));
        let (level, words) = carry_out(&save(dir.path().join("no/such/dir.csv"), false, "x"));
        assert_eq!(level, Level::Error);
        assert!(
            words.starts_with("cannot write") && words.contains("no/such"),
            "{words}"
        );
    }
}
