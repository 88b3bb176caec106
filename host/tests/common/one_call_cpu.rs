//! The CPU backend with `proof_msms` (ABI 1.4).

use bellhop_cpu::CpuBackend;
use bellhop_host::session::OpenedBackend;
use bellhop_plugin_sdk::{
    backend::{proof_msms_from_primitives, Backend, ProofMsms, ProvingBases},
    strategy::Assignment,
    Capabilities, PhaseTiming, PluginError,
};

/// The CPU backend with a `proof_msms` made of its own primitives, its A and B scalars
/// gathered from the SDK's selections as a device backend gathers them; with `corrupt`,
/// one whose `l` is off the curve.
pub struct OneCallCpu {
    cpu: CpuBackend,
    corrupt: bool,
}

impl Backend for OneCallCpu {
    bellhop_plugin_sdk::forward_primitives!(cpu);

    fn proof_msms(&self, bases: ProvingBases<'_>, x: &Assignment) -> Result<ProofMsms, PluginError> {
        let mut msms = proof_msms_from_primitives(&self.cpu, bases, x)?;
        if self.corrupt {
            msms.l.y = msms.l.x;
        }
        msms.timings = vec![PhaseTiming::new("msm_a", std::time::Duration::from_millis(1))].into();
        Ok(msms)
    }
}

pub fn one_call(corrupt: bool) -> OpenedBackend {
    let backend = OneCallCpu { cpu: CpuBackend::new(2).unwrap(), corrupt };
    let capabilities = Capabilities::MSM_G1 | Capabilities::MSM_G2 | Capabilities::NTT | Capabilities::PROOF_MSMS;
    // Behind the seam, as a loaded plugin is: its checks run on every call.
    OpenedBackend::new(Box::new(bellhop_plugin_sdk::backend::seam(backend)), "one-call-cpu", capabilities)
}
