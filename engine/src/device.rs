//! The engine's devices: the backend opened on each configured device, proving one
//! partition at a time on a thread of its own, within `[backend] call_timeout`. A failure
//! of the device (a backend error or panic, a call that never returns) is told apart from
//! a failure of the job (refused input, a proof that does not verify, a device out of
//! memory), so that the partition can be retried on another device; a device marked down
//! is probed again (reopened and checked) until it works.

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    path::Path,
    sync::{
        atomic::{AtomicUsize, Ordering},
        mpsc, Arc, Mutex, MutexGuard,
    },
    thread::JoinHandle,
    time::Duration,
};

use crate::budget::{Budget, Reservation};
use bellhop_host::{
    config::Config,
    dealloc::Dealloc,
    params::Srs,
    pipeline::{self, PipelineError, Randomness},
    plugins::{Backends, Plugin},
    prover::ProveError,
    recycler::{KeptPool, Lent, Recycler},
    session::OpenedBackend,
};
use bellhop_plugin_sdk::{
    panic_message,
    strategy::{Assignment, Job},
    ErrorKind,
};

/// One configured device.
pub(crate) struct Device {
    /// Its place in `[backend] devices`.
    pub(crate) ordinal: usize,
    /// The index the backend was opened with.
    pub(crate) index: u32,
    /// Its name as the backend describes it.
    pub(crate) name: String,
    /// The backend's name and source.
    pub(crate) backend_name: String,
    /// Its memory as described.
    pub(crate) memory_bytes: u64,
    /// The opened backend, or why there is none (it failed to open, or to reopen).
    backend: Mutex<Result<Arc<OpenedBackend>, String>>,
    /// The thread of a call that passed `[backend] call_timeout`, until it returns.
    overdue: Mutex<Option<JoinHandle<()>>>,
    /// The assignments its backend keeps (page-locked), lent to synthesis for the next
    /// partition of their circuit.
    pub(crate) pool: KeptPool,
    /// The memory budget's share for the pool's free assignments.
    pooled: Mutex<Reservation>,
    /// Frees a proof's buffers off the hot path.
    dealloc: Dealloc,
    /// Calls running on the device, overdue ones too.
    calls: AtomicUsize,
}

/// A call running on a device, counted until dropped.
struct Call(Arc<Device>);

impl Call {
    fn new(device: &Arc<Device>) -> Self {
        device.calls.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(device))
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What [`Device::release_pooled`] did.
pub(crate) enum Released {
    /// Released kept assignments.
    Some,
    /// Kept some, but a call is running, which the backend's release would wait for.
    Busy,
    /// Nothing to release, or nothing that can be now.
    Nothing,
}

/// A synthesized assignment, with the device whose pool lent its buffers (if one did):
/// back to that pool if dropped unproved (its job ended meanwhile).
pub(crate) struct Pooled {
    assignment: Option<Assignment>,
    circuit: String,
    keeper: Option<Arc<Device>>,
}

impl Pooled {
    /// `assignment` of `circuit`, in buffers `keeper`'s pool lent (if given).
    pub(crate) fn new(assignment: Assignment, circuit: &str, keeper: Option<Arc<Device>>) -> Self {
        Self { assignment: Some(assignment), circuit: circuit.to_string(), keeper }
    }

    /// The device whose pool it goes back to: the one that lent it, else `device`.
    fn keeper(&self, device: &Arc<Device>) -> Arc<Device> {
        Arc::clone(self.keeper.as_ref().unwrap_or(device))
    }

