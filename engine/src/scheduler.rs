//! The engine's state under one lock, and its workers: synthesis workers take the
//! highest-ranked partition, device workers the highest-ranked synthesized one.

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BTreeSet, HashMap},
    panic::{catch_unwind, AssertUnwindSafe},
    path::PathBuf,
    sync::{Arc, Condvar, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use bellhop_circuits::CircuitSpec;
use bellhop_host::{
    config::Config,
    params::Shape,
    pipeline::{self, PipelineError, Randomness},
};
use bellhop_plugin_sdk::strategy::{Assignment, Job, Strategy};
use tokio::sync::watch;

use crate::{
    budget::{Budget, NoRoom, Rank, Reservation},
    device::{Device, Fault, Pooled, Released},
    job::{JobKind, Outcome, Priority, PriorityCaps, Refused, Timings},
    journal::SharedJournal,
    metrics::Metrics,
    params::{Dropped, Lease, ParamCache},
};

/// Why [`Shared::acquire_params`] acquired nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AcquireError {
    /// Asked holding lent buffers, which never waits: there is no room now. Asked again
    /// holding none, it waits for room.
    #[error("no room now")]
    NoRoomNow,
    /// Anything else: why, for the job's error.
    #[error("{0}")]
    Failed(String),
}

/// A partition's place in the queues: highest priority first, then the older job, then
/// the lower partition. Its job is the one of sequence `seq`: ids may name several jobs
/// over time, so a partition is never matched to its job by id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TaskKey {
    pub(crate) rank: Reverse<Priority>,
    pub(crate) seq: u64,
    pub(crate) partition: usize,
}

/// A synthesized batch waiting for a device: partitions of one circuit in queue order,
/// each with its assignment, and the memory they hold.
pub(crate) struct Synthesized {
    lease: Lease,
    // Before `reservation`: kept assignments are back in their pool, and charged there,
    // before the batch's share of the budget goes.
    parts: Vec<(TaskKey, Pooled)>,
    reservation: Reservation,
}

impl Synthesized {
    /// Drops the partitions of job `seq` (their assignments go back to their pool); false
    /// once none is left.
    fn drop_job(&mut self, seq: u64) -> bool {
        self.parts.retain(|(key, _)| key.seq != seq);
        !self.parts.is_empty()
    }
}

/// Why a batch's synthesis failed, and the partition whose statement failed, by its
/// place in the batch, where one did.
pub(crate) struct SynthesisFailed {
    why: String,
    culprit: Option<usize>,
}

/// What each partition of a job reads.
pub(crate) enum Inputs {
    /// The whole input, every partition.
    Whole(Arc<Vec<u8>>),
    /// Its own, partition by partition; a proved partition's is dropped.
    Each(Vec<Arc<Vec<u8>>>),
}

impl Inputs {
    /// The input of a job's `partitions` partitions: `prepared`'s, else the whole `input`.
    pub(crate) fn new(input: Vec<u8>, prepared: Option<Vec<Vec<u8>>>) -> Self {
        match prepared {
            Some(each) => Inputs::Each(each.into_iter().map(Arc::new).collect()),
            None => Inputs::Whole(Arc::new(input)),
        }
    }

    fn of(&self, partition: usize) -> Arc<Vec<u8>> {
        match self {
            Inputs::Whole(input) => Arc::clone(input),
            Inputs::Each(each) => Arc::clone(&each[partition]),
        }
    }

    fn proved(&mut self, partition: usize) {
        if let Inputs::Each(each) = self {
            each[partition] = Arc::default();
        }
    }

    /// The bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Inputs::Whole(input) => input.len() as u64,
            Inputs::Each(each) => each.iter().map(|input| input.len() as u64).sum(),
        }
    }
}

/// A job and its progress.
pub(crate) struct JobEntry {
    pub(crate) seq: u64,
    /// Its id, unique among the jobs the engine holds.
    pub(crate) id: Arc<str>,
    /// The caller's id it was submitted under (its `id`, or the one `id` was made from).
    pub(crate) request_id: Arc<str>,
    pub(crate) kind: JobKind,
    pub(crate) circuit: CircuitSpec,
    pub(crate) priority: Priority,
    pub(crate) digest: [u8; 32],
    /// The bytes of input it was submitted with.
    pub(crate) input_bytes: u64,
    pub(crate) inputs: Inputs,
    /// The memory budget's share for `inputs`, until the job ends.
    pub(crate) input_memory: Option<Reservation>,
    /// The memory one of its partitions needs with its parameters (0 where unknown).
    pub(crate) need: u64,
    pub(crate) submitted: Instant,
    pub(crate) started: Option<Instant>,
    /// Times it was started, in this life of the daemon and the ones it did not outlive.
    pub(crate) attempts: u32,
    /// Partition k's witness seed is `first_seed + k` ([`crate::JobRequest::first_seed`]).
    pub(crate) first_seed: u64,
    /// The number of its partition 0 among every partition this engine was given:
    /// partition k is proof `first_proof + k` (the `proof` index of its phases, and its
    /// blinding where r and s are fixed).
    pub(crate) first_proof: usize,
    /// Its partitions are synthesized in batches of its own alone (a batch with another
    /// job's failed as a whole).
    pub(crate) alone: bool,
    pub(crate) proofs: Vec<Option<Vec<u8>>>,
    /// What its proof is made with besides its partitions' (a NonInteractivePoRep's
    /// aggregation), once they are all proved.
    pub(crate) aggregation: Option<Arc<[u8]>>,
    pub(crate) timings: Timings,
    pub(crate) ended: Option<Instant>,
    pub(crate) outcome: watch::Sender<Option<Outcome>>,
}

impl JobEntry {
    pub(crate) fn rank(&self) -> (Reverse<Priority>, u64) {
        (Reverse(self.priority), self.seq)
    }

    /// Queues every partition not yet proved.
    pub(crate) fn queue(&self, pending: &mut BTreeSet<TaskKey>) {
        for (partition, proof) in self.proofs.iter().enumerate() {
            if proof.is_none() {
                pending.insert(TaskKey { rank: Reverse(self.priority), seq: self.seq, partition });
            }
        }
    }

