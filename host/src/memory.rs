//! Memory measurements for phases and runs: page faults, host allocations, peak RSS.
//!
//! Page faults are process-wide (plugins included). Allocations are counted by
//! [`CountingAlloc`] when the binary installs it as its global allocator (the `bellhop`
//! binary does); plugins allocate through their own allocators and are not counted.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed},
};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The system allocator, counting allocations.
pub struct CountingAlloc;

// SAFETY: every call is forwarded unchanged to the system allocator; the counter has no
// effect on the memory handed out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        INSTALLED.store(true, Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we pass on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc`/`realloc` above, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        INSTALLED.store(true, Relaxed);
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: `ptr` came from this allocator, i.e. from `System`; the caller upholds
        // the rest of `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Host allocations so far, or `None` if [`CountingAlloc`] is not the global allocator.
pub fn allocations() -> Option<u64> {
    INSTALLED.load(Relaxed).then(|| ALLOCATIONS.load(Relaxed))
}

/// Minor plus major page faults of the process so far.
pub fn page_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `rusage` into the pointer it is given, which points to
    // enough zeroed memory for one.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
    if !ok {
        return 0;
    }
    // SAFETY: getrusage succeeded, so the struct is initialised.
    let usage = unsafe { usage.assume_init() };
    (usage.ru_minflt + usage.ru_majflt) as u64
}

/// Resets the process's peak RSS (Linux `clear_refs`); false where that is not possible.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's peak RSS in bytes since start or the last reset (Linux `VmHWM`).
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim();
    kb.parse::<u64>().ok().map(|kb| kb * 1024)
}
