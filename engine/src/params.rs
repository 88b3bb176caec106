//! Parameter sets held in memory between jobs, with the partitions using each.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use bellhop_circuits::CircuitSpec;
use bellhop_host::params::Srs;
use serde::Serialize;

/// One resident set.
struct Resident {
    srs: Arc<Srs>,
    bytes: u64,
    users: usize,
    last_used: Instant,
}

/// The parameter sets in memory, keyed by circuit.
pub(crate) struct ParamCache {
    dir: PathBuf,
    sets: Mutex<HashMap<CircuitSpec, Resident>>,
    /// One file is read at a time: a second partition of a circuit being loaded waits
    /// for that load instead of reading the file again.
    loading: Mutex<()>,
}

/// A parameter set held for one partition; the set cannot be evicted while held.
pub(crate) struct Lease {
    cache: Arc<ParamCache>,
    circuit: CircuitSpec,
    /// The parameters.
    pub(crate) srs: Arc<Srs>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(set) = self.cache.lock().get_mut(&self.circuit) {
            set.users -= 1;
            set.last_used = Instant::now();
        }
    }
}

/// A set the engine holds, as status reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParamStatus {
    /// The circuit it proves.
    pub circuit: String,
    /// The file it was read from.
    pub path: String,
    /// Bytes its points take in memory.
    pub bytes: u64,
    /// Partitions using it now.
    pub users: usize,
    /// Seconds since a partition last used it.
    pub idle_seconds: u64,
}

/// Why a set was not evicted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the parameters of {circuit} are in use by {users} partition(s); evict them when those are done")]
pub struct InUse {
    /// The circuit.
    pub circuit: String,
    /// Partitions using it.
    pub users: usize,
}

impl ParamCache {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir, sets: Mutex::new(HashMap::new()), loading: Mutex::new(()) }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<CircuitSpec, Resident>> {
        self.sets.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Where the parameters of `circuit` are read from.
    pub(crate) fn path(&self, circuit: &CircuitSpec) -> Result<PathBuf, String> {
        Ok(self.dir.join(circuit.params_file_name().map_err(|e| e.to_string())?))
    }

    /// The parameters of `circuit`, read if they are not resident (and how long that
    /// took), held until the lease is dropped.
    pub(crate) fn acquire(self: &Arc<Self>, circuit: &CircuitSpec) -> Result<(Lease, Option<Duration>), String> {
        let lease = |set: &mut Resident| {
            set.users += 1;
            set.last_used = Instant::now();
            Lease { cache: Arc::clone(self), circuit: *circuit, srs: Arc::clone(&set.srs) }
        };
        if let Some(set) = self.lock().get_mut(circuit) {
            return Ok((lease(set), None));
        }
        let _loading = self.loading.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(set) = self.lock().get_mut(circuit) {
            return Ok((lease(set), None));
        }
        let start = Instant::now();
        let path = self.path(circuit)?;
        let srs = Srs::read(&path, &circuit.to_string(), false).map_err(|e| e.to_string())?;
        let took = start.elapsed();
        tracing::info!("loaded the parameters of {circuit} from {} in {took:.1?}", path.display());
        let bytes = srs.resident_bytes();
        let mut sets = self.lock();
        let set = sets.entry(*circuit).or_insert(Resident { srs: Arc::new(srs), bytes, users: 0, last_used: start });
        Ok((lease(set), Some(took)))
    }

    /// Drops the set of `circuit` if no partition uses it; returns it (for the devices to
    /// release), `None` if it was not resident.
    pub(crate) fn evict(&self, circuit: &CircuitSpec) -> Result<Option<(Arc<Srs>, u64)>, InUse> {
        let mut sets = self.lock();
        match sets.get(circuit) {
            None => Ok(None),
            Some(set) if set.users > 0 => Err(InUse { circuit: circuit.to_string(), users: set.users }),
            Some(_) => Ok(sets.remove(circuit).map(|set| (set.srs, set.bytes))),
        }
    }

    /// Every resident set.
    pub(crate) fn status(&self) -> Vec<ParamStatus> {
        let mut sets: Vec<ParamStatus> = self
            .lock()
            .iter()
            .map(|(circuit, set)| ParamStatus {
                circuit: circuit.to_string(),
                path: set.srs.path.display().to_string(),
                bytes: set.bytes,
                users: set.users,
                idle_seconds: if set.users > 0 { 0 } else { set.last_used.elapsed().as_secs() },
            })
            .collect();
        sets.sort_by(|a, b| a.circuit.cmp(&b.circuit));
        sets
    }
}
