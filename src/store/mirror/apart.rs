//! A listing read and freed away from the thread that keeps the rows.
//!
//! glibc gives each thread an arena of its own and hands a freed chunk to
//! the freeing thread's next allocation of its size. A listing read on the
//! mirror's thread left its scraps (read buffers, words, parse leftovers)
//! among the rows it keeps, and the rows' copies, made as each original
//! was freed, took the originals' places among those scraps: over 100 000
//! lockfiles, 11 MB of holes no trim could hand back. Read on a thread of
//! its own and freed on another, a listing lies wholly in other arenas,
//! handed back whole once freed; the rows lie together in the mirror's.
//! (Handed back only if the last frees reach the arena's top: the
//! collector turns glibc's fastbins off for that, see its
//! `keep_big_buffers_mapped`.)

use super::super::backend::{list_whole_held, Claims, MemberListing};
use super::super::StoreError;
use crate::claims::{Classifier, Held};
use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

/// How many of a listing's values go to the freeing thread at once.
const BATCH: usize = 1024;

/// `store`'s listing, judged with `c`, read on a thread of its own (here,
/// when no thread can be started); and `c`, with what it learnt.
pub(super) fn read(
    store: &dyn Claims,
    c: Classifier,
    held: Option<Held>,
    on_page: &mut (dyn FnMut(&MemberListing) + Send),
) -> (Result<MemberListing, StoreError>, Classifier) {
    let mut kept = Some(c);
    let mut page = Some(on_page);
    let apart = std::thread::scope(|s| {
        let mut c = kept.take()?;
        let on_page = page.take()?;
        let h = std::thread::Builder::new()
            .name("claimtop-list".into())
            .spawn_scoped(s, move || {
                let listing = list_whole_held(store, &mut c, held, on_page);
                (listing, c)
            });
        match h {
            Ok(h) => Some(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
            // Not started: the classifier went with the closure, so the
            // listing is read here with a fresh one.
            Err(_) => None,
        }
    });
    match apart {
        Some(read) => read,
        None => {
            let mut c = Classifier::new(crate::claims::now_ms());
            (list_whole_held(store, &mut c, held, &mut |_| {}), c)
        }
    }
}

/// Frees what it is given on a thread of its own, in batches (here, when
/// no thread can be started).
pub(super) struct Freer<T: Send + 'static> {
    batch: Vec<T>,
    to: Option<(Sender<Vec<T>>, JoinHandle<()>)>,
}

impl<T: Send + 'static> Freer<T> {
    pub(super) fn start() -> Freer<T> {
        let (tx, rx) = channel::<Vec<T>>();
        let to = std::thread::Builder::new()
            .name("claimtop-free".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|h| (tx, h));
        Freer {
            batch: Vec::with_capacity(BATCH),
            to,
        }
    }

    pub(super) fn free(&mut self, v: T) {
        self.batch.push(v);
        if self.batch.len() >= BATCH {
            self.send();
        }
    }

    fn send(&mut self) {
        // Each batch at its full size from the start: its buffer is then
        // mapped, not grown among the rows.
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        if let Some((tx, _)) = &self.to {
            // The thread only ends when the sender is dropped.
            let _ = tx.send(batch);
        }
    }

    /// Free the rest, and wait until all is freed (so a trim after it
    /// finds the pages free).
    pub(super) fn finish(mut self) {
        self.send();
        if let Some((tx, h)) = self.to.take() {
            drop(tx);
            let _ = h.join();
        }
    }
}

/// Free `v` on a thread of its own (here, when no thread can be started).
pub(super) fn free<V: Send + 'static>(v: V) {
    if let Ok(h) = std::thread::Builder::new()
        .name("claimtop-free".into())
        .spawn(move || drop(v))
    {
        let _ = h.join();
    }
}
