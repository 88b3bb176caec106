//! Parameter sets held in memory between jobs, each under a reservation of the memory
//! budget, with the partitions using each; idle sets are evicted least recently used.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use bellhop_circuits::CircuitSpec;
use bellhop_host::params::{Shape, Srs};
use serde::Serialize;

use crate::budget::Reservation;

/// One resident set.
struct Resident {
    srs: Arc<Srs>,
    /// Given, not read from `[params] dir`: never evicted.
    pinned: bool,
    users: usize,
    last_used: Instant,
    reservation: Reservation,
}

/// The parameter sets in memory, keyed by circuit.
pub(crate) struct ParamCache {
    dir: PathBuf,
    /// Files named for circuits, in place of their file in `dir`.
    files: Mutex<HashMap<CircuitSpec, PathBuf>>,
    min_idle: Duration,
    sets: Mutex<HashMap<CircuitSpec, Resident>>,
    /// A lock per circuit, held while its file is read: a second partition of a circuit
    /// being loaded waits for that load instead of reading the file again, and the files of
    /// different circuits are read at the same time.
    loading: Mutex<HashMap<CircuitSpec, Arc<Mutex<()>>>>,
    /// Measured bytes of one partition in flight, per circuit.
    measured: Mutex<HashMap<CircuitSpec, u64>>,
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

/// A set dropped from memory, for the devices to release.
pub(crate) struct Dropped {
    pub(crate) circuit: CircuitSpec,
    pub(crate) srs: Arc<Srs>,
    pub(crate) bytes: u64,
    /// Held until the devices have released the set too.
    _reservation: Reservation,
}

impl ParamCache {
    pub(crate) fn new(dir: PathBuf, min_idle: Duration) -> Self {
        Self {
            dir,
            files: Mutex::new(HashMap::new()),
            min_idle,
            sets: Mutex::new(HashMap::new()),
            loading: Mutex::new(HashMap::new()),
            measured: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<CircuitSpec, Resident>> {
        self.sets.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Where the parameters of `circuit` are read from.
    pub(crate) fn path(&self, circuit: &CircuitSpec) -> Result<PathBuf, String> {
        if let Some(file) = self.files.lock().unwrap_or_else(|p| p.into_inner()).get(circuit) {
            return Ok(file.clone());
        }
        Ok(self.dir.join(circuit.params_file_name().map_err(|e| e.to_string())?))
    }

    /// Reads the parameters of `circuit` from `file` from now on.
    pub(crate) fn read_from(&self, circuit: &CircuitSpec, file: PathBuf) {
        self.files.lock().unwrap_or_else(|p| p.into_inner()).insert(*circuit, file);
    }

    /// Whether the set of `circuit` is in memory.
    pub(crate) fn is_resident(&self, circuit: &CircuitSpec) -> bool {
        self.lock().contains_key(circuit)
    }

    /// The shape of `circuit`'s parameters: the resident set's, else read from its file.
    pub(crate) fn shape(&self, circuit: &CircuitSpec) -> Result<Shape, String> {
        if let Some(set) = self.lock().get(circuit) {
            return Ok(set.srs.shape());
        }
        Shape::read(&self.path(circuit)?, &circuit.to_string()).map_err(|e| e.to_string())
    }

    /// The bytes `circuit` needs in memory to prove one partition: its parameter set and
    /// one partition in flight.
    pub(crate) fn need(&self, circuit: &CircuitSpec) -> Result<u64, String> {
        let shape = self.shape(circuit)?;
        Ok(shape.resident_bytes() + self.partition_bytes(circuit, &shape))
    }

    /// What one partition of `circuit` holds while in flight: the estimate from the
    /// parameters' shape, or more where a partition was measured to take more.
    pub(crate) fn partition_bytes(&self, circuit: &CircuitSpec, shape: &Shape) -> u64 {
        let measured = self.measured.lock().unwrap_or_else(|p| p.into_inner()).get(circuit).copied();
        shape.proof_bytes().max(measured.unwrap_or(0))
    }

    /// Records what a partition of `circuit` was measured to take.
    pub(crate) fn measured(&self, circuit: &CircuitSpec, bytes: u64) {
        let mut measured = self.measured.lock().unwrap_or_else(|p| p.into_inner());
        let entry = measured.entry(*circuit).or_insert(0);
        *entry = (*entry).max(bytes);
    }

    /// The parameters of `circuit`, read if they are not resident (under a reservation
    /// from `reserve`, and how long reading took), held until the lease is dropped.
    pub(crate) fn acquire(
        self: &Arc<Self>,
        circuit: &CircuitSpec,
        reserve: impl FnOnce(u64) -> Result<Reservation, String>,
    ) -> Result<(Lease, Option<Duration>), String> {
        let lease = |set: &mut Resident| {
            set.users += 1;
            set.last_used = Instant::now();
            Lease { cache: Arc::clone(self), circuit: *circuit, srs: Arc::clone(&set.srs) }
        };
        if let Some(set) = self.lock().get_mut(circuit) {
            return Ok((lease(set), None));
        }
        let loading = Arc::clone(
            self.loading.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).entry(*circuit).or_default(),
        );
        let _loading = loading.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(set) = self.lock().get_mut(circuit) {
            return Ok((lease(set), None));
        }
        let path = self.path(circuit)?;
        let shape = Shape::read(&path, &circuit.to_string()).map_err(|e| e.to_string())?;
        let mut reservation = reserve(shape.resident_bytes())?;
        let start = Instant::now();
        let srs = Srs::read(&path, &circuit.to_string(), false).map_err(|e| e.to_string())?;
        bellhop_host::synthetic_params::refuse_for(&srs, circuit).map_err(|e| e.to_string())?;
        let took = start.elapsed();
        tracing::info!("loaded the parameters of {circuit} from {} in {took:.1?}", path.display());
        reservation.resize(srs.resident_bytes());
        let mut sets = self.lock();
        let set = sets.entry(*circuit).or_insert(Resident {
            srs: Arc::new(srs),
            pinned: false,
            users: 0,
            last_used: start,
            reservation,
        });
        Ok((lease(set), Some(took)))
    }

    /// Holds `srs` as `circuit`'s set, under `reservation`, never evicted.
    pub(crate) fn provide(&self, circuit: &CircuitSpec, srs: Arc<Srs>, reservation: Reservation) {
        let set = Resident { srs, pinned: true, users: 0, last_used: Instant::now(), reservation };
        self.lock().insert(*circuit, set);
    }

    /// Drops the set of `circuit` if no partition uses it; `None` if it was not resident
    /// (or was given, and cannot be read again).
    pub(crate) fn evict(&self, circuit: &CircuitSpec) -> Result<Option<Dropped>, InUse> {
        let mut sets = self.lock();
        match sets.get(circuit) {
            None => Ok(None),
            Some(set) if set.pinned => Ok(None),
            Some(set) if set.users > 0 => Err(InUse { circuit: circuit.to_string(), users: set.users }),
            Some(_) => Ok(sets.remove(circuit).map(|set| Dropped::from(*circuit, set))),
        }
    }

    /// Drops the least recently used set that no partition uses and that has been idle
    /// for `[memory] eviction_min_idle`, other than `keep`'s, if there is one.
    pub(crate) fn evict_idle(&self, keep: &CircuitSpec) -> Option<Dropped> {
        let mut sets = self.lock();
        let (circuit, _) = sets
            .iter()
            .filter(|(c, set)| *c != keep && !set.pinned && set.users == 0 && set.last_used.elapsed() >= self.min_idle)
            .min_by_key(|(_, set)| set.last_used)?;
        let circuit = *circuit;
        sets.remove(&circuit).map(|set| Dropped::from(circuit, set))
    }

    /// Every resident set.
    pub(crate) fn status(&self) -> Vec<ParamStatus> {
        let mut sets: Vec<ParamStatus> = self
            .lock()
            .iter()
            .map(|(circuit, set)| ParamStatus {
                circuit: circuit.to_string(),
                path: set.srs.path.display().to_string(),
                bytes: set.reservation.bytes(),
                users: set.users,
                idle_seconds: if set.users > 0 { 0 } else { set.last_used.elapsed().as_secs() },
            })
            .collect();
        sets.sort_by(|a, b| a.circuit.cmp(&b.circuit));
        sets
    }
}

impl Dropped {
    fn from(circuit: CircuitSpec, set: Resident) -> Self {
        Self { circuit, bytes: set.reservation.bytes(), srs: set.srs, _reservation: set.reservation }
    }
}

#[cfg(test)]
mod tests {
    use std::{sync::mpsc, thread};

    use bellperson::groth16::{generate_random_parameters, Parameters};
    use blstrs::Bls12;
    use rand::SeedableRng;

    use super::*;
    use crate::budget::Budget;

    #[test]
    fn sets_of_different_circuits_are_read_at_the_same_time() {
        let dir = tempfile::tempdir().unwrap();
        let [first, second]: [CircuitSpec; 2] = ["chain:64", "chain:128"].map(|c| c.parse().unwrap());
        for circuit in [first, second] {
            let rng = &mut rand_chacha::ChaCha20Rng::seed_from_u64(1);
            let p: Parameters<Bls12> = generate_random_parameters(circuit.setup_circuit().unwrap(), rng).unwrap();
            bellhop_host::params::write(&p, &dir.path().join(circuit.params_file_name().unwrap())).unwrap();
        }
        let cache = Arc::new(ParamCache::new(dir.path().to_path_buf(), Duration::ZERO));
        let budget = Budget::new(u64::MAX);
        // The first load is held in the middle, its memory being reserved.
        let (entered, in_first_load) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let first_load = {
            let (cache, budget) = (Arc::clone(&cache), Arc::clone(&budget));
            thread::spawn(move || {
                let reserve = |bytes| {
                    entered.send(()).unwrap();
                    released.recv().unwrap();
                    Ok(budget.charge(bytes))
                };
                cache.acquire(&first, reserve).map(|(_, took)| took.is_some())
            })
        };
        in_first_load.recv_timeout(Duration::from_secs(20)).unwrap();
        let (done, second_loaded) = mpsc::channel();
        {
            let (cache, budget) = (Arc::clone(&cache), Arc::clone(&budget));
            thread::spawn(move || {
                done.send(cache.acquire(&second, |bytes| Ok(budget.charge(bytes))).map(|(_, took)| took.is_some()))
            });
        }
        let loaded = second_loaded.recv_timeout(Duration::from_secs(20));
        release.send(()).unwrap();
        assert_eq!(loaded, Ok(Ok(true)), "the second circuit's set waited for the first one's load");
        assert_eq!(first_load.join().unwrap(), Ok(true));
        // Both are resident now: acquiring them again reads nothing.
        for circuit in [first, second] {
            assert!(cache.acquire(&circuit, |_| Err("read again".into())).unwrap().1.is_none());
        }
    }
}
