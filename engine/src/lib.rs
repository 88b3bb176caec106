//! Bellhop's proving engine: the long-running core of `bellhop serve`, with no gRPC in it.
//!
//! A job proves every partition of one circuit's input. Its partitions are queued by
//! (priority, highest first; submission order; partition), so a WinningPoSt submitted
//! behind a PoRep backlog is proved next. Synthesis workers take partitions from that
//! queue, each holding the circuit's resident parameter set, and run ahead of the devices
//! by `[pipeline] lookahead` (with two workers or more, one is kept free of NORMAL and LOW
//! work for deadline proofs); a worker per device proves the highest synthesized
//! partition, verifies it and files it with its job. Parameter sets and partitions in
//! flight share one memory budget; accepted jobs are journaled, so a restart loses none. A
//! job ends in exactly one [`Outcome`]; waiters learn it through [`Engine::wait`], and it
//! is kept for `[daemon] keep_results`.

pub mod ab;
mod budget;
mod device;
mod job;
mod journal;
mod metrics;
mod params;
mod scheduler;

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BTreeSet, HashMap},
    path::Path,
    sync::{Arc, Condvar, Mutex},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use bellhop_circuits::{CircuitSpec, PreparedInput};
use bellhop_host::{
    config::{Budget as BudgetConfig, Config},
    params::Srs,
    pipeline::Randomness,
    session::open_strategy,
};
use serde::Serialize;
use tokio::sync::watch;

pub use budget::MemoryStatus;
pub use job::{
    Cancelled, JobHandle, JobKind, JobRequest, NotFound, Outcome, Priority, Refused, Submitted, Timings, Waited,
};
pub use params::{InUse, ParamStatus};

use crate::{
    budget::Budget,
    journal::{hex, Accepted, Journal, SharedJournal},
    metrics::{Metrics, Snapshot},
    params::ParamCache,
    scheduler::{DeviceState, Inputs, JobEntry, Shared, State, Worker},
};

/// The longest `request_id` a job may be submitted under.
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// The running engine: its workers run until it is dropped or shut down.
pub struct Engine {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    journal: JournalStatus,
    /// An engine in process journals here, removed after it.
    _state_dir: Option<tempfile::TempDir>,
}

/// Synthesis held back ([`Engine::pause_synthesis`]) until dropped.
pub struct SynthesisPaused<'a>(&'a Engine);

impl Drop for SynthesisPaused<'_> {
    fn drop(&mut self) {
        self.0.shared.lock().paused -= 1;
        self.0.shared.work.notify_all();
    }
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
    /// The synthesis strategy, with where it was loaded from.
    pub strategy: String,
    /// Its devices.
    pub devices: Vec<DeviceStatus>,
    /// Resident parameter sets.
    pub params: Vec<ParamStatus>,
    /// The memory budget and the process's memory.
    pub memory: MemoryStatus,
    /// Jobs per kind.
    pub queues: Vec<QueueStatus>,
    /// The jobs started and not ended, highest ranked first.
    pub running: Vec<RunningJob>,
    /// Jobs completed since start (benchmark-only ones too).
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Jobs cancelled since start.
    pub cancelled: u64,
    /// What the journal gave back at start.
    pub journal: JournalStatus,
}

/// One device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceStatus {
    /// Its place in `[backend] devices`.
    pub ordinal: u32,
    /// The index its backend was opened with.
    pub index: u32,
    /// Its name as the backend describes it.
    pub name: String,
    /// The backend opened on it.
    pub backend: String,
    /// Its memory (host memory for a CPU backend).
    pub memory_total_bytes: u64,
    /// Of which free now, as the backend reports it (host memory for the CPU backend); 0
    /// where it reports none.
    pub memory_free_bytes: u64,
    /// Why it is down (it failed to open, failed a proof, or its calls passed
    /// `[backend] call_timeout`), if it is; it is probed again until it works.
    pub down: Option<String>,
    /// Times it was marked down since start.
    pub marked_down: u64,
    /// Partitions it proved since start.
    pub proved: u64,
    /// The job it is proving a partition of.
    pub current_job: Option<String>,
    /// That job's kind.
    pub current_kind: Option<JobKind>,
    /// Host memory its backend keeps (page-locked assignments) free for the next partition
    /// of their circuit, in bytes: part of the budget's reserved bytes, and released first
    /// when other work needs room.
    pub kept_host_bytes: u64,
}

