//! How many batches the pipeline synthesizes at once: as many as keep proving busy, from
//! the measured synthesis and proving times of a batch, never more than the configured
//! lookahead.

use std::sync::{Condvar, Mutex, MutexGuard};

/// Batches claimed for synthesis and not yet taken by the prover, against a limit the
/// prover moves as it measures.
pub(crate) struct Slots {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    claimed: usize,
    limit: usize,
    closed: bool,
}

impl Slots {
    /// Slots of which `limit` may be claimed at once.
    pub(crate) fn new(limit: usize) -> Self {
        Self { state: Mutex::new(State { claimed: 0, limit, closed: false }), changed: Condvar::new() }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits for a free slot and claims it; false once closed.
    pub(crate) fn claim(&self) -> bool {
        let mut state = self.state();
        while !state.closed && state.claimed >= state.limit {
            state = self.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        if state.closed {
            return false;
        }
        state.claimed += 1;
        true
    }

    /// The prover took a synthesized batch: its slot is free.
    pub(crate) fn release(&self) {
        let mut state = self.state();
        state.claimed = state.claimed.saturating_sub(1);
        self.changed.notify_all();
    }

    /// Lets `limit` batches be claimed at once; true if that changed it.
    pub(crate) fn set_limit(&self, limit: usize) -> bool {
        let mut state = self.state();
        let changed = state.limit != limit;
        state.limit = limit;
        self.changed.notify_all();
        changed
    }

    /// No more claims: waiting and later ones return false.
    pub(crate) fn close(&self) {
        self.state().closed = true;
        self.changed.notify_all();
    }
}

/// Mean seconds a batch spends in synthesis and in proving, so far.
#[derive(Default)]
pub(crate) struct BatchTimes {
    synthesis: (f64, u32),
    proving: (f64, u32),
}

impl BatchTimes {
    pub(crate) fn synthesized(&mut self, seconds: f64) {
        self.synthesis = (self.synthesis.0 + seconds, self.synthesis.1 + 1);
    }

    pub(crate) fn proved(&mut self, seconds: f64) {
        self.proving = (self.proving.0 + seconds, self.proving.1 + 1);
    }

    /// The batches to synthesize at once so that one is ready whenever the prover takes
    /// the next: synthesis over proving time, rounded up, from 1 to `cap`; None until
    /// both have been measured.
    pub(crate) fn concurrency(&self, cap: usize) -> Option<usize> {
        let mean = |(total, n): (f64, u32)| (n > 0).then(|| total / f64::from(n));
        let (synthesis, proving) = (mean(self.synthesis)?, mean(self.proving)?);
        let needed = if proving > 0.0 { (synthesis / proving).ceil() } else { f64::INFINITY };
        Some((needed.min(cap as f64) as usize).clamp(1, cap.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{sync::Arc, time::Duration};

    #[test]
    fn concurrency_follows_synthesis_over_proving_within_the_cap() {
        let times = |synthesis: &[f64], proving: &[f64]| {
            let mut t = BatchTimes::default();
            synthesis.iter().for_each(|&s| t.synthesized(s));
            proving.iter().for_each(|&p| t.proved(p));
            t
        };
        assert_eq!(times(&[], &[0.2]).concurrency(4), None);
        assert_eq!(times(&[0.6], &[]).concurrency(4), None);
        assert_eq!(times(&[0.6], &[0.2]).concurrency(4), Some(3));
        assert_eq!(times(&[0.5, 0.7], &[0.2]).concurrency(4), Some(3), "means");
        assert_eq!(times(&[0.61], &[0.2]).concurrency(4), Some(4), "rounded up");
        assert_eq!(times(&[3.0], &[0.2]).concurrency(4), Some(4), "capped");
        assert_eq!(times(&[0.1], &[0.2]).concurrency(4), Some(1), "at least one");
        assert_eq!(times(&[0.1], &[0.0]).concurrency(2), Some(2), "proving too fast to measure");
    }

    #[test]
    fn claims_wait_for_a_slot_and_stop_when_closed() {
        let slots = Arc::new(Slots::new(1));
        assert!(slots.claim());
        let waiting = {
            let slots = Arc::clone(&slots);
            std::thread::spawn(move || slots.claim())
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiting.is_finished(), "a second claim waits while the limit is 1");
        assert!(slots.set_limit(2));
        assert!(waiting.join().unwrap(), "raising the limit lets it through");
        let blocked = {
            let slots = Arc::clone(&slots);
            std::thread::spawn(move || slots.claim())
        };
        slots.release();
        assert!(blocked.join().unwrap(), "a release frees a slot");
        let closed = {
            let slots = Arc::clone(&slots);
            std::thread::spawn(move || slots.claim())
        };
        slots.close();
        assert!(!closed.join().unwrap());
        assert!(!slots.claim());
    }
}
