//! The `pce` strategy: pre-compiled constraint evaluation.
//!
//! The first synthesis of a circuit shape runs the baseline constraint system and records
//! A, B and C as sparse matrices (CSR) with the density bitmaps. Every later synthesis of
//! that shape only computes the witness (`enforce` does nothing, so the gadgets' linear
//! combinations are never built) and gets a, b and c as parallel sparse matrix-vector
//! products. Recordings are kept in memory and cached on disk (see `cache`); an unusable
//! cache file is reported as a warning and rebuilt, never used.
//!
//! A circuit that can be cut into independent parts (PoRep C2's challenges, PoSt's sectors) has its
//! witness computed on many threads, its parts apart; recording stays on one thread.
//!
//! Options: `cache_dir` (default: `$BELLHOP_CACHE_DIR/pce`, else `$XDG_CACHE_HOME/bellhop/pce`,
//! else `~/.cache/bellhop/pce`); `parallel_parts` (default true).

mod cache;
mod recording;

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::{
    strategy::{Assignment, Buffers, Job, Strategy, StrategyPlugin, Synthesis},
    Capabilities, Description, ErrorKind, OpenRequest, PhaseTiming, PluginError,
};
use bellhop_synthesis_kit::{
    job_circuit, parse_job, synthesis_failed, synthesize_in_parts, synthesize_one, thread_pool, Capacity,
};
use rayon::prelude::*;
use recording::{Recorder, Recording, WitnessCs};
use serde::Deserialize;

/// Recordings per circuit shape, in memory and on disk.
pub struct Pce {
    pool: Arc<rayon::ThreadPool>,
    cache_dir: PathBuf,
    recordings: Mutex<HashMap<CircuitSpec, Arc<Recording>>>,
    parallel_parts: bool,
}

impl Pce {
    /// The recording of `spec` from memory or disk; `None` if it must be recorded.
    fn cached(&self, spec: CircuitSpec, warnings: &mut Vec<String>) -> Option<Arc<Recording>> {
        if let Some(r) = self.recordings.lock().unwrap_or_else(|p| p.into_inner()).get(&spec) {
            return Some(r.clone());
        }
        match cache::read(&self.cache_dir, &spec.to_string()) {
            Ok(Some(recording)) => Some(self.remember(spec, recording)),
            Ok(None) => None,
            Err(why) => {
                let path = cache::path(&self.cache_dir, &spec.to_string());
                warnings
                    .push(format!("pce cache file {} for {spec} is unusable: {why}; rebuilding it", path.display()));
                None
            }
        }
    }

    fn remember(&self, spec: CircuitSpec, recording: Recording) -> Arc<Recording> {
        let recording = Arc::new(recording);
        self.recordings.lock().unwrap_or_else(|p| p.into_inner()).insert(spec, recording.clone());
        recording
    }

    /// Synthesizes `job` with the baseline constraint system, recording its matrices.
    fn record(&self, spec: CircuitSpec, job: &Job, warnings: &mut Vec<String>) -> Result<Assignment, PluginError> {
        let cs = synthesize_one(spec, job, Capacity::default(), Recorder::default())?;
        let size = cs.size();
        let (assignment, recorder) = cs.into_parts();
        let recording = recorder.finish(size.inputs, size.aux, &assignment);
        if let Err(e) = cache::write(&self.cache_dir, &spec.to_string(), &recording) {
            warnings.push(format!("cannot write the pce cache for {spec} to {}: {e}", self.cache_dir.display()));
        }
        self.remember(spec, recording);
        Ok(assignment)
    }

    /// The witness of `job` (its parts on many threads where it has them and
    /// `parallel_parts`), multiplied out with `recording` (into `into` where given), or
    /// (inner `Err`) why the recording does not fit the circuit; adds the time of each
    /// part to `clocks` (witness, products), in nanoseconds.
    fn replay(
        parallel_parts: bool,
        spec: CircuitSpec,
        job: &Job,
        recording: &Recording,
        clocks: &[AtomicU64; 2],
        into: Option<&mut Buffers<'_>>,
    ) -> Result<Result<Assignment, String>, PluginError> {
        let start = Instant::now();
        let circuit = job_circuit(spec, job)?;
        let witness = match if parallel_parts { circuit.into_parts() } else { Err(circuit) } {
            Ok(parts) => synthesize_in_parts(spec, parts.head, parts.pieces, || WitnessCs::begin(0, 0))?,
            Err(whole) => WitnessCs::synthesize(whole, recording).map_err(|e| synthesis_failed(spec, e))?,
        };
        clocks[0].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(Self::multiply(recording, witness, clocks, !spec.benchmark_only(), into))
    }

