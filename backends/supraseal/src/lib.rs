//! Bellhop's `cuda-supraseal` backend: [`Backend::prove_batch`] proves a whole batch in
//! one call to supraseal-c2's `generate_groth16_proofs` on the GPU (its own parameter
//! loader, its own h and MSMs, the batch's circuits sharing the GPU); the host uses it for
//! every batch. The primitives (for conformance, and for hosts that call them) are the CPU
//! backend's: supraseal-c2 exports no primitives, and the `cuda` backend's kernels cannot
//! be linked beside it (both define sppark's kernels, so the link fails on duplicates).

use std::sync::{Mutex, PoisonError};

use bellhop_cpu::CpuBackend;
use bellhop_cuda_devices::{check_device, cuda_result, gpu_memory, gpus};
use bellhop_plugin_sdk::{
    backend::{check_prove_batch, Backend, BackendPlugin},
    options::NoOptions,
    strategy::{Assignment, Density},
    types::{Fr, Proof},
    Capabilities, Description, DeviceMemory, ErrorKind, OpenRequest, PluginError,
};
use supraseal_c2::SRS;

/// The plugin's name.
pub const NAME: &str = "cuda-supraseal";

extern "C" {
    // supraseal-c2's C entry point (cuda/groth16_cuda.cu), called directly for its error
    // code: the crate's Rust wrapper panics on errors.
    fn generate_groth16_proofs_c(
        provers: *const supraseal_c2::Assignment<Fr>,
        num_circuits: usize,
        r_s: *const Fr,
        s_s: *const Fr,
        proofs: *mut Proof,
        srs: &SRS,
    ) -> sppark::Error;
}

/// An opened GPU: supraseal's parameters of the last file proved with, and the CPU
/// backend for the primitives.
pub struct CudaSupraseal {
    cpu: CpuBackend,
    device: u32,
    srs: Mutex<Option<(String, SRS)>>,
}

/// supraseal-c2's view of one density bitmap: words, bit length, set bits.
fn density(d: &Density) -> (*const usize, usize, usize) {
    let popcount = d.words.iter().map(|w| w.count_ones() as usize).sum();
    (d.words.as_ptr().cast::<usize>(), d.len as usize, popcount)
}

impl CudaSupraseal {
    /// Runs `f` with supraseal's parameters of `path`, loading them if the last call used
    /// another file.
    fn with_srs<T>(&self, path: &str, f: impl FnOnce(&SRS) -> T) -> Result<T, PluginError> {
        let mut slot = self.srs.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.as_ref().map(|(p, _)| p.as_str()) != Some(path) {
            *slot = None;
            let srs = SRS::try_new(path.into(), false).map_err(|e| {
                PluginError::new(
                    ErrorKind::INVALID_INPUT,
                    format!("supraseal-c2 cannot load the parameter file {path}: {e}"),
                )
            })?;
            *slot = Some((path.to_string(), srs));
        }
        Ok(f(&slot.as_ref().expect("loaded above").1))
    }
}

impl Backend for CudaSupraseal {
    fn memory(&self) -> Result<DeviceMemory, PluginError> {
        gpu_memory(self.device)
    }

    bellhop_plugin_sdk::forward_primitives!(cpu);

    fn prove_batch(
        &self,
        params: &str,
        assignments: &[&Assignment],
        r: &[Fr],
        s: &[Fr],
    ) -> Result<Vec<Proof>, PluginError> {
        check_prove_batch(assignments, r, s)?;
        if assignments.is_empty() {
            return Ok(Vec::new());
        }
        let provers: Vec<supraseal_c2::Assignment<Fr>> = assignments
            .iter()
            .map(|a| {
                let (a_aux_density, a_aux_bit_len, a_aux_popcount) = density(&a.a_aux_density);
                let (b_inp_density, b_inp_bit_len, b_inp_popcount) = density(&a.b_input_density);
                let (b_aux_density, b_aux_bit_len, b_aux_popcount) = density(&a.b_aux_density);
                supraseal_c2::Assignment {
                    a_aux_density,
                    a_aux_bit_len,
                    a_aux_popcount,
                    b_inp_density,
                    b_inp_bit_len,
                    b_inp_popcount,
                    b_aux_density,
                    b_aux_bit_len,
                    b_aux_popcount,
                    a: a.a.as_ptr(),
                    b: a.b.as_ptr(),
                    c: a.c.as_ptr(),
                    abc_size: a.a.len(),
                    inp_assignment_data: a.inputs.as_ptr(),
                    inp_assignment_size: a.inputs.len(),
                    aux_assignment_data: a.aux.as_ptr(),
                    aux_assignment_size: a.aux.len(),
                }
            })
            .collect();
        let mut proofs = vec![Proof::default(); assignments.len()];
        let error = self.with_srs(params, |srs| {
            // SAFETY: every pointer in `provers` points into an assignment the caller keeps
            // borrowed for this call, with the lengths given beside it: check_prove_batch
            // checked each assignment's shape (A, B and C of one length, each density's
            // words covering its bit length) and that the batch is of one shape; `r`, `s`
            // and `proofs` hold one element per assignment; `Fr` and `Proof` have the
            // layouts of supraseal's `fr_t` and `groth16_proof`.
            unsafe {
                generate_groth16_proofs_c(
                    provers.as_ptr(),
                    provers.len(),
                    r.as_ptr(),
                    s.as_ptr(),
                    proofs.as_mut_ptr(),
                    srs,
                )
            }
        })?;
        cuda_result("prove_batch", error)?;
        Ok(proofs)
    }
}

