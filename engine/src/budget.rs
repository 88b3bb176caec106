//! One memory budget for resident parameter sets and partitions in flight: reservations
//! are taken before the memory is used and released when it is freed, and work waits for
//! room instead of overcommitting. Waiters are served by rank: while a higher-ranked one
//! waits, no lower-ranked one takes memory, so a WinningPoSt partition is never passed by
//! PoRep partitions that arrived after it, nor kept waiting by one that arrived before.

use std::{
    cmp::Reverse,
    collections::BTreeSet,
    sync::{Arc, Condvar, Mutex, MutexGuard},
    time::Duration,
};

use serde::Serialize;

use crate::job::Priority;

/// A waiter's place: the higher priority first, then the older job (lower sequence).
pub(crate) type Rank = (Reverse<Priority>, u64);

/// Bytes reserved now, and the most ever reserved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) reserved: u64,
    pub(crate) peak: u64,
}

struct Inner {
    usage: Usage,
    /// Who waits for room, best first; the second field tells apart waiters of one rank.
    waiting: BTreeSet<(Rank, u64)>,
    next_ticket: u64,
}

/// The budget.
pub(crate) struct Budget {
    limit: u64,
    inner: Mutex<Inner>,
    changed: Condvar,
}

/// Bytes held from the budget until dropped.
pub(crate) struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
}

/// Why a reservation was not made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum NoRoom {
    /// It can never fit.
    #[error("{bytes} bytes do not fit the [memory] budget of {limit} bytes; raise the budget")]
    TooBig { bytes: u64, limit: u64 },
    /// The caller gave up waiting.
    #[error("{0}")]
    GaveUp(String),
}

/// A place in the queue of waiters, left when dropped.
struct Ticket<'a> {
    budget: &'a Budget,
    place: (Rank, u64),
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.budget.lock().waiting.remove(&self.place);
        self.budget.changed.notify_all();
    }
}

impl Budget {
    pub(crate) fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            inner: Mutex::new(Inner { usage: Usage::default(), waiting: BTreeSet::new(), next_ticket: 0 }),
            changed: Condvar::new(),
        })
    }

    /// The budget in bytes.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn usage(&self) -> Usage {
        self.lock().usage
    }

    /// How many wait for room now.
    pub(crate) fn waiters(&self) -> usize {
        self.lock().waiting.len()
    }

    fn take(self: &Arc<Self>, inner: &mut Inner, bytes: u64) -> Reservation {
        inner.usage.reserved += bytes;
        inner.usage.peak = inner.usage.peak.max(inner.usage.reserved);
        Reservation { budget: Arc::clone(self), bytes }
    }

    /// What `need` says (asked again while waiting: a parameter set may become resident
    /// meanwhile), taken as soon as it fits and no better-ranked waiter is ahead. While this
    /// caller is first in line and it does not fit, `make_room` is asked to free some (it
    /// returns whether it did: an idle parameter set evicted), and `give_up` whether to stop
    /// waiting (the engine stops: its reason).
    pub(crate) fn reserve(
        self: &Arc<Self>,
        need: impl Fn() -> u64,
        rank: Rank,
        mut make_room: impl FnMut() -> bool,
        give_up: impl Fn() -> Option<String>,
    ) -> Result<Reservation, NoRoom> {
        let fits =
            |bytes| if bytes > self.limit { Err(NoRoom::TooBig { bytes, limit: self.limit }) } else { Ok(bytes) };
        if fits(need())? == 0 {
            return Ok(Reservation { budget: Arc::clone(self), bytes: 0 });
        }
        let ticket = {
            let mut inner = self.lock();
            let place = (rank, inner.next_ticket);
            inner.next_ticket += 1;
            inner.waiting.insert(place);
            Ticket { budget: self, place }
        };
        loop {
            // Asked with the budget's lock not held, as `give_up` below: both may take
            // other locks (the engine's state lock, whose holders ask the budget for its usage).
            let bytes = fits(need())?;
            let mut inner = self.lock();
            let first = inner.waiting.first() == Some(&ticket.place);
            if first && inner.usage.reserved + bytes <= self.limit {
                let reservation = self.take(&mut inner, bytes);
                drop(inner);
                // Leaving the line wakes the next waiter.
                drop(ticket);
                return Ok(reservation);
            }
            drop(inner);
            if first && make_room() {
                continue;
            }
            if let Some(why) = give_up() {
                return Err(NoRoom::GaveUp(why));
            }
            // A bounded wait: `need` and `give_up` are asked again even if nothing is released.
            let inner = self.lock();
            drop(self.changed.wait_timeout(inner, Duration::from_millis(50)));
        }
    }

    /// `bytes` now, over the budget if need be (memory already taken, such as a job's
    /// input): it shows in the usage and leaves that much less room to waiters.
    pub(crate) fn charge(self: &Arc<Self>, bytes: u64) -> Reservation {
        let mut inner = self.lock();
        self.take(&mut inner, bytes)
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
        let mut inner = self.budget.lock();
        inner.usage.reserved = inner.usage.reserved - self.bytes + bytes;
        inner.usage.peak = inner.usage.peak.max(inner.usage.reserved);
        let shrunk = bytes < self.bytes;
        self.bytes = bytes;
        drop(inner);
        if shrunk {
            self.budget.changed.notify_all();
        }
    }

    /// Takes in `other`'s bytes.
    pub(crate) fn join(&mut self, mut other: Reservation) {
        self.bytes += std::mem::take(&mut other.bytes);
    }

    /// Moves `bytes` of it (at most all) into a reservation of their own.
    pub(crate) fn split(&mut self, bytes: u64) -> Reservation {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Reservation { budget: Arc::clone(&self.budget), bytes }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.lock().usage.reserved -= self.bytes;
        self.budget.changed.notify_all();
    }
}

