//! doctor and doctor --fix: hazards reported, only the protocol's own
//! shapes removed, a broken archive dir or events log.

use super::*;

#[test]
fn doctor_is_clean_on_an_empty_root_and_exits_3_on_hazards_without_changing_them() {
    let s = Sandbox::new();
    let (rc, v) = s.json(&["doctor"]);
    assert_eq!(rc, 0);
    assert_eq!(
        v,
        json!({"root": s.root().to_string_lossy(), "hazards": []})
    );

    std::fs::create_dir_all(s.claims_dir()).unwrap();
    let corpse = s.claims_dir().join("k.lock.recovery.d");
    std::fs::create_dir(&corpse).unwrap();
    mutex::backdate(&corpse, 600).unwrap();
    let (rc, v) = s.json(&["doctor"]);
    assert_eq!(rc, 3);
    assert_eq!(v["hazards"][0]["kind"], "stale_mutex");
    assert!(corpse.exists(), "doctor without --fix changes nothing");

    let (rc, v) = s.json(&["doctor", "--fix"]);
    assert_eq!(rc, 0, "{v}");
    assert_eq!(v["hazards"], json!([]));
    assert_eq!(v["fixed"][0]["fixed"], json!(true));
    assert!(!corpse.exists());
}

#[test]
fn doctor_fix_leaves_a_corrupted_claim_and_still_exits_3() {
    let s = Sandbox::new();
    let p = s.write_lock("k", "not: [a claim");
    let (rc, v) = s.json(&["doctor", "--fix"]);
    assert_eq!(rc, 3);
    assert_eq!(v["hazards"][0]["kind"], "corrupted_claim");
    assert!(p.exists());
}

#[test]
fn doctor_fix_removes_only_the_exact_shapes_the_protocol_writes() {
    let s = Sandbox::new();
    let d = s.claims_dir();
    std::fs::create_dir_all(&d).unwrap();
    // What the protocol really leaves behind.
    let real_temp = d.join(".claim-tmp-42-1700000000000000000-0");
    let real_replace = d.join("k.lock.tmp.42.0");
    let real_mutex = d.join("k.lock.recovery.d");
    let real_reap = d.join("k.lock.recovery.d.reap.42.0");
    std::fs::write(&real_temp, "key: k\n").unwrap();
    std::fs::write(&real_replace, "key: k\n").unwrap();
    for dir in [&real_mutex, &real_reap] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join("owner"), "host:1:2").unwrap();
        backdate(dir);
    }
    // Look-alikes holding someone's data.
    let lookalikes = [
        d.join("x.recovery.d/important/data"),
        d.join("k2.lock.recovery.d/notes.txt"),
        d.join("backup.reap.2024.01/file"),
        d.join(".claim-tmp-data/sub/file"),
        d.join("k3.lock.recovery.d.reap.1.2/keep"),
    ];
    for f in &lookalikes {
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, "precious").unwrap();
        backdate(f.parent().unwrap());
    }
    let bak = d.join("k.lock.tmp.1.0.bak");
    std::fs::write(&bak, "precious").unwrap();
    for f in [&real_temp, &real_replace, &bak] {
        backdate(f);
    }

    let (rc, v) = s.json(&["doctor", "--fix"]);
    assert_eq!(rc, 3, "look-alikes remain as hazards: {v}");
    for gone in [&real_temp, &real_replace, &real_mutex, &real_reap] {
        assert!(
            std::fs::symlink_metadata(gone).is_err(),
            "{} survived: {v}",
            gone.display()
        );
    }
    for kept in lookalikes.iter().chain([&bak]) {
        assert_eq!(
            std::fs::read_to_string(kept).ok().as_deref(),
            Some("precious"),
            "{} was removed: {v}",
            kept.display()
        );
    }
    let left: Vec<&Value> = v["fixed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["fixed"] == false)
        .collect();
    assert!(
        left.iter()
            .all(|f| f["action"].as_str().unwrap().contains("human")),
        "{left:?}"
    );
}

#[test]
fn doctor_reports_an_archive_dir_that_is_not_a_directory() {
    for plant in ["symlink", "file"] {
        let s = Sandbox::new();
        std::fs::create_dir_all(s.claims_dir()).unwrap();
        let expired = s.claims_dir().join(".expired");
        match plant {
            "symlink" => std::os::unix::fs::symlink(s.home.path(), &expired).unwrap(),
            _ => std::fs::write(&expired, "").unwrap(),
        }
        let (rc, v) = s.json(&["doctor"]);
        assert_eq!(rc, 3, "{v}");
        let h = &v["hazards"][0];
        assert_eq!(h["kind"], "archive_dir_broken", "{v}");
        assert!(h["detail"].as_str().unwrap().contains(plant), "{v}");
        // --fix leaves it for a human: moving it could lose what it holds.
        let (rc, _) = s.json(&["doctor", "--fix"]);
        assert_eq!(rc, 3);
        assert!(std::fs::symlink_metadata(&expired).is_ok());
    }
}

#[test]
fn a_broken_events_log_is_a_hazard_in_doctor_and_list_and_the_verbs_still_work() {
    for plant in ["directory", "FIFO"] {
        let s = Sandbox::new();
        std::fs::create_dir_all(s.root().join(".fno")).unwrap();
        let log = s.events_file();
        match plant {
            "directory" => std::fs::create_dir(&log).unwrap(),
            _ => {
                let c = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
                // SAFETY: a valid NUL-terminated path; mkfifo only makes the node.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }
        }
        // The claim itself is taken: the log is observability, not the lock.
        let out = s.run(&["acquire", "k", "--holder", "a", "--ttl", "60"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stderr(&out).contains("failed to emit"), "{}", stderr(&out));

        let (rc, v) = s.json(&["doctor"]);
        assert_eq!(rc, 3, "{plant}: {v}");
        let h = &v["hazards"][0];
        assert_eq!(h["kind"], "events_log_broken", "{v}");
        assert_eq!(h["path"], log.to_str().unwrap(), "{v}");
        assert!(h["detail"].as_str().unwrap().contains(plant), "{v}");
        let (rc, v) = s.json(&["list"]);
        assert_eq!(rc, 0);
        assert_eq!(v["hazards"][0]["kind"], "events_log_broken", "{v}");
        let out = s.run(&["doctor"]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("events_log_broken"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        // --fix leaves it for a human: what it holds may be the lost events.
        let (rc, _) = s.json(&["doctor", "--fix"]);
        assert_eq!(rc, 3);
        assert!(std::fs::symlink_metadata(&log).is_ok());
    }
}
