//! What the engine is asked to prove and what comes of it.

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    time::Duration,
};

use bellhop_circuits::{CircuitSpec, PreparedInput, WitnessError};
use bellhop_filecoin::Kind;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a job proves, as queues and metrics count it (cuzk's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum JobKind {
    /// PoRep C2.
    #[serde(rename = "porep-c2")]
    PorepC2,
    /// SnapDeals.
    #[serde(rename = "snap-update")]
    SnapUpdate,
    /// WindowPoSt.
    #[serde(rename = "window-post")]
    WindowPost,
    /// WinningPoSt.
    #[serde(rename = "winning-post")]
    WinningPost,
    /// A circuit of Bellhop's catalog that is not Filecoin's (tests, benchmarks).
    #[serde(rename = "catalog")]
    Catalog,
}

impl JobKind {
    /// Every kind, in the order status reports them.
    pub const ALL: [JobKind; 5] = [Self::PorepC2, Self::SnapUpdate, Self::WindowPost, Self::WinningPost, Self::Catalog];

    /// The kind of a job proving `circuit`.
    pub fn of(circuit: &CircuitSpec) -> Self {
        match circuit {
            CircuitSpec::Filecoin(spec) => match spec.kind {
                Kind::Porep | Kind::SyntheticPorep => Self::PorepC2,
                Kind::Snap => Self::SnapUpdate,
                Kind::WindowPost => Self::WindowPost,
                Kind::WinningPost => Self::WinningPost,
            },
            _ => Self::Catalog,
        }
    }

    /// Its name: `porep-c2`, `snap-update`, `window-post`, `winning-post`, `catalog`.
    pub fn name(self) -> &'static str {
        match self {
            Self::PorepC2 => "porep-c2",
            Self::SnapUpdate => "snap-update",
            Self::WindowPost => "window-post",
            Self::WinningPost => "winning-post",
            Self::Catalog => "catalog",
        }
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How urgent a job is; higher goes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// After everything else.
    Low,
    /// PoRep and SnapDeals by default.
    Normal,
    /// WindowPoSt by default.
    High,
    /// WinningPoSt by default: it must be done within the epoch.
    Critical,
}

impl Priority {
    /// The priority of a job of `kind` that asks for none (cuzk's defaults).
    pub fn default_for(kind: JobKind) -> Self {
        match kind {
            JobKind::WinningPost => Self::Critical,
            JobKind::WindowPost => Self::High,
            JobKind::PorepC2 | JobKind::SnapUpdate | JobKind::Catalog => Self::Normal,
        }
    }
}

/// The highest priority a client may ask for each kind of job (`[daemon] max_priority`).
#[derive(Clone, Debug)]
pub(crate) struct PriorityCaps(HashMap<JobKind, Priority>);

impl PriorityCaps {
    /// `[daemon] max_priority`, each kind left out capped at its own default (catalog
    /// circuits, for tests and benchmarks, at CRITICAL): every kind has a cap.
    pub(crate) fn new(table: &BTreeMap<String, String>) -> anyhow::Result<Self> {
        let mut caps: HashMap<JobKind, Priority> = JobKind::ALL
            .into_iter()
            .map(|kind| (kind, if kind == JobKind::Catalog { Priority::Critical } else { Priority::default_for(kind) }))
            .collect();
        for (kind, priority) in table {
            let named = |what: &str, text: &str, expected: &str| {
                anyhow::anyhow!("[daemon] max_priority: `{text}` is no {what}; expected one of {expected}")
            };
            let kind: JobKind = serde_json::from_value(serde_json::Value::String(kind.clone()))
                .map_err(|_| named("job kind", kind, "porep-c2, snap-update, window-post, winning-post, catalog"))?;
            let priority: Priority = serde_json::from_value(serde_json::Value::String(priority.clone()))
                .map_err(|_| named("priority", priority, "low, normal, high, critical"))?;
            caps.insert(kind, priority);
        }
        Ok(Self(caps))
    }

    /// The priority a job of `kind` runs at when it asks for `asked` (none: its default).
    pub(crate) fn grant(&self, kind: JobKind, asked: Option<Priority>) -> Priority {
        asked.unwrap_or_else(|| Priority::default_for(kind)).min(self.0[&kind])
    }
}