    /// Partitions proved.
    pub(crate) fn partitions_done(&self) -> usize {
        self.proofs.iter().filter(|p| p.is_some()).count()
    }

    /// Whether a request for this job's request id and payload is this job again: while
    /// it runs or once it completed; after it failed or was cancelled it runs anew.
    pub(crate) fn answers_again(&self) -> bool {
        match &*self.outcome.borrow() {
            None | Some(Outcome::Completed { .. } | Outcome::Benchmarked { .. }) => true,
            Some(Outcome::Failed(_) | Outcome::Cancelled) => false,
        }
    }
}

/// Everything the workers share, under one lock.
pub(crate) struct State {
    pub(crate) accepting: bool,
    pub(crate) stopping: bool,
    pub(crate) next_seq: u64,
    /// The number the next job's partition 0 gets ([`JobEntry::first_proof`]).
    pub(crate) next_proof: usize,
    /// Pauses of synthesis held ([`crate::Engine::pause_synthesis`]): none starts meanwhile.
    pub(crate) paused: usize,
    /// Jobs not ended, and ended ones kept for `[daemon] keep_results`, by sequence.
    pub(crate) jobs: HashMap<u64, JobEntry>,
    /// The job each id names.
    pub(crate) ids: HashMap<Arc<str>, u64>,
    /// The newest job of each request id and payload digest.
    pub(crate) requests: HashMap<(Arc<str>, [u8; 32]), u64>,
    /// Partitions not yet taken by a synthesis worker.
    pub(crate) pending: BTreeSet<TaskKey>,
    /// Batches in synthesis now, by their first partition: the worker synthesizing each,
    /// and its partitions.
    pub(crate) synthesizing: BTreeMap<TaskKey, (usize, Vec<TaskKey>)>,
    /// Synthesized batches waiting for a device, by their first partition.
    pub(crate) ready: BTreeMap<TaskKey, Synthesized>,
    /// Each device's state, by ordinal.
    pub(crate) devices: Vec<DeviceState>,
    /// Jobs completed, failed and cancelled since start.
    pub(crate) ended: [u64; 3],
    /// Jobs not ended, and the bytes of input they were submitted with.
    pub(crate) queued: (usize, u64),
}

/// What one device is doing and has done.
#[derive(Default)]
pub(crate) struct DeviceState {
    /// The partitions it is proving (empty: none).
    pub(crate) proving: Vec<TaskKey>,
    /// Why it is down, if it is.
    pub(crate) down: Option<String>,
    /// Times it was marked down since start.
    pub(crate) marked_down: u64,
    /// Partitions it proved.
    pub(crate) proved: u64,
}

impl State {
    /// Batches in synthesis or synthesized and waiting that rank with `key` or above.
    fn in_flight_at_or_above(&self, key: &TaskKey) -> usize {
        let rank = |k: &TaskKey| k.rank <= key.rank;
        self.synthesizing.keys().filter(|k| rank(k)).count() + self.ready.keys().filter(|k| rank(k)).count()
    }

    /// Jobs that will be served before `job`: those not ended that rank higher.
    pub(crate) fn queue_position(&self, job: &JobEntry) -> u32 {
        self.jobs.values().filter(|other| other.ended.is_none() && other.rank() < job.rank()).count() as u32
    }

    /// Serves as NORMAL the LOW jobs queued for `after` or longer, so that NORMAL work
    /// cannot starve them.
    fn age_low(&mut self, after: Duration) {
        let aged: Vec<TaskKey> = self
            .pending
            .iter()
            .rev()
            .take_while(|key| key.rank.0 == Priority::Low)
            .filter(|key| self.jobs.get(&key.seq).is_some_and(|job| job.submitted.elapsed() >= after))
            .cloned()
            .collect();
        for key in aged {
            self.pending.remove(&key);
            if let Some(job) = self.jobs.get_mut(&key.seq).filter(|job| job.priority == Priority::Low) {
                tracing::info!(job = %job.id, "queued LOW for {after:?} or longer: served as NORMAL from now on");
                job.priority = Priority::Normal;
            }
            self.pending.insert(TaskKey { rank: Reverse(Priority::Normal), ..key });
        }
    }

    /// The job `id` names.
    pub(crate) fn job_named(&self, id: &str) -> Option<&JobEntry> {
        self.ids.get(id).and_then(|seq| self.jobs.get(seq))
    }

    /// Holds `job` under its id and its request, replacing (and forgetting) an ended job
    /// that held either.
    pub(crate) fn insert(&mut self, mut job: JobEntry) {
        let seq = job.seq;
        job.first_proof = self.next_proof;
        self.next_proof += job.proofs.len();
        if job.ended.is_none() {
            self.queued.0 += 1;
            self.queued.1 += job.input_bytes;
        }
        for old in [
            self.ids.insert(Arc::clone(&job.id), seq),
            self.requests.insert((Arc::clone(&job.request_id), job.digest), seq),
        ]
        .into_iter()
        .flatten()
        {
            self.forget(old);
        }
        self.jobs.insert(seq, job);
    }

    /// Drops ended job `seq` and the names that still point at it.
    fn forget(&mut self, seq: u64) {
        let Some(job) = self.jobs.remove(&seq) else { return };
        debug_assert!(job.ended.is_some(), "only ended jobs are replaced or swept");
        if self.ids.get(&job.id) == Some(&seq) {
            self.ids.remove(&job.id);
        }
        let request = (job.request_id, job.digest);
        if self.requests.get(&request) == Some(&seq) {
            self.requests.remove(&request);
        }
    }
}

/// One of the engine's worker threads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Worker {
    /// Synthesis worker `n`.
    Synthesis(usize),
    /// Device `d`'s worker.
    Device(usize),
}

impl std::fmt::Display for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Worker::Synthesis(n) => write!(f, "synthesis worker {n}"),
            Worker::Device(d) => write!(f, "worker of device {d}"),
        }
    }
}

