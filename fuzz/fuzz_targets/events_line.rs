//! `parse_event` on any line, as the tail hands it over (lossy UTF-8): never
//! a panic, and an accepted event always has a string `type`.
#![no_main]

use claimtop::events::parse_event;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    if let Ok(ev) = parse_event(&line) {
        assert!(ev.value().get("type").is_some_and(|t| t.is_string()));
        let _ = (
            ev.kind(),
            ev.ts(),
            ev.source(),
            ev.key(),
            ev.holder(),
            ev.data(),
        );
    }
});