    /// The assignment of `witness` by `recording`'s products (into `into` where given, of
    /// the recording's sizes), checked to satisfy every recorded constraint: a recording
    /// of a circuit that has changed since never yields an assignment. Without
    /// `satisfiable` (a benchmark-only circuit, whose synthetic witness satisfies none of
    /// its checks) the check runs, so that its time counts, but does not refuse.
    fn multiply(
        recording: &Recording,
        witness: WitnessCs,
        clocks: &[AtomicU64; 2],
        satisfiable: bool,
        mut into: Option<&mut Buffers<'_>>,
    ) -> Result<Assignment, String> {
        if let Some(why) = recording.mismatch(&witness) {
            return Err(why);
        }
        let start = Instant::now();
        let assignment = recording.assignment(witness.inputs, witness.aux, into.as_deref_mut());
        let unsatisfied = match &into {
            Some(into) => Recording::unsatisfied(into.a, into.b, into.c),
            None => Recording::unsatisfied(&assignment.a, &assignment.b, &assignment.c),
        };
        clocks[1].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        match unsatisfied {
            Some(row) if satisfiable => {
                Err(format!("the circuit's witness does not satisfy its recorded constraint {row}"))
            }
            _ => Ok(assignment),
        }
    }
}

impl Pce {
    /// [`Strategy::synthesize`], or with `into` (one buffer per job) `synthesize_into`:
    /// replays write their products in place, and what is recorded is copied in.
    fn synthesize_jobs(&self, jobs: &[Job], into: Option<&mut [Buffers<'_>]>) -> Result<Synthesis, PluginError> {
        let start = Instant::now();
        let specs = jobs.iter().enumerate().map(|(i, job)| parse_job(i, job)).collect::<Result<Vec<_>, _>>()?;
        let mut lent: Vec<Option<&mut Buffers<'_>>> = match into {
            Some(into) => into.iter_mut().map(Some).collect(),
            None => jobs.iter().map(|_| None).collect(),
        };
        let mut warnings = Vec::new();
        let mut done: Vec<Option<Assignment>> = vec![None; jobs.len()];
        // The first job of each shape without a recording is synthesized in full, recording it.
        for (i, spec) in specs.iter().enumerate() {
            if specs[..i].contains(spec) || self.cached(*spec, &mut warnings).is_some() {
                continue;
            }
            done[i] = Some(self.pool.install(|| self.record(*spec, &jobs[i], &mut warnings))?);
        }
        let recorded = start.elapsed();
        let clocks = [AtomicU64::new(0), AtomicU64::new(0)];
        let replayed = self.pool.install(|| {
            done.into_par_iter()
                .zip(lent.par_iter_mut())
                .zip(specs.par_iter().zip(jobs.par_iter()))
                .enumerate()
                .map(|(i, ((done, into), (spec, job)))| match done {
                    Some(assignment) => Ok(Ok(assignment)),
                    None => {
                        let recording = self.recordings.lock().unwrap_or_else(|p| p.into_inner())[spec].clone();
                        if let Some(into) = into {
                            into.check_fits(i, recording.constraints(), recording.num_aux)?;
                        }
                        Self::replay(self.parallel_parts, *spec, job, &recording, &clocks, into.as_deref_mut())
                    }
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        // A recording that does not fit its circuit (changed since it was recorded) is
        // replaced: the job is synthesized in full and recorded again.
        let mut assignments = Vec::with_capacity(jobs.len());
        for (i, (replayed, into)) in replayed.into_iter().zip(lent).enumerate() {
            let mut assignment = match replayed {
                Ok(assignment) => assignment,
                Err(why) => {
                    let spec = specs[i];
                    warnings.push(format!(
                        "the pce recording of {spec} does not fit the circuit ({why}); recording it again"
                    ));
                    self.pool.install(|| self.record(spec, &jobs[i], &mut warnings))?
                }
            };
            // Recorded here: its products are in the assignment, not yet in the buffers.
            if let Some(into) = into.filter(|_| !assignment.a.is_empty()) {
                into.take_from(i, &mut assignment)?;
            }
            assignments.push(assignment);
        }
        let summed = |clock: &AtomicU64| Duration::from_nanos(clock.load(Ordering::Relaxed));
        let timings = vec![
            PhaseTiming::new("record", recorded),
            PhaseTiming::new("replay", start.elapsed() - recorded),
            // Summed over the jobs of the batch, which run in parallel.
            PhaseTiming::new("replay_witness_cpu", summed(&clocks[0])),
            PhaseTiming::new("replay_products_cpu", summed(&clocks[1])),
        ];
        Ok(Synthesis { assignments, timings, warnings })
    }
}

impl Strategy for Pce {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        self.synthesize_jobs(jobs, None)
    }

    fn synthesize_into(&self, jobs: &[Job], into: &mut [Buffers<'_>]) -> Result<Synthesis, PluginError> {
        self.synthesize_jobs(jobs, Some(into))
    }
}

/// `[synthesis.options]` of the pce strategy.
#[derive(Deserialize, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Where recordings are kept (default: the user's cache directory).
    pub cache_dir: Option<PathBuf>,
    /// Whether a replayed circuit cut into parts has its witness computed in parallel.
    pub parallel_parts: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { cache_dir: None, parallel_parts: true }
    }
}

impl StrategyPlugin for Pce {
    type Options = Options;

    fn describe() -> Description {
        Description {
            name: "pce".into(),
            description: "pre-compiled constraint evaluation: witness-only synthesis and sparse products".into(),
            capabilities: Capabilities::PARALLEL_BATCH,
            devices: Vec::new(),
        }
    }

    fn open(request: &OpenRequest, options: Options) -> Result<Self, PluginError> {
        let cache_dir = match options.cache_dir {
            None => bellhop_plugin_sdk::dirs::cache_dir("pce"),
            Some(dir) => bellhop_plugin_sdk::dirs::private_dir(&dir).map(|()| dir),
        }
        .map_err(|e| PluginError::new(ErrorKind::OPTIONS, format!("the pce cache: {e}")))?;
        Ok(Self {
            pool: thread_pool("bellhop-pce", request.threads)?,
            cache_dir,
            recordings: Mutex::default(),
            parallel_parts: options.parallel_parts,
        })
    }
}

bellhop_plugin_sdk::export_strategy!(Pce);

#[cfg(test)]
mod tests {
    use super::*;
    use bellhop_plugin_sdk::strategy::Strategy;
    use bellhop_synthesis_kit::{synthesize_directly, synthesize_jobs};

    fn open(dir: &std::path::Path) -> Pce {
        let request = OpenRequest { device: 0, threads: 2, options: "".into() };
        Pce::open(&request, Options { cache_dir: Some(dir.into()), ..Options::default() }).unwrap()
    }

    #[test]
    fn assignments_are_the_baselines() {
        let dir = tempfile::tempdir().unwrap();
        bellhop_synthesis_kit::assert_same_as_baseline("pce", &open(dir.path()));
    }

    fn job(circuit: &str, seed: u64) -> Job {
        Job { circuit: circuit.into(), seed, input: Default::default() }
    }

    fn baseline(jobs: &[Job]) -> Vec<Assignment> {
        synthesize_jobs(&thread_pool("bellhop-pce-test", 2).unwrap(), jobs, synthesize_directly).unwrap().assignments
    }

    #[test]
    fn records_once_then_replays_identically() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = [job("sha256-merkle:1", 1), job("sha256-merkle:1", 2), job("chain:300", 3)];
        let pce = open(dir.path());
        let first = pce.synthesize(&jobs).unwrap();
        assert!(first.warnings.is_empty(), "{:?}", first.warnings);
        assert_eq!(first.assignments, baseline(&jobs));
        assert!(cache::path(dir.path(), "sha256-merkle:1").exists());
        // A fresh instance reads the recordings from disk.
        let again = open(dir.path()).synthesize(&jobs).unwrap();
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        assert_eq!(again.assignments, first.assignments);
    }

    /// Corrupts the cache file of `chain:200` with `damage`, then checks that the next
    /// synthesis warns with `expected`, rebuilds a good file, and returns the right result.
    fn check_rebuilt(damage: impl FnOnce(&std::path::Path, Vec<u8>), expected: &str) {
        let dir = tempfile::tempdir().unwrap();
        let jobs = [job("chain:200", 5)];
        open(dir.path()).synthesize(&jobs).unwrap();
        let path = cache::path(dir.path(), "chain:200");
        damage(&path, std::fs::read(&path).unwrap());
        let out = open(dir.path()).synthesize(&jobs).unwrap();
        assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        assert!(out.warnings[0].contains("is unusable") && out.warnings[0].contains(expected), "{:?}", out.warnings);
        assert!(out.warnings[0].contains("rebuilding it"), "{:?}", out.warnings);
        assert_eq!(out.assignments, baseline(&jobs));
        assert!(cache::read(dir.path(), "chain:200").unwrap().is_some(), "the file was rebuilt");
        let clean = open(dir.path()).synthesize(&jobs).unwrap();
        assert!(clean.warnings.is_empty());
    }

    #[test]
    fn truncated_cache_is_rebuilt() {
        check_rebuilt(|path, bytes| std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap(), "truncated");
    }

    #[test]
    fn flipped_byte_is_rebuilt() {
        check_rebuilt(
            |path, mut bytes| {
                let middle = bytes.len() / 2;
                bytes[middle] ^= 0x01;
                std::fs::write(path, bytes).unwrap();
            },
            "checksum does not match",
        );
    }

    #[test]
    fn cache_of_another_circuit_is_rebuilt() {
        check_rebuilt(
            |path, _| {
                let other = tempfile::tempdir().unwrap();
                open(other.path()).synthesize(&[job("chain:100", 1)]).unwrap();
                std::fs::copy(cache::path(other.path(), "chain:100"), path).unwrap();
            },
            "another circuit",
        );
    }

    /// x·x = y with x = 3, or after a change to the circuit, (x + x)·1 = y: the same
    /// variables, another constraint and another witness.
    struct Square {
        changed: bool,
    }

    impl bellpepper_core::Circuit<blstrs::Scalar> for Square {
        fn synthesize<CS: bellpepper_core::ConstraintSystem<blstrs::Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), bellpepper_core::SynthesisError> {
            let three = blstrs::Scalar::from(3u64);
            let x = cs.alloc(|| "x", || Ok(three))?;
            let y = cs.alloc(|| "y", || Ok(if self.changed { three + three } else { three * three }))?;
            if self.changed {
                cs.enforce(|| "2x = y", |lc| lc + x + x, |lc| lc + CS::one(), |lc| lc + y);
            } else {
                cs.enforce(|| "x^2 = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            }
            Ok(())
        }
    }

    #[test]
    fn a_changed_circuit_never_replays_its_old_recording() {
        use bellhop_synthesis_kit::ProvingCs;
        let cs = ProvingCs::synthesize(Square { changed: false }, Capacity::default(), Recorder::default()).unwrap();
        let size = cs.size();
        let (assignment, recorder) = cs.into_parts();
        let recording = recorder.finish(size.inputs, size.aux, &assignment);
        let clocks = [AtomicU64::new(0), AtomicU64::new(0)];
        let replay = |changed| {
            Pce::multiply(
                &recording,
                WitnessCs::synthesize(Square { changed }, &recording).unwrap(),
                &clocks,
                true,
                None,
            )
        };
        assert_eq!(replay(false).unwrap(), assignment);
        let e = replay(true).unwrap_err();
        assert!(e.contains("does not satisfy its recorded constraint 0"), "{e}");
    }

    #[test]
    fn a_recording_that_does_not_fit_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let pce = open(dir.path());
        pce.synthesize(&[job("chain:100", 1)]).unwrap();
        let spec = |name: &str| parse_job(0, &job(name, 0)).unwrap();
        // As if chain:200 had been recorded before its circuit changed into what it is now.
        let stale = pce.cached(spec("chain:100"), &mut Vec::new()).unwrap();
        pce.recordings.lock().unwrap().insert(spec("chain:200"), stale);
        let jobs = [job("chain:200", 2)];
        let out = pce.synthesize(&jobs).unwrap();
        assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        assert!(out.warnings[0].contains("does not fit the circuit") && out.warnings[0].contains("recording it again"));
        assert_eq!(out.assignments, baseline(&jobs));
        assert!(pce.synthesize(&jobs).unwrap().warnings.is_empty(), "the new recording fits");
    }

    #[test]
    fn unknown_options_are_refused() {
        let request = OpenRequest { device: 0, threads: 1, options: "cachedir = \"x\"".into() };
        let e = bellhop_plugin_sdk::strategy::open_embedded::<Pce>(&request).err().unwrap();
        assert_eq!(e.kind, bellhop_plugin_sdk::ErrorKind::OPTIONS);
        assert!(e.message.contains("unknown field `cachedir`, expected `cache_dir`"), "{e}");
    }
}