/// Runs `worker` until it returns; when it panics, `died` is told and it runs again.
pub(crate) fn supervise(mut worker: impl FnMut(), mut died: impl FnMut(&str)) {
    while let Err(panic) = catch_unwind(AssertUnwindSafe(&mut worker)) {
        died(&bellhop_plugin_sdk::panic_message(&*panic));
    }
}

/// What the engine's threads share.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) state: Mutex<State>,
    /// Signalled whenever queues, devices or jobs change.
    pub(crate) work: Condvar,
    pub(crate) params: Arc<ParamCache>,
    pub(crate) budget: Arc<Budget>,
    pub(crate) journal: SharedJournal,
    /// Held by a submission from its checks until its job is queued.
    pub(crate) submitting: Mutex<()>,
    pub(crate) metrics: Metrics,
    pub(crate) strategy: Box<dyn Strategy>,
    /// Its name and source.
    pub(crate) strategy_name: String,
    pub(crate) devices: Vec<Arc<Device>>,
    /// Where plugins are found, to reopen a device's backend.
    pub(crate) plugin_dir: PathBuf,
    /// `[pipeline] lookahead` per device: partitions that may be in synthesis or
    /// synthesized and waiting beside those proving, counting those of the same or higher
    /// rank (so a partition that outranks everything in flight starts at once on an idle
    /// worker), unless more workers are free to take them: see [`Shared::may_start`].
    pub(crate) ahead: usize,
    /// Synthesis workers.
    pub(crate) workers: usize,
    /// `[pipeline] batch`: the most partitions synthesized and proved together.
    pub(crate) batch: usize,
    /// `[daemon] max_priority`.
    pub(crate) priority_caps: PriorityCaps,
    /// Where each proof's r and s come from, by its number ([`JobEntry::first_proof`]).
    pub(crate) randomness: Arc<Randomness>,
    pub(crate) started: Instant,
}

/// The bytes a synthesized partition holds once proving pads A, B and C to the domain and
/// gathers the MSM scalars: what was measured of the assignment, plus what proving adds.
fn in_flight_bytes(assignment: &Assignment, shape: &Shape) -> u64 {
    let domain = shape.h + 1;
    let abc = [&assignment.a, &assignment.b, &assignment.c].iter().map(|v| v.capacity().max(domain)).sum::<usize>();
    let scalars = abc + assignment.aux.capacity() + assignment.inputs.capacity() + shape.a + shape.b_g1 + domain;
    let densities = [&assignment.a_aux_density, &assignment.b_input_density, &assignment.b_aux_density]
        .iter()
        .map(|d| d.words.capacity() * 8)
        .sum::<usize>();
    (scalars * 32 + densities) as u64
}