/// A job started and not ended.
#[derive(Clone, Debug, Serialize)]
pub struct RunningJob {
    /// Its id.
    pub job_id: String,
    /// Its kind.
    pub kind: JobKind,
    /// Partitions proved.
    pub partitions_done: usize,
    /// Partitions in all.
    pub partitions: usize,
    /// Since its first partition started.
    pub elapsed_seconds: f64,
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

/// The journal as it was read back at start.
#[derive(Clone, Debug, Default, Serialize)]
pub struct JournalStatus {
    /// `[daemon] state_dir`.
    pub state_dir: String,
    /// Jobs queued again (not ended before the restart).
    pub requeued: usize,
    /// Ended jobs kept for `AwaitProof`.
    pub kept: usize,
    /// Damaged entries, reported and skipped.
    pub damaged: Vec<String>,
}

fn new_job_id() -> String {
    let bits: u128 = rand::random();
    let hex = format!("{bits:032x}");
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// The id of a new job for `request_id` and `digest`: the request id itself unless a job
/// not ended holds it, else the request id with as much of the digest as makes it free
/// (and a count after it, should a caller have taken even that id for another job).
fn free_job_id(state: &scheduler::State, request_id: &Arc<str>, digest: &[u8; 32]) -> Arc<str> {
    let free = |id: &str| state.job_named(id).is_none_or(|job| job.ended.is_some());
    if free(request_id) {
        return Arc::clone(request_id);
    }
    let with_digest = [4, 8, 32].into_iter().map(|bytes| format!("{request_id}~{}", hex(&digest[..bytes])));
    let counted = (2u64..).map(|n| format!("{request_id}~{}-{n}", hex(digest)));
    with_digest.chain(counted).find(|id| free(id)).expect("finitely many jobs hold ids").into()
}

/// A `/proc` field in kB, in bytes (0 where unknown).
fn proc_kib(file: &str, field: &str) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            let value = text.lines().find_map(|line| line.strip_prefix(field))?;
            value.trim().trim_end_matches("kB").trim().parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// `[memory] budget` in bytes.
fn budget_bytes(config: &Config) -> anyhow::Result<u64> {
    match config.memory.budget {
        BudgetConfig::Bytes(bytes) => Ok(bytes),
        BudgetConfig::Auto => {
            let total = proc_kib("/proc/meminfo", "MemTotal:");
            let margin = config.memory.safety_margin;
            anyhow::ensure!(
                total > margin,
                "[memory] budget = \"auto\" needs the machine's memory ({total} bytes by /proc/meminfo) to exceed \
                 [memory] safety_margin ({margin} bytes); set budget to a size"
            );
            Ok(total - margin)
        }
    }
}

impl Engine {
    /// Opens the configured strategy and the backend on each device, reads the journal
    /// back (queueing again the jobs it holds that had not ended), and starts `[daemon]
    /// synthesis_workers` synthesis workers and a worker per device that opened.
    pub fn start(config: &Config, plugin_dir: &Path) -> anyhow::Result<Self> {
        Self::start_with(config, plugin_dir, Randomness::Os)
    }

    /// The engine of `bellhop prove`, `bench` and `ab`, in this process: the daemon's
    /// scheduler, budget and device workers, journaling in a temporary directory that goes
    /// with it, each proof's r and s from `randomness` by its number (the jobs' partitions
    /// in submission order, from 0).
    pub fn in_process(config: &Config, plugin_dir: &Path, randomness: Randomness) -> anyhow::Result<Self> {
        let state_dir = tempfile::tempdir().context("making a temporary directory for the engine's journal")?;
        let mut config = config.clone();
        config.daemon.state_dir = state_dir.path().to_path_buf();
        let mut engine = Self::start_with(&config, plugin_dir, randomness)?;
        engine._state_dir = Some(state_dir);
        Ok(engine)
    }

    fn start_with(config: &Config, plugin_dir: &Path, randomness: Randomness) -> anyhow::Result<Self> {
        let (strategy, strategy_name) = open_strategy(config, plugin_dir)?;
        let budget = Budget::new(budget_bytes(config)?);
        let workers = config.daemon.synthesis_workers.max(1);
        let indices = device::indices(config, plugin_dir)?;
        let ahead = config.pipeline.lookahead * indices.len();
        let batch = config.pipeline.batch;
        // A pool keeps the assignments of each batch that may be in synthesis or waiting
        // for a device (`Shared::may_start`), and of one for each device.
        let kept = (workers.max(ahead) + indices.len()) * batch;
        let devices = device::open_all(config, plugin_dir, &indices, &budget, kept)?;
        let state_dir = &config.daemon.state_dir;
        let (journal, recovered, damaged) = Journal::open(state_dir, config.daemon.keep_results)
            .with_context(|| format!("opening the journal in [daemon] state_dir {}", state_dir.display()))?;
        let described: Vec<String> = devices
            .iter()
            .map(|d| match d.opened() {
                Ok(_) => format!("{} {} ({}, {} MiB)", d.ordinal, d.name, d.backend_name, d.memory_bytes >> 20),
                Err(why) => format!("{} down ({why})", d.ordinal),
            })
            .collect();
        tracing::info!(
            "engine: backend {}; strategy {}; devices [{}]; {} synthesis workers; memory budget {} MiB; \
             journal {}",
            config.backend.plugin,
            strategy_name,
            described.join("; "),
            config.daemon.synthesis_workers,
            budget.limit() >> 20,
            state_dir.display()
        );
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                accepting: true,
                stopping: false,
                next_seq: 0,
                next_proof: 0,
                paused: 0,
                jobs: HashMap::new(),
                ids: HashMap::new(),
                requests: HashMap::new(),
                pending: BTreeSet::new(),
                synthesizing: BTreeMap::new(),
                ready: BTreeMap::new(),
                devices: devices.iter().map(|d| DeviceState { down: d.opened().err(), ..Default::default() }).collect(),
                ended: [0; 3],
                queued: (0, 0),
            }),
            work: Condvar::new(),
            params: Arc::new(ParamCache::new(config.params.dir.clone(), config.memory.eviction_min_idle)),
            budget,
            journal: SharedJournal::new(journal),
            submitting: Mutex::new(()),
            metrics: Metrics::new(),
            strategy,
            strategy_name,
            ahead,
            batch,
            priority_caps: job::PriorityCaps::new(&config.daemon.max_priority)?,
            randomness: Arc::new(randomness),
            workers,
            devices,
            plugin_dir: plugin_dir.to_path_buf(),
            started: Instant::now(),
            config: config.clone(),
        });
        let (requeued, kept) = shared.recover(recovered);
        let journal = JournalStatus { state_dir: state_dir.display().to_string(), requeued, kept, damaged };
        let mut threads = Vec::new();
        // The workers report to the starting thread's subscriber (a test's, or the global one).
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        for worker in (0..workers).map(Worker::Synthesis).chain((0..shared.devices.len()).map(Worker::Device)) {
            let (shared, dispatch) = (Arc::clone(&shared), dispatch.clone());
            let name = match worker {
                Worker::Synthesis(n) => format!("bellhop-synthesis-{n}"),
                Worker::Device(d) => format!("bellhop-device-{d}"),
            };
            let run = move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    scheduler::supervise(
                        || match worker {
                            Worker::Synthesis(n) => shared.synthesis_worker(n),
                            Worker::Device(d) => shared.device_worker(d),
                        },
                        |panic| shared.worker_died(worker, panic),
                    )
                })
            };
            threads.push(std::thread::Builder::new().name(name).spawn(run).context("starting the engine's workers")?);
        }
        Ok(Self { shared, workers: threads, journal, _state_dir: None })
    }

    /// Queues every partition of `request`, once it is journaled. A request id and payload
    /// of a job that runs or completed is that job; after it failed or was cancelled they
    /// make a new one. The same request id with another payload is another job (Curio sends
    /// one id for every WindowPoSt partition of a deadline), with an id of its own.
    pub fn submit(&self, request: JobRequest) -> Result<Submitted, Refused> {
        let shared = &self.shared;
        if request.partitions == 0 {
            return Err(Refused::Invalid(format!("the input of {} makes no partitions to prove", request.circuit)));
        }
        if let Some(prepared) = request.prepared.as_ref().filter(|p| p.len() != request.partitions) {
            return Err(Refused::Invalid(format!(
                "{} inputs prepared for the {} partitions of a {} job",
                prepared.len(),
                request.partitions,
                request.circuit
            )));
        }
        if let Some(id) = request.request_id.as_deref().filter(|id| id.len() > MAX_REQUEST_ID_BYTES) {
            return Err(Refused::Invalid(format!(
                "request_id is {} bytes, more than the {MAX_REQUEST_ID_BYTES} it may be (it is journaled, logged and \
                 listed in GetStatus); send a shorter one",
                id.len()
            )));
        }
        shared.admit(&request.circuit).map_err(Refused::Invalid)?;
        let digest = request.digest();
        // Before the state lock: it may read the parameter file's header.
        let params = shared.check_params(&request.circuit);
        // One submission at a time, so that what is checked under the state lock (the same
        // request, a free id, room in the queue) still holds once the job is journaled,
        // which happens without the state lock.
        let _submitting = shared.submitting.lock().unwrap_or_else(|p| p.into_inner());
        let mut state = shared.lock();
        if !state.accepting {
            return Err(Refused::ShuttingDown);
        }
        shared.sweep(&mut state);
        let request_id: Arc<str> = match request.request_id.as_deref() {
            Some(id) if !id.is_empty() => id.into(),
            _ => new_job_id().into(),
        };
        let same = state.requests.get(&(Arc::clone(&request_id), digest)).and_then(|seq| state.jobs.get(seq));
        if let Some(job) = same.filter(|job| job.answers_again()) {
            return Ok(Submitted {
                job_id: job.id.to_string(),
                handle: JobHandle(job.seq),
                queue_position: state.queue_position(job),
                assigned_device: shared.assigned_device(&state),
                existing: true,
            });
        }
        let need = params?;
        let kind = JobKind::of(&request.circuit);
        let priority = shared.priority_caps.grant(kind, request.priority);
        let input_bytes = match &request.prepared {
            Some(each) => each.iter().map(Vec::len).sum(),
            None => request.input.len(),
        };
        shared.check_room(&state, (&request.circuit, priority), input_bytes as u64, need)?;
        let id = free_job_id(&state, &request_id, &digest);
        if let Some(other) = state.job_named(&request_id).filter(|job| job.digest != digest) {
            tracing::warn!(
                request_id = %request_id,
                "request id `{request_id}` already names job `{}` with payload digest {}; this payload (digest {}) \
                 is another job, `{id}`",
                other.id,
                hex(&other.digest),
                hex(&digest)
            );
        }
        let accepted = Accepted {
            id: id.to_string(),
            request_id: (request_id != id).then(|| request_id.to_string()),
            circuit: request.circuit.to_string(),
            partitions: request.partitions,
            first_seed: request.first_seed,
            priority,
            digest,
            at_ms: Journal::stamp(),
        };
        drop(state);
        shared
            .journal
            .write(|journal| journal.accept(&accepted, &request.input))
            .map_err(|e| Refused::Storage(e.to_string()))?;
        let mut state = shared.lock();
        let seq = state.next_seq;
        state.next_seq += 1;
        let mut entry = JobEntry::new(seq, &accepted, request.circuit, Inputs::new(request.input, request.prepared));
        entry.aggregation = request.aggregation.map(Arc::from);
        entry.input_memory = Some(shared.budget.charge(entry.input_bytes));
        entry.need = need;
        // Stopped meanwhile: the job is journaled, and runs after the restart.
        if state.accepting {
            entry.queue(&mut state.pending);
        }
        let queue_position = state.queue_position(&entry);
        tracing::info!(job = %id, %kind, circuit = %entry.circuit, partitions = request.partitions, ?priority, "accepted");
        state.insert(entry);
        shared.work.notify_all();
        Ok(Submitted {
            job_id: id.to_string(),
            handle: JobHandle(seq),
            queue_position,
            assigned_device: shared.assigned_device(&state),
            existing: false,
        })
    }

    /// Waits until job `job_id` ends, or `timeout` passes (the job goes on).
    pub async fn wait(&self, job_id: &str, timeout: Option<Duration>) -> Result<Waited, NotFound> {
        let not_found = || NotFound(job_id.to_string());
        let outcome = self.shared.lock().job_named(job_id).ok_or_else(not_found)?.outcome.subscribe();
        Self::wait_on(outcome, timeout).await.ok_or_else(not_found)
    }

    /// Waits until the job `submit` answered with ends, or `timeout` passes (the job goes
    /// on): that job, even if its id names another one by then.
    pub async fn wait_for(&self, submitted: &Submitted, timeout: Option<Duration>) -> Result<Waited, NotFound> {
        let not_found = || NotFound(submitted.job_id.clone());
        let outcome = self.shared.lock().jobs.get(&submitted.handle.0).ok_or_else(not_found)?.outcome.subscribe();
        Self::wait_on(outcome, timeout).await.ok_or_else(not_found)
    }

    /// Waits, blocking this thread (not an async task's), until the job `submitted` names
    /// ends: its proof (none for a benchmark's, whose proofs prove nothing), or why it did
    /// not complete. For the commands that run an engine in process.
    pub fn proof_of(&self, submitted: &Submitted) -> anyhow::Result<Option<Vec<u8>>> {
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
        match runtime.block_on(self.wait_for(submitted, None))? {
            Waited::Done(Outcome::Completed { proof, .. }) => Ok(Some(proof)),
            Waited::Done(Outcome::Benchmarked { .. }) => Ok(None),
            Waited::Done(Outcome::Failed(why)) => anyhow::bail!("{why}"),
            Waited::Done(Outcome::Cancelled) => anyhow::bail!("job {} was cancelled", submitted.job_id),
            Waited::Timeout => unreachable!("waited without a timeout"),
        }
    }

    /// The outcome `outcome` will carry, or a timeout; `None` if the job was dropped unended.
    async fn wait_on(mut outcome: watch::Receiver<Option<Outcome>>, timeout: Option<Duration>) -> Option<Waited> {
        let ended = async {
            let ended = outcome.wait_for(Option::is_some).await.ok()?;
            Some((*ended).clone().expect("waited for an outcome"))
        };
        match timeout {
            Some(limit) => match tokio::time::timeout(limit, ended).await {
                Ok(result) => result.map(Waited::Done),
                Err(_) => Some(Waited::Timeout),
            },
            None => ended.await.map(Waited::Done),
        }
    }

    /// Cancels job `job_id`: a queued one is dropped; a running one ends now as cancelled
    /// and its partition in progress is discarded at the next boundary. A job that has
    /// ended already is left as it is.
    pub fn cancel(&self, job_id: &str) -> Result<Cancelled, NotFound> {
        let mut state = self.shared.lock();
        let job = state.job_named(job_id).ok_or_else(|| NotFound(job_id.to_string()))?;
        if job.ended.is_some() {
            return Ok(Cancelled { was_running: false });
        }
        let (seq, was_running) = (job.seq, job.started.is_some());
        self.shared.end(&mut state, seq, Outcome::Cancelled);
        drop(state);
        self.shared.journal.flush();
        Ok(Cancelled { was_running })
    }

    /// The engine now.
    pub fn status(&self) -> Status {
        let shared = &self.shared;
        // Plugin calls, before the state lock.
        let memories: Vec<_> = shared.devices.iter().map(|device| device.memory()).collect();
        let mut state = shared.lock();
        shared.sweep(&mut state);
        let devices = shared
            .devices
            .iter()
            .zip(memories)
            .map(|(device, memory)| {
                let d = device.ordinal;
                let job = state.devices[d]
                    .proving
                    .first()
                    .and_then(|key| state.jobs.get(&key.seq))
                    .map(|job| (job.id.to_string(), job.kind));
                DeviceStatus {
                    ordinal: d as u32,
                    index: device.index,
                    name: device.name.clone(),
                    backend: device.backend_name.clone(),
                    memory_total_bytes: memory.map_or(device.memory_bytes, |m| m.total_bytes),
                    memory_free_bytes: memory.map_or(0, |m| m.free_bytes),
                    down: state.devices[d].down.clone(),
                    marked_down: state.devices[d].marked_down,
                    proved: state.devices[d].proved,
                    current_kind: job.as_ref().map(|(_, kind)| *kind),
                    current_job: job.map(|(id, _)| id),
                    kept_host_bytes: device.pool.free_bytes(),
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
        let mut running: Vec<&JobEntry> =
            state.jobs.values().filter(|j| j.ended.is_none() && j.started.is_some()).collect();
        running.sort_by_key(|job| job.rank());
        let running = running
            .into_iter()
            .map(|job| RunningJob {
                job_id: job.id.to_string(),
                kind: job.kind,
                partitions_done: job.partitions_done(),
                partitions: job.proofs.len(),
                elapsed_seconds: job.started.map_or(0.0, |at| at.elapsed().as_secs_f64()),
            })
            .collect();
        let usage = shared.budget.usage();
        let memory = MemoryStatus {
            budget_bytes: shared.budget.limit(),
            reserved_bytes: usage.reserved,
            peak_reserved_bytes: usage.peak,
            waiting: shared.budget.waiters(),
            rss_bytes: proc_kib("/proc/self/status", "VmRSS:"),
            peak_rss_bytes: proc_kib("/proc/self/status", "VmHWM:"),
        };
        let [completed, failed, cancelled] = state.ended;
        Status {
            uptime_seconds: shared.started.elapsed().as_secs(),
            accepting: state.accepting,
            strategy: shared.strategy_name.clone(),
            devices,
            params: shared.params.status(),
            memory,
            queues,
            running,
            completed,
            failed,
            cancelled,
            journal: self.journal.clone(),
        }
    }

    /// The Prometheus text exposition of the engine's metrics.
    pub fn metrics(&self) -> String {
        let status = self.status();
        let pending = {
            let state = self.shared.lock();
            let mut pending = HashMap::<JobKind, usize>::new();
            for key in &state.pending {
                if let Some(job) = state.jobs.get(&key.seq) {
                    *pending.entry(job.kind).or_default() += 1;
                }
            }
            pending
        };
        let snapshot = Snapshot {
            queues: status
                .queues
                .iter()
                .map(|q| (q.kind, pending.get(&q.kind).copied().unwrap_or(0), q.in_progress))
                .collect(),
            resident: status.params.iter().map(|p| (p.circuit.clone(), p.bytes)).collect(),
            devices: status.devices.iter().map(|d| (d.ordinal, d.current_job.is_some(), d.down.is_none())).collect(),
            memory: status.memory,
            uptime: self.shared.started.elapsed(),
        };
        self.shared.metrics.text(snapshot)
    }

    /// Loads the parameters of `circuit` and lets every device keep their bases.
    pub fn preload(&self, circuit: &CircuitSpec) -> Result<Preloaded, Refused> {
        self.shared.admit(circuit).map_err(Refused::Invalid)?;
        self.shared.check_params(circuit)?;
        // An operator's call, ranked with NORMAL work that came before it.
        let rank = (Reverse(Priority::Normal), u64::MAX);
        let (lease, took, _) =
            self.shared.acquire_params(circuit, 0, rank, &mut None).map_err(|e| Refused::BadParams(e.to_string()))?;
        if took.is_some() {
            self.shared.metrics.params_loaded(&circuit.to_string());
        }
        for device in self.shared.devices.iter().filter(|d| d.opened().is_ok()) {
            device.keep(&lease.srs).map_err(|e| Refused::BadParams(format!("{e:#}")))?;
        }
        Ok(Preloaded { already_loaded: took.is_none(), load_time: took.unwrap_or_default() })
    }

    /// Holds `srs` as the parameters of `circuit` for the engine's life (never evicted, and
    /// no file read for it): parameters a command read from a file it was given, or made in
    /// memory.
    pub fn provide_params(&self, circuit: &CircuitSpec, srs: Arc<Srs>) {
        let reservation = self.shared.budget.charge(srs.resident_bytes());
        self.shared.params.provide(circuit, srs, reservation);
    }

    /// Waits until every device has freed the buffers of the proofs it made so far (they
    /// are freed off the hot path), so that the next measurement does not pay for them.
    pub fn settle(&self) {
        for device in &self.shared.devices {
            device.settle();
        }
    }

    /// No synthesis starts until the guard is dropped: jobs submitted meanwhile are queued
    /// together, and so batched as `[pipeline] batch` allows (an A/B run's jobs).
    pub fn pause_synthesis(&self) -> SynthesisPaused<'_> {
        self.shared.lock().paused += 1;
        SynthesisPaused(self)
    }

    /// Reads the parameters of `circuit` from `file` instead of its file in `[params] dir`
    /// (a file a command was given).
    pub fn read_params_from(&self, circuit: &CircuitSpec, file: &Path) {
        self.shared.params.read_from(circuit, file.to_path_buf());
    }

    /// Drops the parameters of `circuit` from memory (and the devices), unless a
    /// partition is using them.
    pub fn evict(&self, circuit: &CircuitSpec) -> Result<Evicted, InUse> {
        let Some(dropped) = self.shared.params.evict(circuit)? else {
            return Ok(Evicted { was_loaded: false, freed_bytes: 0 });
        };
        let freed_bytes = dropped.bytes;
        self.shared.release(dropped);
        Ok(Evicted { was_loaded: true, freed_bytes })
    }

    /// Stops taking jobs and waits up to `grace` for the started ones to end; then stops
    /// the workers. Jobs not started stay in the journal and run after a restart. Returns
    /// whether every started job ended in time.
    pub fn shutdown(&self, grace: Duration) -> bool {
        let shared = &self.shared;
        let deadline = Instant::now() + grace;
        let mut state = shared.lock();
        state.accepting = false;
        // Partitions not started wait for the restart.
        let unstarted: Vec<_> = state
            .pending
            .iter()
            .filter(|key| state.jobs.get(&key.seq).is_some_and(|job| job.started.is_none()))
            .cloned()
            .collect();
        for key in unstarted {
            state.pending.remove(&key);
        }
        loop {
            let running = state.jobs.values().filter(|job| job.ended.is_none() && job.started.is_some()).count();
            let now = Instant::now();
            if running == 0 || now >= deadline {
                if running > 0 {
                    tracing::warn!("shutting down with {running} job(s) unfinished after the grace period");
                    // A clean stop: these starts do not count toward [daemon] max_attempts.
                    shared.journal.write(|journal| {
                        for job in state.jobs.values().filter(|job| job.ended.is_none() && job.started.is_some()) {
                            if let Err(e) = journal.interrupted(&job.id) {
                                tracing::error!(job = %job.id, "could not journal its interruption: {e}");
                            }
                        }
                    });
                }
                state.stopping = true;
                shared.work.notify_all();
                drop(state);
                shared.journal.flush();
                return running == 0;
            }
            state = shared.work.wait_timeout(state, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let idle = {
            let mut state = self.shared.lock();
            state.stopping = true;
            state.synthesizing.is_empty() && state.devices.iter().all(|device| device.proving.is_empty())
        };
        self.shared.work.notify_all();
        self.shared.journal.flush();
        // Idle workers stop at once and are joined, which closes the journal; workers in
        // the middle of a partition are not waited for.
        if idle {
            for worker in self.workers.drain(..) {
                let _ = worker.join();
            }
        }
    }
}

impl JobEntry {
    /// Job `seq`, as `accepted` describes it, proving `circuit` of `input`.
    fn new(seq: u64, accepted: &Accepted, circuit: CircuitSpec, inputs: Inputs) -> Self {
        let id: Arc<str> = accepted.id.as_str().into();
        JobEntry {
            seq,
            request_id: accepted.request_id.as_deref().map_or_else(|| Arc::clone(&id), Arc::from),
            id,
            kind: JobKind::of(&circuit),
            circuit,
            priority: accepted.priority,
            digest: accepted.digest,
            input_bytes: inputs.bytes(),
            inputs,
            input_memory: None,
            need: 0,
            submitted: Instant::now(),
            started: None,
            attempts: 0,
            first_seed: accepted.first_seed,
            first_proof: 0,
            alone: false,
            proofs: vec![None; accepted.partitions],
            aggregation: None,
            timings: Timings::default(),
            ended: None,
            outcome: watch::Sender::new(None),
        }
    }
}

impl Shared {
    /// Takes back the jobs the journal held: those that ended are kept as they ended,
    /// the others are queued again (their inputs read back; a lost one fails the job).
    /// Returns how many were queued again and how many kept.
    fn recover(&self, recovered: Vec<journal::Recovered>) -> (usize, usize) {
        let mut state = self.lock();
        let (mut requeued, mut kept) = (0, 0);
        let max_attempts = self.config.daemon.max_attempts;
        for journal::Recovered { accepted, input, ended, attempts } in recovered {
            let circuit = match accepted.circuit.parse::<CircuitSpec>() {
                Ok(circuit) => circuit,
                Err(e) => {
                    tracing::warn!("journal: job {} names no circuit ({e}); skipped", accepted.id);
                    continue;
                }
            };
            let seq = state.next_seq;
            state.next_seq += 1;
            let id = accepted.id.as_str();
            let entry = |inputs| JobEntry::new(seq, &accepted, circuit, inputs);
            let none = || Inputs::new(Vec::new(), None);
            match (ended, input) {
                (Some((outcome, age)), _) => {
                    let mut entry = entry(none());
                    entry.ended = Some(Instant::now().checked_sub(age).unwrap_or_else(Instant::now));
                    entry.proofs.clear();
                    entry.outcome.send_replace(Some(outcome));
                    state.insert(entry);
                    kept += 1;
                }
                (None, _) if attempts >= max_attempts => {
                    state.insert(entry(none()));
                    let why = format!(
                        "the daemon stopped {attempts} times while proving it (a crash, an abort, or a kill such as \
                         the out-of-memory killer's: see the daemon's log and the system's); [daemon] max_attempts = \
                         {max_attempts}, so it does not run again; submit it again to retry"
                    );
                    tracing::error!(job = %id, %circuit, "{why}");
                    self.end(&mut state, seq, Outcome::Failed(why));
                    kept += 1;
                }
                (None, Some(input)) => match self.admit(&circuit).and_then(|()| {
                    circuit.prepare(&input).map_err(|e| format!("its input, read back after a restart: {e}"))
                }) {
                    Ok(PreparedInput { partitions: prepared, aggregation }) => {
                        tracing::info!(
                            job = %id,
                            %circuit,
                            "journal: queued again after a restart ({attempts} of [daemon] max_attempts = \
                             {max_attempts} starts so far)"
                        );
                        let mut entry = entry(Inputs::new(input, prepared));
                        entry.aggregation = aggregation.map(Arc::from);
                        entry.attempts = attempts;
                        entry.input_memory = Some(self.budget.charge(entry.input_bytes));
                        entry.need = self.params.need(&circuit).unwrap_or(0);
                        entry.queue(&mut state.pending);
                        state.insert(entry);
                        requeued += 1;
                    }
                    Err(why) => {
                        state.insert(entry(none()));
                        self.end(&mut state, seq, Outcome::Failed(why));
                        kept += 1;
                    }
                },
                (None, None) => {
                    state.insert(entry(none()));
                    let why = "its input was lost from [daemon] state_dir before it ran; submit it again";
                    self.end(&mut state, seq, Outcome::Failed(why.into()));
                    kept += 1;
                }
            }
        }
        self.work.notify_all();
        drop(state);
        self.journal.flush();
        (requeued, kept)
    }
}

#[cfg(test)]
mod tests {
    use bellperson::groth16::{generate_random_parameters, Parameters};
    use blstrs::Bls12;
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn the_state_lock_is_not_held_while_the_journal_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let spec: CircuitSpec = "chain:1024".parse().unwrap();
        let p: Parameters<Bls12> =
            generate_random_parameters(spec.setup_circuit().unwrap(), &mut rand_chacha::ChaCha20Rng::seed_from_u64(5))
                .unwrap();
        bellhop_host::params::write(&p, &dir.path().join(spec.params_file_name().unwrap())).unwrap();
        let mut config = Config::default();
        config.params.dir = dir.path().to_path_buf();
        config.daemon.state_dir = dir.path().join("state");
        let engine = Engine::start(&config, dir.path()).unwrap();
        engine.shared.journal.slow_down(Duration::from_millis(800));
        let slowest = std::thread::scope(|scope| {
            // Its acceptance and its end each take a slow write.
            let submitted = scope.spawn(|| engine.submit(JobRequest::new(spec, Vec::new()).unwrap()).unwrap());
            let mut slowest = Duration::ZERO;
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(3) {
                let asked = Instant::now();
                engine.status();
                slowest = slowest.max(asked.elapsed());
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(submitted.join().is_ok());
            slowest
        });
        assert_eq!(engine.status().completed, 1, "the job completed");
        eprintln!("the slowest status() during two 800 ms journal writes: {slowest:?}");
        assert!(slowest < Duration::from_millis(200), "status() waited {slowest:?} for the journal");
    }
}
