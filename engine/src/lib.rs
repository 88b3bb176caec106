//! Bellhop's proving engine: the long-running core of `bellhop serve`, with no gRPC in it.
//!
//! A job proves every partition of one circuit's input. Its partitions are queued by
//! (priority, highest first; submission order; partition), so a WinningPoSt submitted
//! behind a PoRep backlog is proved next. Synthesis workers take partitions from that
//! queue, each holding the circuit's resident parameter set, and run ahead of the devices
//! by `[pipeline] lookahead` (with two workers or more, one is kept free of NORMAL and LOW
//! work for deadline proofs); each device worker proves the highest synthesized partition,
//! verifies it and files it with its job. A job ends in exactly one [`Outcome`]; waiters
//! learn it through [`Engine::wait`], and it is kept for `[daemon] keep_results`.

mod job;
mod metrics;
mod params;

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BTreeSet, HashMap},
    panic::{catch_unwind, AssertUnwindSafe},
    path::Path,
    sync::{Arc, Condvar, Mutex, MutexGuard},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use bellhop_circuits::CircuitSpec;
use bellhop_host::{
    config::Config,
    dealloc::Dealloc,
    pipeline::{ProvedJob, Randomness},
    prover,
    session::{open_strategy, OpenedBackend},
};
use bellhop_plugin_api::{
    strategy::{Assignment, Job, Strategy},
    Capabilities,
};
use serde::Serialize;
use tokio::sync::watch;

pub use job::{Cancelled, JobKind, JobRequest, NotFound, Outcome, Priority, Refused, Submitted, Timings, Waited};
pub use params::{InUse, ParamStatus};

use crate::{
    metrics::{Metrics, Snapshot},
    params::{Lease, ParamCache},
};

/// A partition's place in the queues: highest priority first, then the older job, then
/// the lower partition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct TaskKey {
    rank: Reverse<Priority>,
    seq: u64,
    partition: usize,
    job: Arc<str>,
}

/// A synthesized partition waiting for a device.
struct Synthesized {
    lease: Lease,
    assignment: Assignment,
}

/// A job and its progress.
struct JobEntry {
    seq: u64,
    kind: JobKind,
    circuit: CircuitSpec,
    priority: Priority,
    digest: [u8; 32],
    input: Arc<Vec<u8>>,
    partitions: usize,
    submitted: Instant,
    started: Option<Instant>,
    proofs: Vec<Option<Vec<u8>>>,
    timings: Timings,
    ended: Option<Instant>,
    outcome: watch::Sender<Option<Outcome>>,
}

impl JobEntry {
    fn rank(&self) -> (Reverse<Priority>, u64) {
        (Reverse(self.priority), self.seq)
    }
}

/// Everything the workers share, under one lock.
struct State {
    accepting: bool,
    stopping: bool,
    next_seq: u64,
    jobs: HashMap<Arc<str>, JobEntry>,
    /// Partitions not yet taken by a synthesis worker.
    pending: BTreeSet<TaskKey>,
    /// Partitions in synthesis now.
    synthesizing: BTreeSet<TaskKey>,
    /// Synthesized partitions waiting for a device.
    ready: BTreeMap<TaskKey, Synthesized>,
    /// The job each device is proving a partition of.
    busy: Vec<Option<Arc<str>>>,
    ended: [u64; 3],
}

impl State {
    /// Partitions in synthesis or synthesized and waiting that rank with `key` or above.
    fn in_flight_at_or_above(&self, key: &TaskKey) -> usize {
        let rank = |k: &TaskKey| k.rank <= key.rank;
        self.synthesizing.iter().filter(|k| rank(k)).count() + self.ready.keys().filter(|k| rank(k)).count()
    }
}

/// One device and the backend opened on it.
struct Device {
    index: u32,
    name: String,
    backend_name: String,
    memory_bytes: u64,
    backend: OpenedBackend,
}