/// A request to prove every partition of a circuit's input.
#[derive(Clone, Debug)]
pub struct JobRequest {
    /// The caller's id for the job; `None` or empty: the engine makes one. With the same
    /// payload it names the same job while that runs or once it completed; another payload
    /// under it is another job.
    pub request_id: Option<String>,
    /// The circuit.
    pub circuit: CircuitSpec,
    /// Its input (Filecoin circuits); empty for the synthetic ones.
    pub input: Vec<u8>,
    /// How many partitions the input makes; partition `k` is proved with witness seed
    /// `first_seed + k`.
    pub partitions: usize,
    /// The witness seed of partition 0 (a catalog circuit's witness comes from its seed;
    /// Filecoin circuits read their input): 0 unless a command asks for others.
    pub first_seed: u64,
    /// One input per partition where a partition reads less than the whole input
    /// ([`CircuitSpec::prepare`]: a PoRep's partitions, their vanilla proofs checked once
    /// for the job); `None`: every partition reads `input`.
    pub prepared: Option<Vec<Vec<u8>>>,
    /// What its proof is made with besides its partitions' proofs
    /// ([`CircuitSpec::job_proof`]: a NonInteractivePoRep's aggregation); `None`: their
    /// concatenation.
    pub aggregation: Option<Vec<u8>>,
    /// `None`: the kind's default.
    pub priority: Option<Priority>,
}

impl JobRequest {
    /// A request for every partition of `input` of `circuit`, prepared (decoded, its
    /// vanilla proofs checked, split per partition where that is worth it).
    pub fn new(circuit: CircuitSpec, input: Vec<u8>) -> Result<Self, WitnessError> {
        let PreparedInput { partitions: prepared, aggregation } = circuit.prepare(&input)?;
        let partitions = match &prepared {
            Some(each) => each.len(),
            None => circuit.partitions(&input)?,
        };
        Ok(Self { request_id: None, circuit, input, partitions, first_seed: 0, priority: None, prepared, aggregation })
    }

    /// What makes two requests the same job: circuit, partitions, input and (where not 0)
    /// the first witness seed.
    pub(crate) fn digest(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(self.circuit.to_string().as_bytes());
        hash.update([0]);
        hash.update((self.partitions as u64).to_le_bytes());
        hash.update(&self.input);
        if self.first_seed != 0 {
            hash.update(self.first_seed.to_le_bytes());
        }
        hash.finalize().into()
    }
}

/// Where a job's time went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timings {
    /// From submission to the start of its first synthesis.
    pub queue_wait: Duration,
    /// Loading parameter files it needed that were not resident.
    pub params_load: Duration,
    /// Synthesis, summed over its partitions.
    pub synthesis: Duration,
    /// Proving on the device (and verification), summed over its partitions.
    pub proving: Duration,
    /// From submission to the end.
    pub total: Duration,
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every partition proved and verified.
    Completed {
        /// The job's proof: its partitions' Groth16 proofs, 192 bytes each, in partition
        /// order, or their aggregate (a NonInteractivePoRep's).
        proof: Vec<u8>,
        /// Where its time went.
        timings: Timings,
    },
    /// Every partition of a benchmark-only job (`[daemon] synthetic_benchmarks`) proved:
    /// no proof, since its input is synthetic and its proofs prove nothing.
    Benchmarked {
        /// Where its time went.
        timings: Timings,
    },
    /// A partition could not be proved; the reason.
    Failed(String),
    /// Cancelled before it finished.
    Cancelled,
}

impl Outcome {
    /// `completed`, `benchmarked`, `failed` or `cancelled`, as metrics label it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Completed { .. } => "completed",
            Self::Benchmarked { .. } => "benchmarked",
            Self::Failed(_) => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One job, whatever ids it shares with others: what [`crate::Engine::wait_for`] waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobHandle(pub(crate) u64);

/// What `submit` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The job's id: the request id, unless a job with another payload holds that (then
    /// the request id with a digest of this payload, `ID~1a2b3c4d`).
    pub job_id: String,
    /// The job itself.
    pub handle: JobHandle,
    /// Jobs that will be served before it (0: next).
    pub queue_position: u32,
    /// The device that will prove it, if that is decided (one device: always).
    pub assigned_device: Option<u32>,
    /// Whether the request id and payload named a job running or completed (no new job).
    pub existing: bool,
}

/// What `wait` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Waited {
    /// The job ended.
    Done(Outcome),
    /// The time given ran out; the job goes on.
    Timeout,
}

