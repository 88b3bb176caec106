//! The CPU backend with `proof_msms` (ABI 1.4), and keeping host memory (ABI 1.6) if asked.

use std::sync::{Arc, Mutex};

use bellhop_cpu::CpuBackend;
use bellhop_host::session::OpenedBackend;
use bellhop_plugin_sdk::{
    backend::{proof_msms_from_primitives, Backend, ProofMsms, ProvingBases},
    strategy::Assignment,
    types::Fr,
    Capabilities, PhaseTiming, PluginError,
};

/// The CPU backend with a `proof_msms` made of its own primitives, its A and B scalars
/// gathered from the SDK's selections as a device backend gathers them; with `corrupt`,
/// one whose `l` is off the curve; with `keeper`, one that keeps host memory.
pub struct OneCallCpu {
    cpu: CpuBackend,
    corrupt: bool,
    keeper: Option<Arc<Keeper>>,
}

/// What a keeping backend was asked: the ranges kept and released (by the address of
/// each, in order), and the proofs that read kept memory.
#[derive(Default)]
pub struct Keeper {
    pub kept: Mutex<Vec<Vec<usize>>>,
    pub released: Mutex<Vec<Vec<usize>>>,
    pub proofs_in_kept: Mutex<usize>,
}

fn addresses(ranges: &[&[Fr]]) -> Vec<usize> {
    ranges.iter().map(|r| r.as_ptr() as usize).collect()
}

impl Backend for OneCallCpu {
    bellhop_plugin_sdk::forward_primitives!(cpu);

    fn keep_host_memory(&self, ranges: &[&[Fr]]) -> Result<bool, PluginError> {
        let Some(keeper) = &self.keeper else { return Ok(false) };
        assert_eq!(ranges.len(), 4, "a, b, c and aux");
        keeper.kept.lock().unwrap().push(addresses(ranges));
        Ok(true)
    }

    fn release_host_memory(&self, ranges: &[&[Fr]]) -> Result<(), PluginError> {
        let keeper = self.keeper.as_ref().expect("released only what was kept");
        keeper.released.lock().unwrap().push(addresses(ranges));
        Ok(())
    }

    fn proof_msms(&self, bases: ProvingBases<'_>, x: &Assignment) -> Result<ProofMsms, PluginError> {
        if let Some(keeper) = &self.keeper {
            let read = addresses(&[&x.a, &x.b, &x.c, &x.aux]);
            if keeper.kept.lock().unwrap().contains(&read) {
                *keeper.proofs_in_kept.lock().unwrap() += 1;
            }
        }
        let mut msms = proof_msms_from_primitives(&self.cpu, bases, x)?;
        if self.corrupt {
            msms.l.y = msms.l.x;
        }
        msms.timings = vec![PhaseTiming::new("msm_a", std::time::Duration::from_millis(1))].into();
        Ok(msms)
    }
}

pub fn one_call(corrupt: bool) -> OpenedBackend {
    one_call_keeping(corrupt, None)
}

pub fn one_call_keeping(corrupt: bool, keeper: Option<Arc<Keeper>>) -> OpenedBackend {
    let backend = OneCallCpu { cpu: CpuBackend::new(2).unwrap(), corrupt, keeper };
    let capabilities = Capabilities::MSM_G1 | Capabilities::MSM_G2 | Capabilities::NTT | Capabilities::PROOF_MSMS;
    // Behind the seam, as a loaded plugin is: its checks run on every call.
    OpenedBackend::new(Box::new(bellhop_plugin_sdk::backend::seam(backend)), "one-call-cpu", capabilities)
}