fn missing_params_hint(circuit: &CircuitSpec) -> String {
    if circuit.reads_input() {
        format!(
            "fetch Filecoin's published parameter files into [params] dir (as filecoin-proofs' paramfetch or \
             `curio fetch-params` do), or for testing generate insecure ones with `bellhop params gen {circuit}`"
        )
    } else {
        format!("generate them with `bellhop params gen {circuit}`")
    }
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Refuses a circuit whose parameter file is not there (saying how to get it), or
    /// that can never fit the memory budget.
    /// Returns the memory one partition needs with its parameters.
    pub(crate) fn check_params(&self, circuit: &CircuitSpec) -> Result<u64, Refused> {
        let path = self.params.path(circuit).map_err(Refused::Invalid)?;
        if !self.params.is_resident(circuit) && !path.exists() {
            return Err(Refused::MissingParams {
                circuit: circuit.to_string(),
                path: path.display().to_string(),
                how: missing_params_hint(circuit),
            });
        }
        let need = self.params.need(circuit).map_err(Refused::BadParams)?;
        if need > self.budget.limit() {
            return Err(Refused::TooBig { circuit: circuit.to_string(), need, budget: self.budget.limit() });
        }
        Ok(need)
    }

    /// Whether the engine takes `circuit`: a benchmark-only one (synthetic input) only
    /// with `[daemon] synthetic_benchmarks`.
    pub(crate) fn admit(&self, circuit: &CircuitSpec) -> Result<(), String> {
        if self.config.daemon.synthetic_benchmarks {
            return Ok(());
        }
        circuit.refuse_benchmark_only().map_err(|e| {
            format!(
                "{e}; to measure the daemon with it, set [daemon] synthetic_benchmarks = true (its jobs then complete \
                 without a proof)"
            )
        })
    }

    /// Refuses a new job of `circuit` and `priority` with `bytes` of input, one partition of
    /// which needs `need` bytes with its parameters, when the jobs not ended would pass
    /// `[daemon] max_queued` or `max_queued_bytes` (HIGH and CRITICAL jobs, PoSt, may use up
    /// to twice those, so that a flood of other work never shuts them out), or when the
    /// inputs they hold (charged to the memory budget until they end) would leave less
    /// than the largest need among them: then a job first in line could wait forever.
    pub(crate) fn check_room(
        &self,
        state: &State,
        (circuit, priority): (&CircuitSpec, Priority),
        bytes: u64,
        need: u64,
    ) -> Result<(), Refused> {
        let daemon = &self.config.daemon;
        let scale = if priority >= Priority::High { 2 } else { 1 };
        let (jobs, held) = state.queued;
        if jobs + 1 > daemon.max_queued.saturating_mul(scale)
            || held + bytes > daemon.max_queued_bytes.saturating_mul(scale as u64)
        {
            return Err(Refused::QueueFull {
                jobs,
                bytes: held,
                job_bytes: bytes,
                max_queued: daemon.max_queued,
                max_queued_bytes: daemon.max_queued_bytes,
            });
        }
        let queued = state.jobs.values().filter(|job| job.ended.is_none()).map(|job| (job.circuit, job.need));
        let (largest, need) =
            std::iter::once((*circuit, need)).chain(queued).max_by_key(|&(_, need)| need).expect("one at least");
        let budget = self.budget.limit();
        if held + bytes + need > budget {
            return Err(Refused::NoRoomToProve { circuit: largest.to_string(), held, job_bytes: bytes, need, budget });
        }
        Ok(())
    }

    /// The device a new job will be proved on, where that is known: the only one up.
    pub(crate) fn assigned_device(&self, state: &State) -> Option<u32> {
        let mut up = state.devices.iter().enumerate().filter(|(_, device)| device.down.is_none());
        match (up.next(), up.next()) {
            (Some((d, _)), None) => Some(d as u32),
            _ => None,
        }
    }

    /// Forgets jobs that ended longer ago than results are kept.
    pub(crate) fn sweep(&self, state: &mut State) {
        let keep = self.config.daemon.keep_results;
        let old: Vec<u64> = state
            .jobs
            .values()
            .filter(|job| job.ended.is_some_and(|ended| ended.elapsed() >= keep))
            .map(|job| job.seq)
            .collect();
        for seq in old {
            state.forget(seq);
        }
    }

    /// `bytes` of the memory budget for work on `circuit` ranked `rank`, if `wait` waiting
    /// for room (and, first in line, making room for it) as long as the engine runs, else
    /// only if there is room now. No lock is held while it waits.
    pub(crate) fn reserve(
        &self,
        need: impl Fn() -> u64,
        circuit: &CircuitSpec,
        rank: Rank,
        wait: bool,
    ) -> Result<Reservation, AcquireError> {
        let make_room = || wait && self.make_room(circuit);
        let give_up = || match wait {
            true => self.lock().stopping.then(|| "the engine is stopping".to_string()),
            false => Some(AcquireError::NoRoomNow.to_string()),
        };
        self.budget.reserve(need, rank, make_room, give_up).map_err(|e| match e {
            NoRoom::GaveUp(_) if !wait => AcquireError::NoRoomNow,
            e => AcquireError::Failed(e.to_string()),
        })
    }

    /// Frees memory for work on `circuit`: kept assignments first (page-locked again on
    /// their next use), then an idle parameter set of another circuit (read again); whether
    /// it did.
    fn make_room(&self, circuit: &CircuitSpec) -> bool {
        let (mut released, mut busy) = (false, false);
        for device in &self.devices {
            match device.release_pooled() {
                Released::Some => released = true,
                Released::Busy => busy = true,
                Released::Nothing => {}
            }
        }
        if released {
            return true;
        }
        // A device's call ends soon, and its kept buffers can go then: no set is
        // evicted meanwhile.
        if busy {
            return false;
        }
        match self.params.evict_idle(circuit) {
            Some(dropped) => {
                self.release(dropped);
                true
            }
            None => false,
        }
    }

    /// The memory of `partitions` partitions of `circuit` in flight (none: a preload) and,
    /// while its parameter set is not resident, the set's, for work ranked `rank`: reserved
    /// in one wait, so that no worker waits for room holding part of what it needs (a set in
    /// use cannot be evicted). `held` is what the partitions hold already (kept buffers lent
    /// to them): with it, room is only taken if there is some now, without waiting or making
    /// room, and on success the partitions' reservation takes it in. Returns the
    /// partitions' reservation and the set's.
    fn reserve_params(
        &self,
        circuit: &CircuitSpec,
        partitions: usize,
        rank: Rank,
        held: &mut Option<Reservation>,
    ) -> Result<(Reservation, Reservation), AcquireError> {
        let failed = |e: String| AcquireError::Failed(format!("its parameters: {e}"));
        let shape = self.params.shape(circuit).map_err(failed)?;
        let wait = held.is_none();
        let held_bytes = held.as_ref().map_or(0, Reservation::bytes);
        let partition_bytes = self.params.partition_bytes(circuit, &shape) * partitions as u64;
        let set_bytes = shape.resident_bytes();
        let limit = self.budget.limit();
        if partition_bytes + set_bytes > limit && !self.params.is_resident(circuit) {
            return Err(AcquireError::Failed(format!(
                "{partitions} partition(s) of {circuit} take {partition_bytes} bytes and its parameters {set_bytes}, \
                 more than the [memory] budget of {limit} bytes; raise the budget"
            )));
        }
        // The set's share only while it is not resident: it may become so while this waits.
        let wanted = partition_bytes.saturating_sub(held_bytes);
        let need = || wanted + if self.params.is_resident(circuit) { 0 } else { set_bytes };
        let mut reservation = self.reserve(need, circuit, rank, wait)?;
        let set = reservation.split(reservation.bytes() - wanted);
        if let Some(held) = held.take() {
            reservation.join(held);
        }
        Ok((reservation, set))
    }

    /// A lease on `circuit`'s parameter set, read if it is not resident (and how long that
    /// took) under `set`, the room reserved for it; if another worker evicted the set
    /// meanwhile, room is reserved anew, waiting for it if `wait`. Only a load of the same
    /// circuit is waited for.
    fn lease_params(
        &self,
        circuit: &CircuitSpec,
        set: Reservation,
        rank: Rank,
        wait: bool,
    ) -> Result<(Lease, Option<Duration>), AcquireError> {
        let mut set = Some(set);
        let mut no_room = false;
        self.params
            .acquire(circuit, |bytes| match set.take().filter(|set| set.bytes() >= bytes) {
                Some(reserved) => Ok(reserved),
                None => self.reserve(|| bytes, circuit, rank, wait).map_err(|e| {
                    no_room = matches!(e, AcquireError::NoRoomNow);
                    e.to_string()
                }),
            })
            .map_err(|e| {
                if no_room {
                    AcquireError::NoRoomNow
                } else {
                    AcquireError::Failed(format!("its parameters: {e}"))
                }
            })
    }

    /// The parameters of `circuit` and the memory of `partitions` partitions in flight
    /// (none: a preload), for work ranked `rank`: [`Shared::reserve_params`], then
    /// [`Shared::lease_params`].
    pub(crate) fn acquire_params(
        &self,
        circuit: &CircuitSpec,
        partitions: usize,
        rank: Rank,
        held: &mut Option<Reservation>,
    ) -> Result<(Lease, Option<Duration>, Option<Reservation>), AcquireError> {
        let wait = held.is_none();
        let (reservation, set) = self.reserve_params(circuit, partitions, rank, held)?;
        let (lease, loaded) = self.lease_params(circuit, set, rank, wait)?;
        Ok((lease, loaded, (partitions > 0).then_some(reservation)))
    }

    /// Releases a dropped parameter set on every device.
    pub(crate) fn release(&self, dropped: Dropped) {
        for device in &self.devices {
            device.release(&dropped.srs);
        }
        self.metrics.params_evicted(&dropped.circuit.to_string());
        tracing::info!("evicted the parameters of {} ({} bytes)", dropped.circuit, dropped.bytes);
    }

    /// Ends job `seq` with `outcome`: its queued and synthesized partitions are dropped,
    /// the journal records it, waiters are told, and it is counted.
    pub(crate) fn end(&self, state: &mut State, seq: u64, outcome: Outcome) {
        let Some(job) = state.jobs.get_mut(&seq) else { return };
        if job.ended.is_some() {
            return;
        }
        job.ended = Some(Instant::now());
        job.proofs.clear();
        job.inputs = Inputs::Whole(Arc::default());
        job.input_memory = None;
        let input_bytes = job.input_bytes;
        let kind = job.kind;
        let id = Arc::clone(&job.id);
        // Written once the state lock is released (`SharedJournal::flush`).
        self.journal.defer_end(Arc::clone(&id), outcome.clone());
        match &outcome {
            Outcome::Completed { .. } | Outcome::Benchmarked { .. } => state.ended[0] += 1,
            Outcome::Failed(why) => {
                tracing::warn!(job = %id, "failed: {why}");
                state.ended[1] += 1;
            }
            Outcome::Cancelled => state.ended[2] += 1,
        }
        self.metrics.job_ended(kind, &outcome);
        tracing::info!(job = %id, %kind, outcome = outcome.name(), "ended");
        state.queued.0 -= 1;
        state.queued.1 -= input_bytes;
        state.jobs.get_mut(&seq).expect("looked up above").outcome.send_replace(Some(outcome));
        state.pending.retain(|key| key.seq != seq);
        // Its synthesized partitions leave their batches; a batch left empty goes.
        let touched: Vec<TaskKey> = state
            .ready
            .iter()
            .filter(|(_, b)| b.parts.iter().any(|(k, _)| k.seq == seq))
            .map(|(k, _)| k.clone())
            .collect();
        for first in touched {
            let mut batch = state.ready.remove(&first).expect("listed above");
            if batch.drop_job(seq) {
                state.ready.insert(batch.parts[0].0.clone(), batch);
            }
        }
        self.work.notify_all();
    }

    /// Whether a free worker may take `first` now. With two workers or more, NORMAL and LOW
    /// work leaves one free, so that a WinningPoSt or WindowPoSt never waits for a
    /// synthesis. Of the rest, as many batches may be in synthesis or synthesized and
    /// waiting as `lookahead` per device allows, or as there are workers for `first`'s rank
    /// if that is more: the bench's lookahead, with the daemon's workers all used.
    fn may_start(&self, state: &State, first: &TaskKey) -> bool {
        if state.paused > 0 {
            return false;
        }
        let keep_one = self.workers >= 2 && first.rank.0 < Priority::High;
        let workers = self.workers - usize::from(keep_one);
        state.synthesizing.len() < workers && state.in_flight_at_or_above(first) < workers.max(self.ahead)
    }

    /// Takes the first queued partition and, up to `[pipeline] batch`, the ones queued
    /// right after it that are of the same circuit and rank (of its job or of others),
    /// unless a job is to run alone.
    fn take_batch(&self, state: &mut State) -> Vec<TaskKey> {
        let first = state.pending.pop_first().expect("a partition is queued");
        let job = |key: &TaskKey| state.jobs.get(&key.seq).expect("queued partitions belong to live jobs");
        let (circuit, alone) = (job(&first).circuit, job(&first).alone);
        let mut keys = vec![first];
        while !alone && keys.len() < self.batch {
            let Some(next) = state.pending.first() else { break };
            let next_job = job(next);
            if next.rank != keys[0].rank || next_job.circuit != circuit || next_job.alone {
                break;
            }
            keys.push(state.pending.pop_first().expect("looked at above"));
        }
        keys
    }

    /// Synthesis worker `n`: takes the highest-ranked partitions it may, as a batch, until
    /// the engine stops.
    pub(crate) fn synthesis_worker(&self, n: usize) {
        loop {
            self.journal.flush();
            let (keys, id, circuit, inputs, first_starts, number) = {
                let mut state = self.lock();
                let keys = loop {
                    if state.stopping {
                        return;
                    }
                    state.age_low(self.config.daemon.low_priority_aging);
                    if state.pending.first().is_some_and(|first| self.may_start(&state, first)) {
                        break self.take_batch(&mut state);
                    }
                    state = self.work.wait(state).unwrap_or_else(|p| p.into_inner());
                };
                state.synthesizing.insert(keys[0].clone(), (n, keys.clone()));
                let mut first_starts = Vec::new();
                let mut inputs = Vec::with_capacity(keys.len());
                for key in &keys {
                    let job = state.jobs.get_mut(&key.seq).expect("queued partitions belong to live jobs");
                    if job.started.is_none() {
                        let now = Instant::now();
                        job.started = Some(now);
                        job.timings.queue_wait = now - job.submitted;
                        job.attempts += 1;
                        first_starts.push((Arc::clone(&job.id), job.attempts));
                    }
                    inputs.push((job.first_seed + key.partition as u64, job.inputs.of(key.partition)));
                }
                let job = state.jobs.get(&keys[0].seq).expect("looked up above");
                let number = job.first_proof + keys[0].partition;
                (keys, Arc::clone(&job.id), job.circuit, inputs, first_starts, number)
            };
            // On disk before the work that might take the process down with it.
            for (id, attempt) in first_starts {
                if let Err(e) = self.journal.write(|journal| journal.started(&id, attempt)) {
                    tracing::error!(job = %id, "could not journal the job's start: {e}; [daemon] max_attempts may not \
                                    catch it should it bring the daemon down");
                }
            }
            let span = tracing::info_span!("synthesis", job = %id, partition = keys[0].partition, count = keys.len());
            let result = span.in_scope(|| self.synthesize(&circuit, &keys, &inputs, number));
            let mut state = self.lock();
            state.synthesizing.remove(&keys[0]);
            match result {
                Ok((mut synthesized, load, took)) => {
                    // Each job of the batch once (its partitions are next to each other).
                    let mut seqs: Vec<u64> = keys.iter().map(|key| key.seq).collect();
                    seqs.dedup();
                    for seq in seqs {
                        match state.jobs.get_mut(&seq).filter(|job| job.ended.is_none()) {
                            Some(job) => {
                                job.timings.params_load += load;
                                job.timings.synthesis += took;
                            }
                            None => {
                                synthesized.drop_job(seq);
                            }
                        }
                    }
                    if let Some((first, _)) = synthesized.parts.first() {
                        state.ready.insert(first.clone(), synthesized);
                    }
                }
                // Stopping: the jobs stay in the journal and run after the restart.
                Err(_) if state.stopping => return,
                Err(SynthesisFailed { why, culprit }) => {
                    self.synthesis_failed(&mut state, &keys, &circuit, why, culprit)
                }
            }
            self.work.notify_all();
        }
    }

    /// The synthesis of `keys` failed for `why`: partition `culprit`'s job fails where the
    /// failure is its own (its statement). A failure of the whole call fails its job if the
    /// batch is one job's; a batch of several jobs is queued again, each job to run alone,
    /// so that only the one that fails alone fails.
    fn synthesis_failed(
        &self,
        state: &mut State,
        keys: &[TaskKey],
        circuit: &CircuitSpec,
        why: String,
        culprit: Option<usize>,
    ) {
        let blamed = culprit.map(|i| &keys[i]).or_else(|| keys.iter().all(|k| k.seq == keys[0].seq).then(|| &keys[0]));
        let Some(blamed) = blamed else {
            tracing::warn!(
                "a batch of {} partitions of {circuit} failed in synthesis ({why}); each job runs alone to find \
                 which one fails",
                keys.len()
            );
            for key in keys {
                if let Some(job) = state.jobs.get_mut(&key.seq).filter(|job| job.ended.is_none()) {
                    job.alone = true;
                    state.pending.insert(key.clone());
                }
            }
            return;
        };
        let seq = blamed.seq;
        let why = format!("partition {} of {circuit}: {why}", blamed.partition);
        self.end(state, seq, Outcome::Failed(why));
        for key in keys.iter().filter(|key| key.seq != seq) {
            if state.jobs.get(&key.seq).is_some_and(|job| job.ended.is_none()) {
                state.pending.insert(key.clone());
            }
        }
    }

    /// Synthesizes partitions `keys` of `circuit` (of the witness seeds and inputs `inputs`; the first is proof
    /// number `first`) in one strategy call, holding the circuit's parameters and the
    /// memory the partitions take; returns them with the time spent loading parameters and
    /// synthesizing.
    fn synthesize(
        &self,
        circuit: &CircuitSpec,
        keys: &[TaskKey],
        inputs: &[(u64, Arc<Vec<u8>>)],
        first: usize,
    ) -> Result<(Synthesized, Duration, Duration), SynthesisFailed> {
        let failed = |why: String| SynthesisFailed { why, culprit: None };
        let jobs: Vec<Job> = inputs
            .iter()
            .map(|(seed, input)| Job { circuit: circuit.to_string().into(), seed: *seed, input: input.to_vec().into() })
            .collect();
        // Into buffers a device's backend keeps, where a pool has them for this circuit and
        // the rest of the batch's memory is free now; else the worker gives them back and
        // waits for room holding none.
        let (mut keeper, mut lent, mut held) =
            match self.devices.iter().find_map(|device| Some((device, device.lend(&jobs)?))) {
                Some((device, (lent, share))) => (Some(device), Some(lent), Some(share)),
                None => (None, None, None),
            };
        let rank = (keys[0].rank, keys[0].seq);
        let count = keys.len();
        // With buffers lent, the set is leased first (resident, in the steady state); without
        // them (a cold start, or no room for the rest now), it is read, if it must be, while
        // the batch is synthesized.
        let mut acquired = None;
        if held.is_some() {
            match self.acquire_params(circuit, count, rank, &mut held) {
                Ok((lease, loaded, reservation)) => {
                    let reservation = reservation.expect("a partition's memory was asked for");
                    acquired = Some((reservation, (lease, loaded)));
                }
                Err(AcquireError::NoRoomNow) => {
                    drop(lent.take());
                    if let Some(device) = keeper.take() {
                        device.charge_pooled();
                    }
                    drop(held.take());
                }
                Err(e) => return Err(failed(e.to_string())),
            }
        }
        let (mut reservation, leased, set) = match acquired {
            Some((reservation, leased)) => (reservation, Some(leased), None),
            None => {
                let (reservation, set) =
                    self.reserve_params(circuit, count, rank, &mut None).map_err(|e| failed(e.to_string()))?;
                (reservation, None, Some(set))
            }
        };
        let start = Instant::now();
        let (synthesized, took, leased) = std::thread::scope(|scope| {
            let loading = set.map(|set| scope.spawn(move || self.lease_params(circuit, set, rank, true)));
            // The pipeline's synthesis step: the strategy, with the circuit's own public
            // inputs computed beside it and checked.
            let synthesized = catch_unwind(AssertUnwindSafe(|| {
                pipeline::synthesize_into_lent(self.strategy.as_ref(), lent, 0, first, &jobs)
            }));
            let took = start.elapsed();
            let leased = match loading {
                Some(loading) => loading.join().unwrap_or_else(|panic| {
                    Err(AcquireError::Failed(format!(
                        "reading its parameters panicked: {}",
                        bellhop_plugin_sdk::panic_message(&*panic)
                    )))
                }),
                None => Ok(leased.expect("leased before synthesis")),
            };
            (synthesized, took, leased)
        });
        // A set read beside the synthesis failed: what was synthesized (into no lent buffers:
        // with those the set is leased first) is dropped.
        let (lease, loaded) = leased.map_err(|e| failed(e.to_string()))?;
        if loaded.is_some() {
            self.metrics.params_loaded(&circuit.to_string());
        }
        let shape = lease.srs.shape();
        if !matches!(synthesized, Ok(Ok(_))) {
            // The lent buffers are back in their pool: charged there before the
            // reservation goes.
            if let Some(device) = keeper {
                device.charge_pooled();
            }
        }
        let synthesized = synthesized
            .map_err(|panic| failed(format!("synthesis panicked: {}", bellhop_plugin_sdk::panic_message(&*panic))))?
            .map_err(|error| match error {
                PipelineError::Synthesis { error, .. } => failed(format!("synthesis failed: {error}")),
                PipelineError::Prove { index, error } => {
                    SynthesisFailed { why: error.to_string(), culprit: index.checked_sub(first) }
                }
                other => failed(other.to_string()),
            })?;
        if synthesized.len() != keys.len() {
            return Err(failed(format!(
                "the strategy returned {} assignments for {} jobs",
                synthesized.len(),
                keys.len()
            )));
        }
        let measured: Vec<u64> = synthesized.iter().map(|a| in_flight_bytes(a, &shape)).collect();
        if let Some(&most) = measured.iter().max() {
            self.params.measured(circuit, most);
        }
        reservation.resize(measured.iter().sum());
        let parts = keys
            .iter()
            .zip(synthesized)
            .map(|(key, assignment)| (key.clone(), Pooled::new(assignment, &jobs[0].circuit, keeper.cloned())))
            .collect();
        Ok((Synthesized { lease, parts, reservation }, loaded.unwrap_or_default(), took))
    }

    /// Device `d`'s worker: proves the highest-ranked synthesized batch, until the engine
    /// stops; while the device is down, probes it with a growing back-off.
    pub(crate) fn device_worker(&self, d: usize) {
        let mut backoff = self.config.backend.probe_after;
        loop {
            self.journal.flush();
            let down = self.lock().devices[d].down.clone();
            if let Some(why) = down {
                if !self.probe(d, &why, &mut backoff) {
                    return;
                }
                continue;
            }
            let (id, synthesized, circuit, number) = {
                let mut state = self.lock();
                let (_, synthesized) = loop {
                    if state.stopping {
                        return;
                    }
                    if let Some(entry) = state.ready.pop_first() {
                        break entry;
                    }
                    state = self.work.wait(state).unwrap_or_else(|p| p.into_inner());
                };
                state.devices[d].proving = synthesized.parts.iter().map(|(key, _)| key.clone()).collect();
                let first = &state.devices[d].proving[0];
                let job = state.jobs.get(&first.seq).expect("ready partitions belong to live jobs");
                let (id, circuit) = (Arc::clone(&job.id), job.circuit);
                let number = job.first_proof + first.partition;
                // Room for one more synthesis.
                self.work.notify_all();
                (id, synthesized, circuit, number)
            };
            let start = Instant::now();
            let Synthesized { lease, parts, reservation } = synthesized;
            let (keys, assignments): (Vec<TaskKey>, Vec<Pooled>) = parts.into_iter().unzip();
            let span =
                tracing::info_span!("prove", job = %id, partition = keys[0].partition, count = keys.len(), device = d);
            let srs = Arc::clone(&lease.srs);
            let (proofs, fault) = span.in_scope(|| {
                self.devices[d].prove_within(
                    self.config.backend.call_timeout,
                    circuit.to_string(),
                    srs,
                    number,
                    assignments,
                    Arc::clone(&self.randomness),
                    // A benchmark's proofs prove nothing, so none would verify.
                    self.config.pipeline.verify && !circuit.benchmark_only(),
                    (lease, reservation),
                )
            });
            // A batch's time, shared by its partitions.
            let took = start.elapsed() / keys.len() as u32;
            let mut state = self.lock();
            state.devices[d].proving.clear();
            let mut to_aggregate = Vec::new();
            let proved = proofs.len();
            for (key, proof) in keys.iter().zip(proofs) {
                state.devices[d].proved += 1;
                to_aggregate.extend(self.file_proof(&mut state, key, proof, took));
            }
            if let Some(fault) = fault {
                let key = &keys[proved];
                match fault {
                    Fault::Device(why) => self.device_failed(&mut state, d, key, &circuit, why),
                    Fault::Overdue(why) => {
                        let why = format!("device {d} on partition {} of {circuit}: {why}", key.partition);
                        self.mark_down(&mut state, d, &why);
                        self.end(&mut state, key.seq, Outcome::Failed(why));
                    }
                    Fault::Job(why) => {
                        let why = format!("partition {} of {circuit}: {why}", key.partition);
                        self.end(&mut state, key.seq, Outcome::Failed(why));
                    }
                }
                // The batch's partitions after it were not proved: queued again.
                for key in &keys[proved + 1..] {
                    if state.jobs.get(&key.seq).is_some_and(|job| job.ended.is_none()) {
                        state.pending.insert(key.clone());
                    }
                }
            }
            self.work.notify_all();
            drop(state);
            for job in to_aggregate {
                self.aggregate(job);
            }
        }
    }

    /// Makes a job's proof of its partitions' proofs, without the state lock, and ends
    /// the job with it (unless it ended meanwhile, cancelled).
    fn aggregate(&self, job: ToAggregate) {
        let ToAggregate { seq, id, circuit, aggregation, proofs, submitted, timings } = job;
        let start = Instant::now();
        let made = catch_unwind(AssertUnwindSafe(|| circuit.job_proof(Some(&aggregation), proofs)));
        let outcome = match made {
            Ok(Ok(proof)) => {
                tracing::info!(job = %id, "its partitions' proofs aggregated and verified in {:.2?}", start.elapsed());
                Outcome::Completed { proof, timings: Timings { total: submitted.elapsed(), ..timings } }
            }
            Ok(Err(e)) => Outcome::Failed(e.to_string()),
            Err(panic) => Outcome::Failed(format!(
                "aggregating its partitions' proofs panicked: {}",
                bellhop_plugin_sdk::panic_message(&*panic)
            )),
        };
        let mut state = self.lock();
        self.end(&mut state, seq, outcome);
    }

    /// Waits `backoff` (or until the engine stops: false), then probes down device `d`,
    /// marked down for `why`: up again if it works, else down another, doubled, back-off
    /// (at most 16 times `[backend] probe_after`).
    fn probe(&self, d: usize, why: &str, backoff: &mut Duration) -> bool {
        let deadline = Instant::now() + *backoff;
        let mut state = self.lock();
        loop {
            if state.stopping {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self.work.wait_timeout(state, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
        drop(state);
        let probed = self.devices[d].probe(&self.config, &self.plugin_dir);
        let mut state = self.lock();
        match probed {
            Ok(()) => {
                tracing::info!("device {d} works again and is back up (it was down: {why})");
                state.devices[d].down = None;
                *backoff = self.config.backend.probe_after;
            }
            Err(failed) => {
                *backoff = (*backoff * 2).min(self.config.backend.probe_after * 16);
                let first = why.split_once("; the last probe:").map_or(why, |(first, _)| first);
                tracing::warn!("device {d} is still down: {failed}; probed again in {backoff:?}");
                state.devices[d].down = Some(format!("{first}; the last probe: {failed}"));
            }
        }
        self.work.notify_all();
        true
    }

    /// Marks device `d` down for `why`; its worker probes it from now on.
    fn mark_down(&self, state: &mut State, d: usize, why: &str) {
        tracing::error!("device {d} is marked down: {why}");
        state.devices[d].down = Some(why.to_string());
        state.devices[d].marked_down += 1;
    }

    /// Device `d` failed proving `key`: with another device up, it is marked down and the
    /// partition is queued again; as the last one up, it stays up and the job fails.
    fn device_failed(&self, state: &mut State, d: usize, key: &TaskKey, circuit: &CircuitSpec, why: String) {
        let others_up = state.devices.iter().enumerate().any(|(other, device)| other != d && device.down.is_none());
        let why = format!("device {d} failed on partition {} of {circuit}: {why}", key.partition);
        if !others_up {
            self.end(state, key.seq, Outcome::Failed(why));
            return;
        }
        self.mark_down(state, d, &format!("{why}; its partition goes to another device"));
        if state.jobs.get(&key.seq).is_some_and(|job| job.ended.is_none()) {
            state.pending.insert(key.clone());
        }
    }

    /// A worker that died (a panic outside the plugin calls, which are caught): the job
    /// of the partition it held fails, since it might do the same again, and the worker is
    /// restarted.
    pub(crate) fn worker_died(&self, worker: Worker, panic: &str) {
        let mut state = self.lock();
        let held: Vec<TaskKey> = match worker {
            Worker::Synthesis(n) => {
                let (held, others) =
                    std::mem::take(&mut state.synthesizing).into_iter().partition(|(_, (w, _))| *w == n);
                state.synthesizing = others;
                held.into_values().flat_map(|(_, keys)| keys).collect()
            }
            Worker::Device(d) => std::mem::take(&mut state.devices[d].proving),
        };
        tracing::error!("the {worker} died: {panic}; restarted");
        for key in held {
            let why = format!("the {worker} died on partition {}: {panic}", key.partition);
            self.end(&mut state, key.seq, Outcome::Failed(why));
        }
        self.work.notify_all();
    }

    /// Files a partition's proof with its job, and completes the job with its last one,
    /// or returns the job to aggregate where its proof is made of theirs.
    fn file_proof(&self, state: &mut State, key: &TaskKey, proof: Vec<u8>, took: Duration) -> Option<ToAggregate> {
        let job = state.jobs.get_mut(&key.seq).filter(|job| job.ended.is_none())?;
        job.timings.proving += took;
        let benchmark = job.circuit.benchmark_only();
        // A benchmark's proofs prove nothing: none is kept.
        job.proofs[key.partition] = Some(if benchmark { Vec::new() } else { proof });
        job.inputs.proved(key.partition);
        let held = job.inputs.bytes();
        if let Some(memory) = &mut job.input_memory {
            memory.resize(held);
        }
        let done = job.partitions_done();
        tracing::info!(
            job = %job.id,
            "partition {} of {} proved and verified in {took:.2?} ({done} of {} done)",
            key.partition,
            job.circuit,
            job.proofs.len()
        );
        if !job.proofs.iter().all(Option::is_some) {
            return None;
        }
        if benchmark {
            let timings = Timings { total: job.submitted.elapsed(), ..job.timings };
            self.end(state, key.seq, Outcome::Benchmarked { timings });
            return None;
        }
        let proofs = job.proofs.iter().flatten().flatten().copied().collect();
        if let Some(aggregation) = &job.aggregation {
            return Some(ToAggregate {
                seq: key.seq,
                id: Arc::clone(&job.id),
                circuit: job.circuit,
                aggregation: Arc::clone(aggregation),
                proofs,
                submitted: job.submitted,
                timings: job.timings,
            });
        }
        let timings = Timings { total: job.submitted.elapsed(), ..job.timings };
        self.end(state, key.seq, Outcome::Completed { proof: proofs, timings });
        None
    }
}

/// A job whose partitions are all proved, and whose proof is their aggregate.
struct ToAggregate {
    seq: u64,
    id: Arc<str>,
    circuit: CircuitSpec,
    aggregation: Arc<[u8]>,
    proofs: Vec<u8>,
    submitted: Instant,
    timings: Timings,
}

#[cfg(test)]
mod tests {
    use super::supervise;

    #[test]
    fn a_worker_that_dies_is_told_of_and_runs_again() {
        let (mut runs, mut deaths) = (0, Vec::new());
        supervise(
            || {
                runs += 1;
                assert!(runs >= 3, "run {runs} dies");
            },
            |panic| deaths.push(panic.to_string()),
        );
        assert_eq!(runs, 3);
        assert_eq!(deaths, ["run 1 dies", "run 2 dies"]);
    }
}
