//! One memory budget for resident parameter sets and partitions in flight: reservations
//! are taken before the memory is used and released when it is freed, and work waits for
//! room instead of overcommitting.

use std::{
    sync::{Arc, Condvar, Mutex, MutexGuard},
    time::Duration,
};

/// Bytes reserved now, and the most ever reserved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) reserved: u64,
    pub(crate) peak: u64,
}

/// The budget.
pub(crate) struct Budget {
    limit: u64,
    usage: Mutex<Usage>,
    freed: Condvar,
}

/// Bytes held from the budget until dropped.
pub(crate) struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Budget {
    pub(crate) fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self { limit, usage: Mutex::new(Usage::default()), freed: Condvar::new() })
    }

    /// The budget in bytes.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    fn lock(&self) -> MutexGuard<'_, Usage> {
        self.usage.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn usage(&self) -> Usage {
        *self.lock()
    }

    /// `bytes` if they fit now.
    pub(crate) fn try_reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let mut usage = self.lock();
        if usage.reserved + bytes > self.limit {
            return None;
        }
        usage.reserved += bytes;
        usage.peak = usage.peak.max(usage.reserved);
        Some(Reservation { budget: Arc::clone(self), bytes })
    }

    /// Waits up to `limit` for some reservation to be released (the caller tries again).
    pub(crate) fn wait_for_release(&self, limit: Duration) {
        let usage = self.lock();
        let _ = self.freed.wait_timeout(usage, limit);
    }
}

impl Reservation {
    /// The bytes it holds.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Makes it `bytes` (what was measured once the memory was in use); growing past the
    /// budget is allowed here, since the memory is already taken, and shows in the peak.
    pub(crate) fn resize(&mut self, bytes: u64) {
        let mut usage = self.budget.lock();
        usage.reserved = usage.reserved - self.bytes + bytes;
        usage.peak = usage.peak.max(usage.reserved);
        let shrunk = bytes < self.bytes;
        self.bytes = bytes;
        drop(usage);
        if shrunk {
            self.budget.freed.notify_all();
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.lock().reserved -= self.bytes;
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_fit_the_budget_and_are_released() {
        let budget = Budget::new(100);
        let a = budget.try_reserve(60).unwrap();
        assert!(budget.try_reserve(50).is_none());
        let mut b = budget.try_reserve(40).unwrap();
        assert_eq!(budget.usage(), Usage { reserved: 100, peak: 100 });
        b.resize(10);
        assert_eq!(budget.usage().reserved, 70);
        drop(a);
        assert_eq!(budget.usage(), Usage { reserved: 10, peak: 100 });
        drop(b);
        assert_eq!(budget.usage().reserved, 0);
    }
}