    /// The assignment, no longer given back when dropped.
    fn take(mut self) -> Assignment {
        self.assignment.take().expect("taken once")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let (Some(assignment), Some(keeper)) = (self.assignment.take(), &self.keeper) {
            Recycler::giving_back(&keeper.dealloc, &keeper.pool).spent(&self.circuit, assignment);
            keeper.charge_pooled();
        }
    }
}

/// Why a partition was not proved.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The device failed: retry the partition on another one.
    Device(String),
    /// The device's calls passed `[backend] call_timeout`: the job fails, and the device
    /// is down until the call returns and a probe finds it working.
    Overdue(String),
    /// The job cannot be proved (its parameters do not fit it, say).
    Job(String),
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The devices to prove on: `[backend] devices`, else `[backend] device` if set, else every
/// device the backend describes, else device 0.
pub(crate) fn indices(config: &Config, plugin_dir: &Path) -> anyhow::Result<Vec<u32>> {
    Ok(match (&config.backend.devices, config.backend.device) {
        (Some(indices), _) if !indices.is_empty() => indices.clone(),
        (Some(_), _) => anyhow::bail!("[backend] devices is empty: list at least one device, or leave it out"),
        (None, Some(device)) => vec![device],
        (None, None) => {
            let described: Vec<u32> = Plugin::<Backends>::find(&config.backend.plugin, plugin_dir)
                .map(|plugin| plugin.info.devices.iter().map(|d| d.index).collect())
                .unwrap_or_default();
            if described.is_empty() {
                vec![0]
            } else {
                described
            }
        }
    })
}

/// Opens the backend on each of `indices` (from [`indices`]). A device that fails to open
/// is kept, marked down; if every one fails, the first error is returned. Each device's
/// pool keeps up to `kept` assignments, charged to `budget` while free.
pub(crate) fn open_all(
    config: &Config,
    plugin_dir: &Path,
    indices: &[u32],
    budget: &Arc<Budget>,
    kept: usize,
) -> anyhow::Result<Vec<Arc<Device>>> {
    let mut devices = Vec::new();
    for (ordinal, &index) in indices.iter().enumerate() {
        let backend = OpenedBackend::open(config, plugin_dir, index).map_err(|e| format!("{e:#}"));
        let (name, backend_name, memory_bytes) = match &backend {
            Ok(b) => (
                b.device.as_ref().map_or_else(|| b.name.clone(), |d| d.name.to_string()),
                b.name.clone(),
                b.device.as_ref().map_or(0, |d| d.memory_bytes),
            ),
            Err(e) => {
                tracing::warn!("device {index} is down: {e}");
                (format!("device {index}"), config.backend.plugin.clone(), 0)
            }
        };
        devices.push(Arc::new(Device {
            ordinal,
            index,
            name,
            backend_name,
            memory_bytes,
            backend: Mutex::new(backend.map(Arc::new)),
            overdue: Mutex::default(),
            pool: KeptPool::new(kept),
            pooled: Mutex::new(budget.charge(0)),
            dealloc: Dealloc::new(),
            calls: AtomicUsize::new(0),
        }));
    }
    if devices.iter().all(|d| d.opened().is_err()) {
        let first = devices.iter().find_map(|d| d.opened().err()).unwrap_or_default();
        anyhow::bail!("no device could be opened: {first}");
    }
    Ok(devices)
}

impl Device {
    /// The opened backend, or why there is none.
    pub(crate) fn opened(&self) -> Result<Arc<OpenedBackend>, String> {
        locked(&self.backend).clone()
    }

    /// Lets the backend keep `srs`'s bases (where its memory allows: the backend plans
    /// within its own `device_memory`, else uploads them for every proof).
    pub(crate) fn keep(&self, srs: &Arc<Srs>) -> anyhow::Result<()> {
        self.opened().map_err(|e| anyhow::anyhow!("{e}"))?.keep_bases(srs)
    }

    /// Stops keeping `srs`'s bases.
    pub(crate) fn release(&self, srs: &Arc<Srs>) {
        if let Ok(backend) = self.opened() {
            if let Err(e) = backend.release(srs) {
                tracing::warn!("device {}: {e:#}", self.ordinal);
            }
        }
    }

    /// Kept assignments from the pool to synthesize `jobs` into (see [`KeptPool::lend`]),
    /// with the budget's share for them.
    pub(crate) fn lend(&self, jobs: &[Job]) -> Option<(Lent<'_>, Reservation)> {
        let mut pooled = locked(&self.pooled);
        let lent = self.pool.lend(jobs)?;
        let share = pooled.split(lent.bytes());
        Some((lent, share))
    }

    /// Charges the budget for the pool's free assignments, as they are now.
    pub(crate) fn charge_pooled(&self) {
        let mut pooled = locked(&self.pooled);
        pooled.resize(self.pool.free_bytes());
    }

    /// Releases the pool's free assignments, to make room in the budget, unless a call is
    /// running on the device (then the backend's release would wait for it; a call past
    /// `call_timeout` may never end, so nothing waits for it).
    pub(crate) fn release_pooled(&self) -> Released {
        if self.pool.free_bytes() == 0 {
            return Released::Nothing;
        }
        if self.calls.load(Ordering::Acquire) > 0 {
            let overdue = locked(&self.overdue).as_ref().is_some_and(|call| !call.is_finished());
            return if overdue { Released::Nothing } else { Released::Busy };
        }
        let Ok(backend) = self.opened() else { return Released::Nothing };
        let released = self.pool.release_free(backend.as_ref().as_ref(), &self.dealloc, false);
        self.charge_pooled();
        if released > 0 {
            Released::Some
        } else {
            Released::Nothing
        }
    }