struct Shared {
    config: Config,
    state: Mutex<State>,
    /// Signalled whenever queues, devices or jobs change.
    work: Condvar,
    params: Arc<ParamCache>,
    metrics: Metrics,
    strategy: Box<dyn Strategy>,
    devices: Vec<Device>,
    /// Partitions that may be in synthesis or synthesized and waiting, at most, counting
    /// those of the same or higher rank: a partition that outranks everything in flight
    /// starts at once on an idle worker (synthesis workers, plus `lookahead` waiting per
    /// device).
    ahead: usize,
    /// Synthesis workers.
    workers: usize,
    started: Instant,
}

/// The running engine: its workers run until it is dropped or shut down.
pub struct Engine {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

/// What `preload` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preloaded {
    /// The set was resident already.
    pub already_loaded: bool,
    /// How long reading it took (zero if it was resident).
    pub load_time: Duration,
}

/// What `evict` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// The set was resident.
    pub was_loaded: bool,
    /// The memory its points took.
    pub freed_bytes: u64,
}

/// The engine at one moment (`GetStatus`, `GET /status`).
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// Seconds since it started.
    pub uptime_seconds: u64,
    /// Whether it takes new jobs (not while shutting down).
    pub accepting: bool,
    /// Its devices.
    pub devices: Vec<DeviceStatus>,
    /// Resident parameter sets.
    pub params: Vec<ParamStatus>,
    /// Jobs per kind.
    pub queues: Vec<QueueStatus>,
    /// Jobs completed since start.
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Jobs cancelled since start.
    pub cancelled: u64,
}

/// One device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceStatus {
    /// Its index.
    pub ordinal: u32,
    /// Its name as the backend describes it.
    pub name: String,
    /// The backend opened on it.
    pub backend: String,
    /// Its memory (host memory for a CPU backend).
    pub memory_total_bytes: u64,
    /// Of which free now, as the backend reports it (host memory for the CPU backend); 0
    /// where it reports none.
    pub memory_free_bytes: u64,
    /// The job it is proving a partition of.
    pub current_job: Option<String>,
    /// That job's kind.
    pub current_kind: Option<JobKind>,
}

/// Jobs of one kind.
#[derive(Clone, Debug, Serialize)]
pub struct QueueStatus {
    /// The kind.
    pub kind: JobKind,
    /// Jobs waiting to start.
    pub pending: usize,
    /// Jobs started and not ended.
    pub in_progress: usize,
}

