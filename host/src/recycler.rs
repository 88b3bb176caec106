//! Where a proof's spent assignment goes: freed off the hot path ([`Dealloc`]), or, where
//! the backend keeps host memory (ABI 1.6, `keep_host_memory`: a GPU backend page-locks it
//! once), kept for a later job of the same circuit, which the strategy synthesizes into
//! (`synthesize_into`). A 32 GiB PoRep partition's a, b, c and aux are 17 GB: locking and
//! unlocking them for every proof costs about a second of the device's time.
//!
//! The buffers a recycler keeps are never freed while the backend holds them: each is
//! released first, when the recycler is dropped, so every kept assignment must come back
//! to it ([`Recycler::spent`]), on error paths too.

use std::sync::Mutex;

use bellhop_plugin_sdk::{
    backend::Backend,
    strategy::{Assignment, Buffers, Job},
    types::Fr,
};

use crate::{dealloc::Dealloc, prover::MsmCalls, session::OpenedBackend};

/// Spent assignments, freed or kept for reuse.
pub struct Recycler<'a> {
    dealloc: &'a Dealloc,
    backend: Option<&'a dyn Backend>,
    /// The most assignments kept, free and in use.
    most: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Kept assignments not in use, each with the circuit it was last synthesized for.
    free: Vec<(String, Assignment)>,
    /// Assignments the backend keeps, free or in use, by the address of `a`.
    kept: Vec<usize>,
    /// The backend said it keeps nothing, or failed to: keep no more.
    off: bool,
}

/// Assignments lent out for one batch's synthesis ([`Recycler::lend`]).
pub struct Lent(Vec<Assignment>);

impl Lent {
    /// The buffers to synthesize into, one per job.
    pub fn buffers(&mut self) -> Vec<Buffers<'_>> {
        self.0
            .iter_mut()
            .map(|a| Buffers {
                a: a.a.as_mut_slice(),
                b: a.b.as_mut_slice(),
                c: a.c.as_mut_slice(),
                aux: a.aux.as_mut_slice(),
            })
            .collect()
    }
}

impl<'a> Recycler<'a> {
    /// A recycler that frees everything on `dealloc`.
    pub fn off(dealloc: &'a Dealloc) -> Self {
        Self { dealloc, backend: None, most: 0, state: Mutex::default() }
    }

    /// A recycler that keeps up to `most` assignments where `backend` keeps host memory and
    /// proves one proof per `proof_msms` call (the one call that reads the assignment in
    /// place); else as [`Recycler::off`].
    pub fn for_backend(backend: &'a OpenedBackend, dealloc: &'a Dealloc, most: usize) -> Self {
        let reads_in_place = backend.msm_calls() == MsmCalls::OneCall && !backend.proves_whole_batches();
        let backend: Option<&dyn Backend> = reads_in_place.then_some(backend.as_ref());
        Self { dealloc, backend, most, state: Mutex::default() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Kept assignments to synthesize `jobs` into, one per job and each last used for the
    /// job's circuit; `None` unless there is one for every job.
    pub fn lend(&self, jobs: &[Job]) -> Option<Lent> {
        let mut state = self.state();
        let mut lent = Vec::with_capacity(jobs.len());
        for job in jobs {
            match state.free.iter().position(|(circuit, _)| circuit == job.circuit.as_str()) {
                Some(i) => lent.push(state.free.swap_remove(i)),
                None => {
                    state.free.extend(lent);
                    return None;
                }
            }
        }
        Some(Lent(lent.into_iter().map(|(_, a)| a).collect()))
    }

    /// Takes back what [`Recycler::lend`] lent for `jobs`, unused.
    pub fn unused(&self, jobs: &[Job], lent: Lent) {
        let mut state = self.state();
        state.free.extend(jobs.iter().map(|j| j.circuit.to_string()).zip(lent.0));
    }

    /// Job `i`'s synthesized assignment with the a, b, c and aux of `lent`'s buffer `i`.
    pub fn fill(lent: Lent, assignments: &mut [Assignment]) {
        for (assignment, buffers) in assignments.iter_mut().zip(lent.0) {
            assignment.a = buffers.a;
            assignment.b = buffers.b;
            assignment.c = buffers.c;
            assignment.aux = buffers.aux;
        }
    }

    /// `assignment`, of `circuit`, is spent: kept for a later job of the circuit if the
    /// backend keeps it (or now agrees to), else freed off the hot path.
    pub fn spent(&self, circuit: &str, assignment: Assignment) {
        let Some(backend) = self.backend else { return self.dealloc.drop_later(assignment) };
        let address = assignment.a.as_ptr() as usize;
        let adopt = {
            let mut state = self.state();
            if state.kept.contains(&address) {
                state.free.push((circuit.to_string(), assignment));
                return;
            }
            let adopt = !state.off && state.kept.len() < self.most;
            if adopt {
                // Counted now, so that no other thread adopts past `most` meanwhile.
                state.kept.push(address);
            }
            adopt
        };
        if !adopt {
            return self.dealloc.drop_later(assignment);
        }
        let kept = backend.keep_host_memory(&ranges(&assignment));
        let mut state = self.state();
        match kept {
            Ok(true) => return state.free.push((circuit.to_string(), assignment)),
            Ok(false) => {}
            Err(e) => tracing::warn!("the backend could not keep a proof's host memory, so none is reused: {e}"),
        }
        state.off = true;
        state.kept.retain(|&a| a != address);
        drop(state);
        self.dealloc.drop_later(assignment);
    }

    /// Each job's assignment is spent ([`Recycler::spent`]).
    pub fn spent_all(&self, synthesized: impl IntoIterator<Item = (Job, Assignment)>) {
        for (job, assignment) in synthesized {
            self.spent(&job.circuit, assignment);
        }
    }

    /// Frees other buffers of a proof off the hot path.
    pub fn drop_later<T: Send + 'static>(&self, value: T) {
        self.dealloc.drop_later(value);
    }
}

/// The ranges of `assignment` a backend reads in place: a, b, c and aux.
fn ranges(assignment: &Assignment) -> [&[Fr]; 4] {
    [&assignment.a, &assignment.b, &assignment.c, &assignment.aux]
}

impl Drop for Recycler<'_> {
    /// Releases every kept assignment from the backend, then frees it.
    fn drop(&mut self) {
        let Some(backend) = self.backend else { return };
        let state = std::mem::take(&mut *self.state());
        if state.free.len() != state.kept.len() {
            tracing::error!(
                "{} of {} page-locked assignments were not returned to be released",
                state.kept.len() - state.free.len(),
                state.kept.len()
            );
        }
        for (_, assignment) in state.free {
            if let Err(e) = backend.release_host_memory(&ranges(&assignment)) {
                tracing::warn!("the backend could not release a proof's host memory: {e}");
            }
            self.dealloc.drop_later(assignment);
        }
    }
}
