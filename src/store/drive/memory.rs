//! Memory a big listing leaves behind, handed back: what keeps a face
//! over 100 000 claims from holding its start-up peak for as long as it
//! runs.

/// glibc raises its mmap threshold to the size of each mapped buffer
/// freed (up to 32 MiB); a big listing frees several, after which its
/// next buffers of megabytes come from the heap, among the rows the
/// mirror keeps, and leave holes `malloc_trim` cannot hand back. A fixed
/// threshold keeps them mapped: over 100 000 lockfiles that was 6 MB of
/// resident memory (60 bytes a claim).
///
/// No fastbins either: a small chunk freed into one never merges with its
/// neighbours until the next consolidation, and a thread arena's top is
/// handed back only when a free merges into it (`malloc_trim` leaves a
/// thread arena's top alone). A listing freed apart (see the mirror's
/// `apart`) then kept 35 to 45 MB of its freed arena resident in one run
/// of two; with none, none (tcache still serves the small allocations).
pub fn keep_big_buffers_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes how later allocations are served; the
    // threshold is glibc's own default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

/// A big listing's raw pages are freed by now, but glibc keeps the pages in
/// this thread's arena: hand them back, so that a face over 100 000 claims
/// does not keep its start-up peak for as long as it runs.
pub fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap memory; no pointer of
    // ours is involved.
    unsafe {
        libc::malloc_trim(0);
    }
}
