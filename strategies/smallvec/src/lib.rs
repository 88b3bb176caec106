//! The `smallvec` strategy: each linear combination's nonzero terms are gathered into a
//! `SmallVec` (inline room for 8 terms, the common case in Boolean-heavy gadgets) before
//! they are evaluated and their densities marked, instead of walking the combination's
//! own vectors twice.
//!
//! The seeds measured SmallVec term storage as a 5-6 s synthesis regression on PoRep;
//! this strategy exists so that `bellhop ab` can measure it here.

use std::sync::Arc;

use bellhop_plugin_sdk::{
    options::NoOptions,
    strategy::{Job, Strategy, StrategyPlugin, Synthesis},
    Capabilities, Description, OpenRequest, PluginError,
};
use bellhop_synthesis_kit::{synthesize_jobs, synthesize_one, thread_pool, Bits, Capacity, Evaluate, ProvingCs, Query};
use bellpepper_core::LinearCombination;
use blstrs::Scalar;
use ff::Field;
use smallvec::SmallVec;

/// A term: the variable (inputs tagged by the top bit) and its coefficient.
type Term = (usize, Scalar);

const INPUT: usize = 1 << (usize::BITS - 1);

/// Evaluates through SmallVec-backed term storage.
#[derive(Default)]
struct SmallVecEval;

impl Evaluate for SmallVecEval {
    fn eval(
        &mut self,
        _: Query,
        lc: &LinearCombination<Scalar>,
        mut input_density: Option<&mut Bits>,
        mut aux_density: Option<&mut Bits>,
        inputs: &[Scalar],
        aux: &[Scalar],
    ) -> Scalar {
        let mut terms: SmallVec<[Term; 8]> = SmallVec::new();
        terms.extend(lc.iter_inputs().filter(|(_, c)| !bool::from(c.is_zero())).map(|(&i, c)| (i | INPUT, *c)));
        terms.extend(lc.iter_aux().filter(|(_, c)| !bool::from(c.is_zero())).map(|(&i, c)| (i, *c)));
        let mut acc = Scalar::ZERO;
        for &(var, coeff) in &terms {
            let (value, density) = if var & INPUT != 0 {
                (inputs[var & !INPUT], input_density.as_deref_mut())
            } else {
                (aux[var], aux_density.as_deref_mut())
            };
            acc += if coeff == Scalar::ONE { value } else { value * coeff };
            if let Some(d) = density {
                d.set(var & !INPUT);
            }
        }
        acc
    }
}

/// Synthesis through [`SmallVecEval`].
pub struct SmallVecStrategy {
    pool: Arc<rayon::ThreadPool>,
}

impl Strategy for SmallVecStrategy {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        synthesize_jobs(&self.pool, jobs, |spec, job| {
            synthesize_one(spec, job, Capacity::default(), SmallVecEval).map(ProvingCs::into_assignment)
        })
    }
}

impl StrategyPlugin for SmallVecStrategy {
    type Options = NoOptions;

    fn describe() -> Description {
        Description {
            name: "smallvec".into(),
            description: "SmallVec-backed term storage in the constraint system".into(),
            capabilities: Capabilities::PARALLEL_BATCH,
            devices: Vec::new(),
        }
    }

    fn open(request: &OpenRequest, _: NoOptions) -> Result<Self, PluginError> {
        Ok(Self { pool: thread_pool("bellhop-smallvec", request.threads)? })
    }
}

bellhop_plugin_sdk::export_strategy!(SmallVecStrategy);

#[cfg(test)]
mod tests {
    use super::*;

    bellhop_synthesis_kit::strategy_tests!(
        smallvec,
        SmallVecStrategy::open(&OpenRequest { device: 0, threads: 2, options: "".into() }, NoOptions {}).unwrap()
    );
}
