//! `ClaimRecord::from_bytes` on any bytes: never a panic, never a hang, and
//! whatever it accepts survives a write → read round trip unchanged (a record
//! the reader accepts but the writer cannot reproduce would fork the lock
//! between implementations).
#![no_main]

use claimtop::claims::ClaimRecord;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(rec) = ClaimRecord::from_bytes(data) {
        let yaml = rec.to_yaml().expect("an accepted record serializes");
        assert_eq!(ClaimRecord::from_bytes(yaml.as_bytes()), Ok(rec));
    }
});
