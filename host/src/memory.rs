//! Memory measurements for phases and runs: page faults, host allocations, peak RSS.
//!
//! Page faults are process-wide (plugins included). Allocations are counted by
//! [`CountingAlloc`] when the binary installs it as its global allocator (the `bellhop`
//! binary does) and counting is switched on with [`count_allocations`]; plugins loaded
//! from files allocate through their own allocators and are not counted. Counting is off
//! by default: even uncontended, it slows allocation-heavy code (synthesis makes millions
//! of small allocations), which would skew the times it is measured beside.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed},
};

/// Counters on separate cache lines, one per thread slot, so threads do not contend.
#[repr(align(128))]
struct Slot(AtomicU64);

const SLOTS: usize = 64;
static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicU64::new(0)) }; SLOTS];
static ENABLED: AtomicBool = AtomicBool::new(false);
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: usize = NEXT_SLOT.fetch_add(1, Relaxed) % SLOTS;
}

/// Switches allocation counting on or off (off at start).
pub fn count_allocations(on: bool) {
    ENABLED.store(on, Relaxed);
}

fn count() {
    if ENABLED.load(Relaxed) {
        // `try_with`: during thread teardown the slot is gone; those few go uncounted.
        let _ = MY_SLOT.try_with(|slot| COUNTS[*slot].0.fetch_add(1, Relaxed));
    }
}

/// The system allocator, counting allocations while counting is on.
pub struct CountingAlloc;

// SAFETY: every call is forwarded unchanged to the system allocator; the counter has no
// effect on the memory handed out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we pass on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc`/`realloc` above, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from this allocator, i.e. from `System`; the caller upholds
        // the rest of `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Host allocations counted so far, or `None` while counting is off.
pub fn allocations() -> Option<u64> {
    ENABLED.load(Relaxed).then(|| COUNTS.iter().map(|s| s.0.load(Relaxed)).sum())
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
