//! Where a proof's spent assignment goes: freed off the hot path ([`Dealloc`]), or, where
//! the backend keeps host memory (ABI 1.6, `keep_host_memory`: a GPU backend page-locks it
//! once), kept in a [`KeptPool`] for a later job of the same circuit, which the strategy
//! synthesizes into (`synthesize_into`). A 32 GiB PoRep partition's a, b, c and aux are
//! 17 GB: locking and unlocking them for every proof costs about a second of the device's
//! time.
//!
//! The buffers a pool keeps are never freed while the backend holds them: each is released
//! first ([`KeptPool::release_free`]), so every kept assignment must come back to its pool
//! ([`Recycler::spent`], [`KeptPool::take_back`]), on error paths too. A pool trusts an
//! assignment by the address of its `a`: one freed behind its back could be mistaken for
//! another allocated at the same place.

use std::sync::{Mutex, MutexGuard};

use bellhop_plugin_sdk::{
    backend::Backend,
    strategy::{Assignment, Buffers, Job},
    types::Fr,
};

use crate::{dealloc::Dealloc, session::OpenedBackend};

/// Assignments one backend keeps, free or in use, shared by whoever synthesizes into them
/// and whoever proves them: a pipeline run, or a device of the engine for as long as its
/// backend is open.
pub struct KeptPool {
    /// The most assignments kept, free and in use.
    most: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Kept assignments not in use, each with the circuit it was last synthesized for,
    /// the most recently spent last.
    free: Vec<(String, Assignment)>,
    /// Assignments the backend keeps, free or in use, by the address of `a`.
    kept: Vec<usize>,
    /// The backend said it keeps nothing, or failed to: keep no more.
    off: bool,
}

/// Assignments lent out for one batch's synthesis ([`KeptPool::lend`]); what is not
/// [`Lent::fill`]ed into a synthesized assignment goes back to the pool when dropped.
pub struct Lent<'a> {
    pool: &'a KeptPool,
    circuits: Vec<String>,
    buffers: Vec<Assignment>,
}

impl<'a> Lent<'a> {
    /// The pool they were lent from.
    pub fn pool(&self) -> &'a KeptPool {
        self.pool
    }

    /// The buffers to synthesize into, one per job.
    pub fn buffers(&mut self) -> Vec<Buffers<'_>> {
        self.buffers
            .iter_mut()
            .map(|a| Buffers {
                a: a.a.as_mut_slice(),
                b: a.b.as_mut_slice(),
                c: a.c.as_mut_slice(),
                aux: a.aux.as_mut_slice(),
            })
            .collect()
    }

    /// The host memory the lent buffers hold, in bytes.
    pub fn bytes(&self) -> u64 {
        self.buffers.iter().map(held_bytes).sum()
    }

    /// Job `i`'s synthesized assignment with the a, b, c and aux of buffer `i`.
    pub fn fill(mut self, assignments: &mut [Assignment]) {
        for (assignment, buffers) in assignments.iter_mut().zip(self.buffers.drain(..)) {
            assignment.a = buffers.a;
            assignment.b = buffers.b;
            assignment.c = buffers.c;
            assignment.aux = buffers.aux;
        }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.state();
        state.free.extend(self.circuits.drain(..).zip(self.buffers.drain(..)));
    }
}

impl KeptPool {
    /// A pool that keeps up to `most` assignments.
    pub fn new(most: usize) -> Self {
        Self { most, state: Mutex::default() }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Kept assignments to synthesize `jobs` into, one per job and each last used for the
    /// job's circuit; `None` unless there is one for every job.
    pub fn lend(&self, jobs: &[Job]) -> Option<Lent<'_>> {
        let mut state = self.state();
        let mut lent = Vec::with_capacity(jobs.len());
        for job in jobs {
            match state.free.iter().rposition(|(circuit, _)| circuit == job.circuit.as_str()) {
                Some(i) => lent.push(state.free.remove(i)),
                None => {
                    state.free.extend(lent);
                    return None;
                }
            }
        }
        let (circuits, buffers) = lent.into_iter().unzip();
        Some(Lent { pool: self, circuits, buffers })
    }

    /// Takes `assignment`, of `circuit`, back if it is kept here (free again); else hands
    /// it back.
    pub fn take_back(&self, circuit: &str, assignment: Assignment) -> Option<Assignment> {
        let mut state = self.state();
        if state.kept.contains(&address(&assignment)) {
            state.free.push((circuit.to_string(), assignment));
            None
        } else {
            Some(assignment)
        }
    }

    /// The host memory of the free assignments, in bytes.
    pub fn free_bytes(&self) -> u64 {
        self.state().free.iter().map(|(_, a)| held_bytes(a)).sum()
    }

    /// Releases every free assignment from `backend` (the one that keeps them) and frees
    /// it on `dealloc`: the count. With `forget`, the backend is going away: the ones in use
    /// are no longer counted as kept (each is freed when spent, or kept anew), and a backend
    /// that declined may be asked again.
    pub fn release_free(&self, backend: &dyn Backend, dealloc: &Dealloc, forget: bool) -> usize {
        let free = {
            let mut state = self.state();
            let free = std::mem::take(&mut state.free);
            if forget {
                *state = State::default();
            } else {
                state.kept.retain(|a| !free.iter().any(|(_, f)| address(f) == *a));
            }
            free
        };
        let released = free.len();
        for (_, assignment) in free {
            release(backend, dealloc, assignment);
        }
        released
    }