fn new_job_id() -> String {
    let bits: u128 = rand::random();
    let hex = format!("{bits:032x}");
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

impl Engine {
    /// Opens the configured strategy and backend (on `[backend] device`) and starts
    /// `[daemon] synthesis_workers` synthesis workers and a worker per device.
    pub fn start(config: &Config, plugin_dir: &Path) -> anyhow::Result<Self> {
        let (strategy, strategy_name) = open_strategy(config, plugin_dir)?;
        let backend = OpenedBackend::open(config, plugin_dir, config.backend.device)?;
        let device = Device {
            index: config.backend.device,
            name: backend.device.as_ref().map_or_else(|| backend.name.clone(), |d| d.name.to_string()),
            backend_name: backend.name.clone(),
            memory_bytes: backend.device.as_ref().map_or(0, |d| d.memory_bytes),
            backend,
        };
        tracing::info!(
            "engine: strategy {strategy_name}, device {} ({}), {} synthesis workers",
            device.index,
            device.name,
            config.daemon.synthesis_workers
        );
        let devices = vec![device];
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                accepting: true,
                stopping: false,
                next_seq: 0,
                jobs: HashMap::new(),
                pending: BTreeSet::new(),
                synthesizing: BTreeSet::new(),
                ready: BTreeMap::new(),
                busy: vec![None; devices.len()],
                ended: [0; 3],
            }),
            work: Condvar::new(),
            params: Arc::new(ParamCache::new(config.params.dir.clone())),
            metrics: Metrics::new(),
            strategy,
            ahead: config.daemon.synthesis_workers.max(1) + config.pipeline.lookahead * devices.len(),
            workers: config.daemon.synthesis_workers.max(1),
            devices,
            started: Instant::now(),
            config: config.clone(),
        });
        let mut workers = Vec::new();
        for n in 0..config.daemon.synthesis_workers.max(1) {
            let shared = Arc::clone(&shared);
            workers.push(
                std::thread::Builder::new()
                    .name(format!("bellhop-synthesis-{n}"))
                    .spawn(move || shared.synthesis_worker())
                    .context("starting a synthesis worker")?,
            );
        }
        for d in 0..shared.devices.len() {
            let shared = Arc::clone(&shared);
            workers.push(
                std::thread::Builder::new()
                    .name(format!("bellhop-device-{d}"))
                    .spawn(move || shared.device_worker(d))
                    .context("starting a device worker")?,
            );
        }
        Ok(Self { shared, workers })
    }

    /// Queues every partition of `request`. A request id that names a job submitted
    /// before is that job if the payload is the same, an error if not.
    pub fn submit(&self, request: JobRequest) -> Result<Submitted, Refused> {
        let shared = &self.shared;
        if request.partitions == 0 {
            return Err(Refused::Invalid(format!("the input of {} makes no partitions to prove", request.circuit)));
        }
        let digest = request.digest();
        let mut state = shared.lock();
        if !state.accepting {
            return Err(Refused::ShuttingDown);
        }
        shared.sweep(&mut state);
        let id: Arc<str> = match request.request_id.as_deref() {
            Some(id) if !id.is_empty() => id.into(),
            _ => new_job_id().into(),
        };
        if let Some(job) = state.jobs.get(&id) {
            if job.digest != digest {
                return Err(Refused::AlreadyExists(id.to_string()));
            }
            return Ok(Submitted {
                job_id: id.to_string(),
                queue_position: queue_position(&state, job),
                assigned_device: shared.assigned_device(),
                existing: true,
            });
        }
        shared.check_params(&request.circuit)?;
        let kind = JobKind::of(&request.circuit);
        let priority = request.priority.unwrap_or_else(|| Priority::default_for(kind));
        let seq = state.next_seq;
        state.next_seq += 1;
        let entry = JobEntry {
            seq,
            kind,
            circuit: request.circuit,
            priority,
            digest,
            input: Arc::new(request.input),
            partitions: request.partitions,
            submitted: Instant::now(),
            started: None,
            proofs: vec![None; request.partitions],
            timings: Timings::default(),
            ended: None,
            outcome: watch::Sender::new(None),
        };
        for partition in 0..request.partitions {
            state.pending.insert(TaskKey { rank: Reverse(priority), seq, partition, job: Arc::clone(&id) });
        }
        let queue_position = queue_position(&state, &entry);
        tracing::info!(job = %id, %kind, circuit = %entry.circuit, partitions = entry.partitions, ?priority, "accepted");
        state.jobs.insert(Arc::clone(&id), entry);
        shared.work.notify_all();
        Ok(Submitted {
            job_id: id.to_string(),
            queue_position,
            assigned_device: shared.assigned_device(),
            existing: false,
        })
    }

    /// Waits until job `job_id` ends, or `timeout` passes (the job goes on).
    pub async fn wait(&self, job_id: &str, timeout: Option<Duration>) -> Result<Waited, NotFound> {
        let not_found = || NotFound(job_id.to_string());
        let mut outcome = self.shared.lock().jobs.get(job_id).ok_or_else(not_found)?.outcome.subscribe();
        let ended = async {
            let ended = outcome.wait_for(Option::is_some).await.map_err(|_| not_found())?;
            Ok((*ended).clone().expect("waited for an outcome"))
        };
        match timeout {
            Some(limit) => match tokio::time::timeout(limit, ended).await {
                Ok(result) => result.map(Waited::Done),
                Err(_) => Ok(Waited::Timeout),
            },
            None => ended.await.map(Waited::Done),
        }
    }

    /// Cancels job `job_id`: a queued one is dropped; a running one ends now as cancelled
    /// and its partition in progress is discarded at the next boundary. A job that has
    /// ended already is left as it is.
    pub fn cancel(&self, job_id: &str) -> Result<Cancelled, NotFound> {
        let mut state = self.shared.lock();
        let job = state.jobs.get(job_id).ok_or_else(|| NotFound(job_id.to_string()))?;
        if job.ended.is_some() {
            return Ok(Cancelled { was_running: false });
        }
        let was_running = job.started.is_some();
        let id = Arc::clone(state.jobs.get_key_value(job_id).expect("found above").0);
        self.shared.end(&mut state, &id, Outcome::Cancelled);
        Ok(Cancelled { was_running })
    }

    /// The engine now.
    pub fn status(&self) -> Status {
        let shared = &self.shared;
        let mut state = shared.lock();
        shared.sweep(&mut state);
        let devices = shared
            .devices
            .iter()
            .zip(&state.busy)
            .map(|(device, busy)| {
                let job = busy.as_ref().and_then(|id| state.jobs.get(id).map(|job| (id.to_string(), job.kind)));
                let memory = device.backend.memory();
                DeviceStatus {
                    ordinal: device.index,
                    name: device.name.clone(),
                    backend: device.backend_name.clone(),
                    memory_total_bytes: memory.map_or(device.memory_bytes, |m| m.total_bytes),
                    memory_free_bytes: memory.map_or(0, |m| m.free_bytes),
                    current_kind: job.as_ref().map(|(_, kind)| *kind),
                    current_job: job.map(|(id, _)| id),
                }
            })
            .collect();
        let queues = JobKind::ALL
            .iter()
            .map(|&kind| {
                let live = state.jobs.values().filter(|j| j.kind == kind && j.ended.is_none());
                let (started, waiting): (Vec<_>, Vec<_>) = live.partition(|j| j.started.is_some());
                QueueStatus { kind, pending: waiting.len(), in_progress: started.len() }
            })
            .collect();
        let [completed, failed, cancelled] = state.ended;
        Status {
            uptime_seconds: shared.started.elapsed().as_secs(),
            accepting: state.accepting,
            devices,
            params: shared.params.status(),
            queues,
            completed,
            failed,
            cancelled,
        }
    }

    /// The Prometheus text exposition of the engine's metrics.
    pub fn metrics(&self) -> String {
        let status = self.status();
        let snapshot = Snapshot {
            queues: status.queues.iter().map(|q| (q.kind, self.pending_partitions(q.kind), q.in_progress)).collect(),
            resident: status.params.iter().map(|p| (p.circuit.clone(), p.bytes)).collect(),
            devices: status.devices.iter().map(|d| (d.ordinal, d.current_job.is_some())).collect(),
            uptime: self.shared.started.elapsed(),
        };
        self.shared.metrics.text(snapshot)
    }

    fn pending_partitions(&self, kind: JobKind) -> usize {
        let state = self.shared.lock();
        state.pending.iter().filter(|key| state.jobs.get(&key.job).is_some_and(|j| j.kind == kind)).count()
    }

    /// Loads the parameters of `circuit` and lets every device keep their bases.
    pub fn preload(&self, circuit: &CircuitSpec) -> Result<Preloaded, Refused> {
        self.shared.check_params(circuit)?;
        let (lease, took) = self.shared.params.acquire(circuit).map_err(Refused::BadParams)?;
        if took.is_some() {
            self.shared.metrics.params_loaded(&circuit.to_string());
        }
        for device in &self.shared.devices {
            device.backend.keep_bases(&lease.srs).map_err(|e| Refused::BadParams(format!("{e:#}")))?;
        }
        Ok(Preloaded { already_loaded: took.is_none(), load_time: took.unwrap_or_default() })
    }

    /// Drops the parameters of `circuit` from memory (and the devices), unless a
    /// partition is using them.
    pub fn evict(&self, circuit: &CircuitSpec) -> Result<Evicted, InUse> {
        let Some((srs, bytes)) = self.shared.params.evict(circuit)? else {
            return Ok(Evicted { was_loaded: false, freed_bytes: 0 });
        };
        for device in &self.shared.devices {
            if let Err(e) = device.backend.release(&srs) {
                tracing::warn!("evicting {circuit}: {e:#}");
            }
        }
        self.shared.metrics.params_evicted(&circuit.to_string());
        tracing::info!("evicted the parameters of {circuit} ({bytes} bytes)");
        Ok(Evicted { was_loaded: true, freed_bytes: bytes })
    }

    /// Stops taking jobs, fails those that have not started, and waits up to `grace` for
    /// the started ones to end; then stops the workers. Returns whether every started job
    /// ended in time.
    pub fn shutdown(&self, grace: Duration) -> bool {
        let shared = &self.shared;
        let deadline = Instant::now() + grace;
        let mut state = shared.lock();
        state.accepting = false;
        let unstarted: Vec<Arc<str>> = state
            .jobs
            .iter()
            .filter(|(_, job)| job.started.is_none() && job.ended.is_none())
            .map(|(id, _)| Arc::clone(id))
            .collect();
        for id in unstarted {
            shared.end(
                &mut state,
                &id,
                Outcome::Failed("the daemon shut down before this job started; submit it again".into()),
            );
        }
        loop {
            let running = state.jobs.values().filter(|job| job.ended.is_none()).count();
            let now = Instant::now();
            if running == 0 || now >= deadline {
                if running > 0 {
                    tracing::warn!("shutting down with {running} job(s) unfinished after the grace period");
                }
                state.stopping = true;
                shared.work.notify_all();
                return running == 0;
            }
            state = shared.work.wait_timeout(state, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.work.notify_all();
        // Workers in the middle of a proof are not waited for.
        for worker in self.workers.drain(..) {
            if worker.is_finished() {
                let _ = worker.join();
            }
        }
    }
}

/// Jobs that will be served before `job`: those not ended that rank higher.
fn queue_position(state: &State, job: &JobEntry) -> u32 {
    state.jobs.values().filter(|other| other.ended.is_none() && other.rank() < job.rank()).count() as u32
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
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Refuses a circuit whose parameter file is not there, saying how to get it.
    fn check_params(&self, circuit: &CircuitSpec) -> Result<(), Refused> {
        let path = self.params.path(circuit).map_err(Refused::Invalid)?;
        if path.exists() {
            return Ok(());
        }
        Err(Refused::MissingParams {
            circuit: circuit.to_string(),
            path: path.display().to_string(),
            how: missing_params_hint(circuit),
        })
    }

    fn assigned_device(&self) -> Option<u32> {
        match self.devices.as_slice() {
            [only] => Some(only.index),
            _ => None,
        }
    }

    /// Forgets jobs that ended longer ago than results are kept.
    fn sweep(&self, state: &mut State) {
        let keep = self.config.daemon.keep_results;
        state.jobs.retain(|_, job| job.ended.is_none_or(|ended| ended.elapsed() < keep));
    }

    /// Ends job `id` with `outcome`: its queued and synthesized partitions are dropped,
    /// waiters are told, and it is counted.
    fn end(&self, state: &mut State, id: &Arc<str>, outcome: Outcome) {
        let Some(job) = state.jobs.get_mut(id) else { return };
        if job.ended.is_some() {
            return;
        }
        job.ended = Some(Instant::now());
        let kind = job.kind;
        match &outcome {
            Outcome::Completed { .. } => state.ended[0] += 1,
            Outcome::Failed(why) => {
                tracing::warn!(job = %id, "failed: {why}");
                state.ended[1] += 1;
            }
            Outcome::Cancelled => state.ended[2] += 1,
        }
        self.metrics.job_ended(kind, &outcome);
        tracing::info!(job = %id, %kind, outcome = outcome.name(), "ended");
        let job = state.jobs.get_mut(id).expect("looked up above");
        job.proofs.clear();
        job.outcome.send_replace(Some(outcome));
        state.pending.retain(|key| key.job != *id);
        state.ready.retain(|key, _| key.job != *id);
        self.work.notify_all();
    }

    fn synthesis_worker(&self) {
        loop {
            let (key, circuit, input) = {
                let mut state = self.lock();
                let key = loop {
                    if state.stopping {
                        return;
                    }
                    if let Some(first) = state.pending.first() {
                        // With two workers or more, NORMAL and LOW work leaves one free, so
                        // that a WinningPoSt or WindowPoSt never waits for a synthesis.
                        let keep_one = self.workers >= 2 && first.rank.0 < Priority::High;
                        let worker_free = state.synthesizing.len() + usize::from(keep_one) < self.workers;
                        if worker_free && state.in_flight_at_or_above(first) < self.ahead {
                            break state.pending.pop_first().expect("looked at above");
                        }
                    }
                    state = self.work.wait(state).unwrap_or_else(|p| p.into_inner());
                };
                state.synthesizing.insert(key.clone());
                let job = state.jobs.get_mut(&key.job).expect("queued partitions belong to live jobs");
                if job.started.is_none() {
                    let now = Instant::now();
                    job.started = Some(now);
                    job.timings.queue_wait = now - job.submitted;
                }
                (key, job.circuit, Arc::clone(&job.input))
            };
            let span = tracing::info_span!("synthesis", job = %key.job, partition = key.partition);
            let result = span.in_scope(|| self.synthesize(&circuit, &input, key.partition));
            let mut state = self.lock();
            state.synthesizing.remove(&key);
            match result {
                Ok((synthesized, load, took)) => {
                    if let Some(job) = state.jobs.get_mut(&key.job).filter(|job| job.ended.is_none()) {
                        job.timings.params_load += load;
                        job.timings.synthesis += took;
                        state.ready.insert(key, synthesized);
                    }
                }
                Err(why) => {
                    let why = format!("partition {} of {circuit}: {why}", key.partition);
                    self.end(&mut state, &key.job, Outcome::Failed(why));
                }
            }
            self.work.notify_all();
        }
    }

    /// Synthesizes partition `partition` of `input`, holding the circuit's parameters;
    /// returns it with the time spent loading parameters and synthesizing.
    fn synthesize(
        &self,
        circuit: &CircuitSpec,
        input: &[u8],
        partition: usize,
    ) -> Result<(Synthesized, Duration, Duration), String> {
        let (lease, loaded) = self.params.acquire(circuit).map_err(|e| format!("its parameters: {e}"))?;
        if loaded.is_some() {
            self.metrics.params_loaded(&circuit.to_string());
        }
        let start = Instant::now();
        let job = Job { circuit: circuit.to_string().into(), seed: partition as u64, input: input.to_vec().into() };
        let synthesis = catch_unwind(AssertUnwindSafe(|| self.strategy.synthesize(std::slice::from_ref(&job))))
            .map_err(|panic| format!("the strategy panicked: {}", panic_message(&*panic)))?
            .map_err(|e| format!("synthesis failed: {e}"))?;
        for warning in &synthesis.warnings {
            tracing::warn!("strategy: {warning}");
        }
        let took = start.elapsed();
        let [assignment]: [Assignment; 1] = synthesis
            .assignments
            .try_into()
            .map_err(|a: Vec<Assignment>| format!("the strategy returned {} assignments for one job", a.len()))?;
        Ok((Synthesized { lease, assignment }, loaded.unwrap_or_default(), took))
    }

    fn device_worker(&self, d: usize) {
        let dealloc = Dealloc::new();
        loop {
            let (key, synthesized, circuit) = {
                let mut state = self.lock();
                let (key, synthesized) = loop {
                    if state.stopping {
                        return;
                    }
                    if let Some(entry) = state.ready.pop_first() {
                        break entry;
                    }
                    state = self.work.wait(state).unwrap_or_else(|p| p.into_inner());
                };
                state.busy[d] = Some(Arc::clone(&key.job));
                let circuit =
                    state.jobs.get(&key.job).map(|job| job.circuit).expect("ready partitions belong to live jobs");
                // Room for one more synthesis.
                self.work.notify_all();
                (key, synthesized, circuit)
            };
            let start = Instant::now();
            let span = tracing::info_span!("prove", job = %key.job, partition = key.partition, device = d);
            let result = span.in_scope(|| self.prove(d, &circuit, synthesized, key.partition, &dealloc));
            let took = start.elapsed();
            let mut state = self.lock();
            state.busy[d] = None;
            match result {
                Ok(proof) => self.file_proof(&mut state, &key, proof, took),
                Err(why) => {
                    let why = format!("partition {} of {circuit}: {why}", key.partition);
                    self.end(&mut state, &key.job, Outcome::Failed(why));
                }
            }
            self.work.notify_all();
        }
    }

    /// Proves a synthesized partition on device `d` and verifies it (unless `[pipeline]
    /// verify` is off); returns its 192 bytes.
    fn prove(
        &self,
        d: usize,
        circuit: &CircuitSpec,
        synthesized: Synthesized,
        partition: usize,
        dealloc: &Dealloc,
    ) -> Result<Vec<u8>, String> {
        let Synthesized { lease, assignment } = synthesized;
        let srs = &lease.srs;
        let name = circuit.to_string();
        let blinding = Randomness::Os.blinding(0).map_err(|e| e.to_string())?;
        let backend = &self.devices[d].backend;
        backend.keep_bases(srs).map_err(|e| format!("{e:#}"))?;
        let proved = catch_unwind(AssertUnwindSafe(|| {
            let public_inputs = prover::public_inputs(&assignment);
            if backend.capabilities.contains(Capabilities::PROVE_BATCH) {
                prover::check_inputs(srs, &assignment, &name)?;
                if let Some(mut proofs) =
                    prover::prove_fused(backend.as_ref(), srs, &[&assignment], std::slice::from_ref(&blinding))?
                {
                    dealloc.drop_later(assignment);
                    return Ok((proofs.remove(0), public_inputs));
                }
            }
            prover::prove(backend.as_ref(), srs, assignment, blinding, &name, dealloc)
        }))
        .map_err(|panic| format!("the backend panicked: {}", panic_message(&*panic)))?;
        let (proof, public_inputs) = proved.map_err(|e| e.to_string())?;
        if self.config.pipeline.verify {
            prover::verify(srs, &proof, &public_inputs, &name).map_err(|e| e.to_string())?;
        }
        Ok(ProvedJob { index: partition, circuit: name, proof, public_inputs }.proof_bytes())
    }

    /// Files a partition's proof with its job, and completes the job with its last one.
    fn file_proof(&self, state: &mut State, key: &TaskKey, proof: Vec<u8>, took: Duration) {
        let Some(job) = state.jobs.get_mut(&key.job).filter(|job| job.ended.is_none()) else { return };
        job.timings.proving += took;
        job.proofs[key.partition] = Some(proof);
        if job.proofs.iter().all(Option::is_some) {
            let proof = job.proofs.iter().flatten().flatten().copied().collect();
            let timings = Timings { total: job.submitted.elapsed(), ..job.timings };
            self.end(state, &key.job, Outcome::Completed { proof, timings });
        }
    }
}
