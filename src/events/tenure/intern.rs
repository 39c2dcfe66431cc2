//! Keys and holders interned: each name stored once, numbered.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::Sym;

/// FxHash (rustc's): keys and holders are short and come from the log, not
/// from an attacker who can see the table, and SipHash over every name of
/// a million-line log was an eighth of the indexing time.
#[derive(Debug, Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Strings seen once, stored once.
#[derive(Debug, Default, Clone)]
pub(super) struct Interner {
    ids: HashMap<Arc<str>, Sym, BuildHasherDefault<FxHasher>>,
    pub(super) names: Vec<Arc<str>>,
}

impl Interner {
    pub(super) fn get(&self, s: &str) -> Option<Sym> {
        self.ids.get(s).copied()
    }

    pub(super) fn intern(&mut self, s: &str, cap: usize) -> Option<Sym> {
        if let Some(id) = self.ids.get(s) {
            return Some(*id);
        }
        if self.names.len() >= cap {
            return None;
        }
        let id = self.names.len() as Sym;
        let name: Arc<str> = Arc::from(s);
        self.names.push(name.clone());
        self.ids.insert(name, id);
        Some(id)
    }

    pub(super) fn name(&self, id: Sym) -> &str {
        self.names.get(id as usize).map_or("?", |s| s)
    }
}