    /// Waits until the buffers of its proofs so far are freed.
    pub(crate) fn settle(&self) {
        self.dealloc.flush();
    }

    /// The device's memory now, as its backend reports it.
    pub(crate) fn memory(&self) -> Option<bellhop_plugin_sdk::DeviceMemory> {
        self.opened().ok().and_then(|backend| backend.memory())
    }

    /// Proves a batch of `assignments` of `circuit` (the first of which is proof number
    /// `first`, blinded as `randomness` says) with `srs` and verifies them (if `verify`), on a thread of its own: the
    /// 192 bytes of each proved, in order, and the fault of the first that was not, if one
    /// was not. The assignments go to the pool of the device that lent their buffers (else
    /// this one's) once proved, or back unproved if the thread does not start. `held` (the
    /// memory the batch holds) is dropped when the backend's calls return. Past `timeout`
    /// the device is overdue: its call is left running, and the device is not probed again
    /// until it returns.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn prove_within(
        self: &Arc<Self>,
        timeout: Duration,
        circuit: String,
        srs: Arc<Srs>,
        first: usize,
        assignments: Vec<Pooled>,
        randomness: Arc<Randomness>,
        verify: bool,
        held: impl Send + 'static,
    ) -> (Vec<Vec<u8>>, Option<Fault>) {
        let (sender, receiver) = mpsc::channel();
        let device = Arc::clone(self);
        let counted = Call::new(self);
        let span = tracing::Span::current();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let call = std::thread::Builder::new().name(format!("bellhop-call-{}", self.ordinal)).spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                let keeper = assignments.first().map_or_else(|| Arc::clone(&device), |a| a.keeper(&device));
                let proved =
                    span.in_scope(|| device.prove(&circuit, &srs, (first, &randomness), assignments, &keeper, verify));
                // The budget covers what the pool kept before the batch's share goes.
                keeper.charge_pooled();
                drop((held, counted));
                // The worker may have stopped waiting.
                let _ = sender.send(proved);
            })
        });
        let call = match call {
            Ok(call) => call,
            Err(e) => return (Vec::new(), Some(Fault::Device(format!("could not start a thread for its calls: {e}")))),
        };
        match receiver.recv_timeout(timeout) {
            Ok(proved) => {
                let _ = call.join();
                proved
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                *locked(&self.overdue) = Some(call);
                let overdue = Fault::Overdue(format!(
                    "its calls took longer than [backend] call_timeout ({}); the device is down until they return \
                     and a probe finds it working (raise call_timeout if proofs this large take longer)",
                    humantime::format_duration(timeout)
                ));
                (Vec::new(), Some(overdue))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let why = call.join().err().map_or_else(|| "no answer".into(), |panic| panic_message(&*panic));
                (Vec::new(), Some(Fault::Device(format!("the thread of its calls died: {why}"))))
            }
        }
    }

    /// Reopens the backend and checks it on a small MSM, once no overdue call is left
    /// running: whether the device works again, or why not.
    pub(crate) fn probe(&self, config: &Config, plugin_dir: &Path) -> Result<(), String> {
        {
            let mut overdue = locked(&self.overdue);
            if overdue.as_ref().is_some_and(|call| !call.is_finished()) {
                return Err("its call past [backend] call_timeout has not returned".into());
            }
            if let Some(call) = overdue.take() {
                let _ = call.join();
            }
        }
        // The old backend goes first (a device may not take two), and what it kept with it.
        let old = std::mem::replace(&mut *locked(&self.backend), Err("being reopened".into()));
        if let Ok(old) = old {
            self.pool.release_free(old.as_ref().as_ref(), &self.dealloc, true);
            self.charge_pooled();
        }
        let reopened = OpenedBackend::open(config, plugin_dir, self.index)
            .and_then(|backend| backend.check().map(|()| backend))
            .map(Arc::new)
            .map_err(|e| format!("{e:#}"));
        *locked(&self.backend) = reopened.clone();
        reopened.map(drop)
    }

    /// Proves `assignments` of `circuit` (the first is proof number `first`, blinded as
    /// `randomness` says) with `srs` and verifies them (if `verify`), in one call where the
    /// backend proves whole batches: the 192 bytes of each proved, in order, and the fault
    /// of the first that was not.
    fn prove(
        &self,
        circuit: &str,
        srs: &Arc<Srs>,
        (first, randomness): (usize, &Randomness),
        assignments: Vec<Pooled>,
        keeper: &Device,
        verify: bool,
    ) -> (Vec<Vec<u8>>, Option<Fault>) {
        let backend = match self.opened() {
            Ok(backend) => backend,
            Err(why) => return (Vec::new(), Some(Fault::Device(why))),
        };
        let count = assignments.len();
        let assignments: Vec<Assignment> = assignments.into_iter().map(Pooled::take).collect();
        if let Err(e) = self.keep(srs) {
            tracing::warn!("device {} could not keep the bases of {}: {e:#}", self.ordinal, srs.path.display());
        }
        let mut proofs = Vec::with_capacity(count);
        // Panics in the verifier are errors of the step; any other is the backend's.
        let proved = catch_unwind(AssertUnwindSafe(|| {
            let blinding = |index| randomness.blinding(index);
            // Lent by another device: back to its pool if it still keeps it, else freed.
            let recycler = if std::ptr::eq(keeper, self) {
                Recycler::over(&backend, &self.dealloc, &self.pool)
            } else {
                Recycler::giving_back(&self.dealloc, &keeper.pool)
            };
            pipeline::prove_synthesized(
                &backend,
                srs,
                circuit,
                first,
                assignments,
                blinding,
                verify,
                &recycler,
                &mut |p| {
                    proofs.push(p.proof_bytes());
                },
            )
        }));
        let fault = match proved {
            Ok(Ok(())) if proofs.len() == count => None,
            Ok(Ok(())) => Some(Fault::Device("the proving step returned fewer proofs than it was given".into())),
            Ok(Err(PipelineError::Prove { error, .. })) => Some(fault(error)),
            Ok(Err(other)) => Some(Fault::Job(other.to_string())),
            Err(panic) => Some(Fault::Device(format!("the backend panicked: {}", panic_message(&*panic)))),
        };
        (proofs, fault)
    }
}

