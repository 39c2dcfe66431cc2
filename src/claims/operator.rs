//! Who an operator is, in the audit log.
//!
//! A force-release names the person who pulled the lever. Every face (the
//! CLI's default `--operator`, the dashboard's force-release) takes the name
//! from here, so one person shows up one way in `events.jsonl`.

use super::liveness::hostname;

/// `<user>@<host>`: the operator a force-release is audited as when none is
/// given. The user is `$USER`, else `$LOGNAME`, else the password database's
/// name for our uid, else `unknown`; blank values count as unset.
pub fn operator_name() -> String {
    let user = user_name().unwrap_or_else(|| "unknown".into());
    format!("{user}@{}", hostname())
}

/// This process's user name, from the environment or the password database.
pub fn user_name() -> Option<String> {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|u| !u.trim().is_empty())
        .or_else(login_name)
}

/// The password-database name of this process's user, for environments
/// (services, containers) that set neither USER nor LOGNAME.
fn login_name() -> Option<String> {
    // SAFETY: getpwuid_r writes only into `pwd` and `buf`, both valid for the
    // sizes given; `result` is checked before `pwd.pw_name` is read, and the
    // name is copied out before `buf` is dropped.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::getuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(pwd.pw_name)
            .to_string_lossy()
            .into_owned();
        (!name.is_empty()).then_some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_is_a_user_at_this_host_with_no_prefix() {
        let name = operator_name();
        let (user, host) = name.split_once('@').expect("user@host");
        assert!(!user.is_empty() && !user.contains(':'), "{name}");
        assert_eq!(host, hostname());
    }
}