/// Why the engine refused a request (a job, a preload).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    /// The circuit's parameter file is not there.
    #[error("the parameters of {circuit} are missing: {path} does not exist; {how}")]
    MissingParams {
        /// The circuit.
        circuit: String,
        /// The file looked for.
        path: String,
        /// How to get it.
        how: String,
    },
    /// The circuit's parameter file is there but cannot be used.
    #[error("{0}")]
    BadParams(String),
    /// One partition of the job, with its parameters, needs more memory than the budget.
    #[error(
        "{circuit} needs {need} bytes of memory (its parameters and one partition in flight), more than the \
         [memory] budget of {budget} bytes; raise the budget or prove it on a larger machine"
    )]
    TooBig {
        /// The circuit.
        circuit: String,
        /// Bytes it needs.
        need: u64,
        /// The budget.
        budget: u64,
    },
    /// The queue is full: the jobs not ended, with this one, would pass `[daemon]
    /// max_queued` or `max_queued_bytes`.
    #[error(
        "the queue is full: {jobs} jobs not ended hold {bytes} bytes of input, and this one {job_bytes} more, \
         against [daemon] max_queued = {max_queued} and max_queued_bytes = {max_queued_bytes} (HIGH and CRITICAL \
         jobs may use twice those); submit it again once jobs end, or raise the bounds"
    )]
    QueueFull {
        /// Jobs not ended.
        jobs: usize,
        /// The bytes of input they hold.
        bytes: u64,
        /// This job's input.
        job_bytes: u64,
        /// `[daemon] max_queued`.
        max_queued: usize,
        /// `[daemon] max_queued_bytes`.
        max_queued_bytes: u64,
    },
    /// The inputs of the jobs not ended, with this one's, would leave too little of the
    /// memory budget to prove a partition of the one that needs most.
    #[error(
        "the jobs not ended hold {held} bytes of input (charged to the [memory] budget until they end), and this \
         one {job_bytes} more: that would leave less than the {need} bytes a partition of {circuit} needs with its \
         parameters within the budget of {budget} bytes; submit it again once jobs end, or raise [memory] budget"
    )]
    NoRoomToProve {
        /// The circuit of the job that needs most.
        circuit: String,
        /// The bytes of input the jobs not ended hold.
        held: u64,
        /// This job's input.
        job_bytes: u64,
        /// What a partition of `circuit` needs with its parameters.
        need: u64,
        /// The budget.
        budget: u64,
    },
    /// The job could not be journaled, so it is not accepted.
    #[error("the job could not be written to the journal in [daemon] state_dir: {0}")]
    Storage(String),
    /// The request itself is wrong.
    #[error("{0}")]
    Invalid(String),
    /// The engine is shutting down and takes no new jobs.
    #[error("the daemon is shutting down and takes no new jobs; submit to another one or after its restart")]
    ShuttingDown,
}

/// No job has that id (never submitted, or finished longer ago than results are kept).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("no job `{0}` (never submitted here, or finished longer ago than [daemon] keep_results)")]
pub struct NotFound(pub String);

/// What `cancel` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled {
    /// Whether the job had started (its running partition is stopped at the next boundary).
    pub was_running: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_gets_no_more_than_its_kind_may_ask() {
        let caps = PriorityCaps::new(&BTreeMap::new()).unwrap();
        assert_eq!(caps.grant(JobKind::PorepC2, Some(Priority::Critical)), Priority::Normal, "no jumping the queue");
        assert_eq!(caps.grant(JobKind::PorepC2, Some(Priority::Low)), Priority::Low, "asking less is granted");
        assert_eq!(caps.grant(JobKind::WindowPost, Some(Priority::Critical)), Priority::High);
        assert_eq!(caps.grant(JobKind::WinningPost, None), Priority::Critical, "a kind's own default");
        assert_eq!(caps.grant(JobKind::Catalog, Some(Priority::Critical)), Priority::Critical, "tests may ask any");
        let table = BTreeMap::from([("porep-c2".to_string(), "high".to_string())]);
        let caps = PriorityCaps::new(&table).unwrap();
        assert_eq!(caps.grant(JobKind::PorepC2, Some(Priority::Critical)), Priority::High);
        assert_eq!(caps.grant(JobKind::PorepC2, None), Priority::Normal, "the default is not raised");
        for (kind, priority, named) in [("porep", "high", "`porep` is no job kind"), ("porep-c2", "urgent", "`urgent`")]
        {
            let table = BTreeMap::from([(kind.to_string(), priority.to_string())]);
            let e = PriorityCaps::new(&table).unwrap_err().to_string();
            assert!(e.contains(named) && e.contains("[daemon] max_priority"), "{e}");
        }
    }
}