impl Drop for Device {
    /// Releases the pool's free assignments before the backend is closed.
    fn drop(&mut self) {
        if let Ok(backend) = self.opened() {
            self.pool.release_free(backend.as_ref().as_ref(), &self.dealloc, true);
        }
    }
}

/// Whether a proof error is the device's or the job's: a backend that refuses its input
/// or options, or does not support what was asked, would refuse it on any device; a
/// device out of memory works, and is not taken down for it.
fn fault(error: ProveError) -> Fault {
    match &error {
        ProveError::Backend { error: e, .. } if e.kind == ErrorKind::OUT_OF_MEMORY => Fault::Job(format!(
            "{error}; the device stays up: fewer parameter sets kept on it, a smaller sector or a larger card would \
             fit"
        )),
        ProveError::Backend { error: e, .. }
            if [ErrorKind::INVALID_INPUT, ErrorKind::UNSUPPORTED, ErrorKind::OPTIONS].contains(&e.kind) =>
        {
            Fault::Job(error.to_string())
        }
        ProveError::Backend { .. } | ProveError::BadPoint { .. } => Fault::Device(error.to_string()),
        // A witness that does not satisfy its circuit fails verification on every device,
        // so it must not take the devices down one by one.
        ProveError::Unverified { .. }
        | ProveError::Params(_)
        | ProveError::Malformed { .. }
        | ProveError::OtherStatement { .. }
        | ProveError::SubvertedParameters
        | ProveError::Verifier { .. } => Fault::Job(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use bellhop_plugin_sdk::PluginError;

    use super::*;

    #[test]
    fn refused_input_and_unverified_proofs_are_the_job_s_fault_and_a_failing_device_the_device_s() {
        let backend = |kind| ProveError::Backend { phase: "msm", error: PluginError::new(kind, "why") };
        for kind in [ErrorKind::INVALID_INPUT, ErrorKind::UNSUPPORTED, ErrorKind::OPTIONS] {
            assert!(matches!(fault(backend(kind)), Fault::Job(_)));
        }
        for kind in [ErrorKind::DEVICE, ErrorKind::NO_DEVICE, ErrorKind::PANIC, ErrorKind::INTERNAL] {
            assert!(matches!(fault(backend(kind)), Fault::Device(_)));
        }
        assert!(matches!(fault(ProveError::Unverified { circuit: "chain:1024".into() }), Fault::Job(_)));
        let Fault::Job(why) = fault(backend(ErrorKind::OUT_OF_MEMORY)) else { panic!("out of memory is the job's") };
        assert!(why.contains("the device stays up"), "{why}");
    }
}