    /// Adopts `assignment` if the backend keeps it (or now agrees to), making room by
    /// releasing the least recently spent free assignment of another circuit; else frees it.
    fn adopt(&self, backend: &dyn Backend, dealloc: &Dealloc, circuit: &str, assignment: Assignment) {
        let address = address(&assignment);
        let (adopt, evicted) = {
            let mut state = self.state();
            let evicted = match state.free.iter().position(|(c, _)| c != circuit) {
                Some(i) if !state.off && state.kept.len() >= self.most => {
                    let (_, evicted) = state.free.remove(i);
                    state.kept.retain(|&a| a != self::address(&evicted));
                    Some(evicted)
                }
                _ => None,
            };
            let adopt = !state.off && state.kept.len() < self.most;
            if adopt {
                // Counted now, so that no other thread adopts past `most` meanwhile.
                state.kept.push(address);
            }
            (adopt, evicted)
        };
        if let Some(evicted) = evicted {
            release(backend, dealloc, evicted);
        }
        if !adopt {
            return dealloc.drop_later(assignment);
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
        dealloc.drop_later(assignment);
    }
}

/// Spent assignments, freed or kept for reuse: a view of a [`KeptPool`] with the backend
/// that keeps its assignments.
pub struct Recycler<'a> {
    dealloc: &'a Dealloc,
    /// The backend that keeps the pool's assignments, where it keeps any.
    backend: Option<&'a dyn Backend>,
    pool: Option<&'a KeptPool>,
}

impl<'a> Recycler<'a> {
    /// A recycler that frees everything on `dealloc`.
    pub fn off(dealloc: &'a Dealloc) -> Self {
        Self { dealloc, backend: None, pool: None }
    }

    /// A recycler that keeps assignments in `pool` where `backend` keeps host memory and
    /// proves one proof per `proof_msms` call (which reads the assignment in place, where
    /// `prove_batch` does not); else it frees them, but for those the pool already keeps.
    /// The pool's owner releases what it keeps ([`KeptPool::release_free`]) before the
    /// backend is closed.
    pub fn over(backend: &'a OpenedBackend, dealloc: &'a Dealloc, pool: &'a KeptPool) -> Self {
        let backend: Option<&dyn Backend> = (!backend.proves_whole_batches()).then_some(backend.as_ref());
        Self { dealloc, backend, pool: Some(pool) }
    }

    /// A recycler that gives back to `pool` what it keeps and frees the rest: for a proof
    /// on another backend than the one that keeps the pool's assignments.
    pub fn giving_back(dealloc: &'a Dealloc, pool: &'a KeptPool) -> Self {
        Self { dealloc, backend: None, pool: Some(pool) }
    }

    /// `assignment`, of `circuit`, is spent: back to the pool if kept there, kept for a
    /// later job of the circuit if the backend keeps it (or now agrees to), else freed off
    /// the hot path.
    pub fn spent(&self, circuit: &str, assignment: Assignment) {
        let Some(pool) = self.pool else { return self.dealloc.drop_later(assignment) };
        let Some(assignment) = pool.take_back(circuit, assignment) else { return };
        match self.backend {
            Some(backend) => pool.adopt(backend, self.dealloc, circuit, assignment),
            None => self.dealloc.drop_later(assignment),
        }
    }

    /// Each of `assignments` of `circuit` is spent ([`Recycler::spent`]).
    pub fn spent_all(&self, circuit: &str, assignments: impl IntoIterator<Item = Assignment>) {
        for assignment in assignments {
            self.spent(circuit, assignment);
        }
    }

    /// Frees other buffers of a proof off the hot path.
    pub fn drop_later<T: Send + 'static>(&self, value: T) {
        self.dealloc.drop_later(value);
    }
}

/// Releases `assignment` from `backend`, then frees it.
fn release(backend: &dyn Backend, dealloc: &Dealloc, assignment: Assignment) {
    if let Err(e) = backend.release_host_memory(&ranges(&assignment)) {
        tracing::warn!("the backend could not release a proof's host memory: {e}");
    }
    dealloc.drop_later(assignment);
}

/// The address a pool knows an assignment by: its `a`'s.
fn address(assignment: &Assignment) -> usize {
    assignment.a.as_ptr() as usize
}

/// The ranges of `assignment` a backend reads in place: a, b, c and aux.
fn ranges(assignment: &Assignment) -> [&[Fr]; 4] {
    [&assignment.a, &assignment.b, &assignment.c, &assignment.aux]
}

/// The host memory of `assignment`'s kept ranges, in bytes.
fn held_bytes(assignment: &Assignment) -> u64 {
    let [a, b, c, aux] = [&assignment.a, &assignment.b, &assignment.c, &assignment.aux].map(|v| v.capacity());
    ((a + b + c + aux) * std::mem::size_of::<Fr>()) as u64
}