impl BackendPlugin for CudaSupraseal {
    type Options = NoOptions;

    fn describe() -> Description {
        Description {
            name: NAME.into(),
            description: "whole batches in one call through supraseal-c2 on the GPU; primitives on the CPU (blst)"
                .into(),
            capabilities: Capabilities::MSM_G1
                | Capabilities::MSM_G2
                | Capabilities::NTT
                | Capabilities::COMPUTE_H
                | Capabilities::GPU
                | Capabilities::PROVE_BATCH,
            devices: gpus(),
        }
    }

    fn open(request: &OpenRequest, _: NoOptions) -> Result<Self, PluginError> {
        check_device(NAME, request.device)?;
        Ok(Self { cpu: CpuBackend::new(request.threads as usize)?, device: request.device, srs: Mutex::new(None) })
    }
}

#[cfg(test)]
mod tests {
    use abi_stable::std_types::RVec;
    use bellhop_plugin_sdk::backend::open_embedded;

    use super::*;

    bellhop_conformance::conformance_tests!(
        supraseal,
        open_embedded::<CudaSupraseal>(&OpenRequest { device: 0, threads: 2, options: "".into() }).unwrap(),
        skip_unless = !gpus().is_empty()
    );

    /// The backend without a GPU opened: prove_batch's input checks come first.
    fn unopened() -> CudaSupraseal {
        CudaSupraseal { cpu: CpuBackend::new(1).unwrap(), device: 0, srs: Mutex::new(None) }
    }

    #[test]
    fn a_malformed_batch_is_refused_before_supraseal_reads_it() {
        let zeros = |n| RVec::from(vec![Fr::default(); n]);
        let assignment = Assignment {
            a: zeros(2),
            b: zeros(2),
            c: zeros(2),
            inputs: zeros(1),
            aux: zeros(2),
            a_aux_density: Density::from_bits([true, true]),
            b_input_density: Density::from_bits([true]),
            b_aux_density: Density::from_bits([true, false]),
        };
        // A bitmap claiming more bits than its words hold: supraseal would read past them.
        let mut overlong = assignment.clone();
        overlong.b_aux_density.len = 4096;
        let one = [Fr::default()];
        let e = unopened().prove_batch("never-read.params", &[&overlong], &one, &one).unwrap_err();
        assert_eq!(e.kind, ErrorKind::INVALID_INPUT);
        assert!(e.message.contains("assignment 0 is malformed") && e.message.contains("B-aux density"), "{e}");
        // Blinding lists of another length.
        let e = unopened().prove_batch("never-read.params", &[&assignment], &[], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::INVALID_INPUT);
        assert!(unopened().prove_batch("never-read.params", &[], &[], &[]).unwrap().is_empty());
    }

    #[test]
    fn it_opens_on_a_gpu_or_refuses_clearly() {
        let request = OpenRequest { device: 0, threads: 1, options: "".into() };
        if gpus().is_empty() {
            bellhop_conformance::cannot_check_here(
                "cuda-supraseal's proofs need a CUDA GPU and this machine has none; checking that it refuses clearly",
            );
            let e = open_embedded::<CudaSupraseal>(&request).err().expect("open must fail without a GPU");
            assert_eq!(e.kind, ErrorKind::NO_DEVICE);
            assert!(e.message.contains("fallback"), "the message names the fix: {e}");
            return;
        }
        let backend = open_embedded::<CudaSupraseal>(&request).unwrap();
        let memory = backend.memory().unwrap();
        assert!(memory.free_bytes <= memory.total_bytes && memory.total_bytes > 0, "{memory:?}");
        let past = OpenRequest { device: gpus().len() as u32, ..request };
        assert_eq!(open_embedded::<CudaSupraseal>(&past).err().expect("no such device").kind, ErrorKind::NO_DEVICE);
    }
}