/// The memory budget and what the process holds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct MemoryStatus {
    /// `[memory] budget`, in bytes.
    pub budget_bytes: u64,
    /// Reserved now by resident parameter sets, partitions in flight and the host memory
    /// devices keep for the next partition (`kept_host_bytes`).
    pub reserved_bytes: u64,
    /// The most ever reserved.
    pub peak_reserved_bytes: u64,
    /// Partitions and parameter loads waiting for room now.
    pub waiting: usize,
    /// The process's resident memory now (0 where unknown).
    pub rss_bytes: u64,
    /// Its peak resident memory (0 where unknown).
    pub peak_rss_bytes: u64,
}

#[cfg(test)]
mod tests {
    use std::{sync::mpsc, thread, time::Instant};

    use super::*;

    const NEVER: fn() -> Option<String> = || None;

    fn rank(priority: Priority, seq: u64) -> Rank {
        (Reverse(priority), seq)
    }

    fn now(budget: &Arc<Budget>, bytes: u64) -> Result<Reservation, NoRoom> {
        budget.reserve(|| bytes, rank(Priority::Normal, 0), || false, || Some("no room now".into()))
    }

    #[test]
    fn reservations_fit_the_budget_and_are_released() {
        let budget = Budget::new(100);
        let mut a = now(&budget, 60).unwrap();
        assert_eq!(now(&budget, 50).err(), Some(NoRoom::GaveUp("no room now".into())));
        assert!(matches!(now(&budget, 101), Err(NoRoom::TooBig { bytes: 101, limit: 100 })));
        let mut b = now(&budget, 40).unwrap();
        assert_eq!(budget.usage(), Usage { reserved: 100, peak: 100 });
        b.resize(10);
        assert_eq!(budget.usage().reserved, 70);
        let part = a.split(20);
        assert_eq!((a.bytes(), part.bytes()), (40, 20));
        drop(a);
        assert_eq!(budget.usage(), Usage { reserved: 30, peak: 100 });
        drop((b, part));
        assert_eq!(budget.usage().reserved, 0);
        assert_eq!(budget.waiters(), 0, "a waiter that gave up left the line");
        let charged = budget.charge(150);
        assert_eq!(budget.usage(), Usage { reserved: 150, peak: 150 });
        drop(charged);
    }

    /// Waits until `n` waiters are in line.
    fn until_waiting(budget: &Budget, n: usize) {
        let start = Instant::now();
        while budget.waiters() < n {
            assert!(start.elapsed() < Duration::from_secs(10), "{n} waiters never queued");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_best_ranked_waiter_is_served_first_whatever_came_before() {
        let budget = Budget::new(100);
        let held = now(&budget, 100).unwrap();
        let (served, order) = mpsc::channel();
        let mut waiters = Vec::new();
        // A LOW and a NORMAL waiter queue first, each wanting what a critical one wants;
        // then the critical one; then a small NORMAL one, which fits beside any of them
        // but waits its turn.
        for (n, (priority, seq, bytes)) in
            [(Priority::Low, 1, 60), (Priority::Normal, 2, 60), (Priority::Critical, 9, 60), (Priority::Normal, 3, 10)]
                .into_iter()
                .enumerate()
        {
            let (waiter, served) = (Arc::clone(&budget), served.clone());
            waiters.push(thread::spawn(move || {
                let reservation = waiter.reserve(|| bytes, rank(priority, seq), || false, NEVER).unwrap();
                served.send(priority).unwrap();
                // Held a moment, so that the next can only follow its release.
                thread::sleep(Duration::from_millis(20));
                drop(reservation);
            }));
            until_waiting(&budget, n + 1);
        }
        drop(held);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        let order: Vec<Priority> = order.try_iter().collect();
        assert_eq!(order, [Priority::Critical, Priority::Normal, Priority::Normal, Priority::Low]);
    }

    #[test]
    fn what_a_waiter_needs_is_asked_again_while_it_waits() {
        let budget = Budget::new(100);
        let held = now(&budget, 70).unwrap();
        // It needs 50 until something else (a parameter set read meanwhile) covers 30 of it.
        let covered = std::sync::atomic::AtomicBool::new(false);
        let need = || if covered.load(std::sync::atomic::Ordering::Relaxed) { 20 } else { 50 };
        let reservation = thread::scope(|scope| {
            let waiter = scope.spawn(|| budget.reserve(need, rank(Priority::Normal, 0), || false, NEVER));
            until_waiting(&budget, 1);
            covered.store(true, std::sync::atomic::Ordering::Relaxed);
            waiter.join().unwrap().unwrap()
        });
        assert_eq!(reservation.bytes(), 20);
        drop((held, reservation));
    }

    #[test]
    fn the_first_waiter_makes_room_and_a_stopping_engine_ends_the_wait() {
        let budget = Budget::new(100);
        let mut idle = Some(now(&budget, 80).unwrap());
        let reservation = budget.reserve(|| 50, rank(Priority::High, 0), || idle.take().is_some(), NEVER).unwrap();
        assert_eq!(budget.usage().reserved, 50);
        let stopped = budget.reserve(|| 60, rank(Priority::High, 1), || false, || Some("stopping".into()));
        assert_eq!(stopped.err(), Some(NoRoom::GaveUp("stopping".into())));
        assert_eq!(budget.waiters(), 0);
        drop(reservation);
    }
}
