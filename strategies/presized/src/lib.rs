//! The `presized` strategy: the first synthesis of a circuit shape records how many
//! constraints, inputs and aux variables it made; later ones reserve exactly that up
//! front, so no vector of the constraint system ever grows by reallocation.
//!
//! The seeds measured no gain from this on PoRep (synthesis is compute-bound); this
//! strategy exists so that `bellhop ab` can show it on any circuit.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::{
    options::NoOptions,
    strategy::{Job, Strategy, StrategyPlugin, Synthesis},
    Capabilities, Description, OpenRequest, PluginError,
};
use bellhop_synthesis_kit::{synthesize_jobs, synthesize_one, thread_pool, Capacity, Direct};

/// Capacity hints per circuit shape, learned from the first synthesis of each.
pub struct Presized {
    pool: Arc<rayon::ThreadPool>,
    hints: Mutex<HashMap<CircuitSpec, Capacity>>,
}

impl Presized {
    fn hint(&self, spec: CircuitSpec) -> Capacity {
        self.hints.lock().unwrap_or_else(|p| p.into_inner()).get(&spec).copied().unwrap_or_default()
    }

    fn learn(&self, spec: CircuitSpec, size: Capacity) {
        self.hints.lock().unwrap_or_else(|p| p.into_inner()).entry(spec).or_insert(size);
    }
}

impl Strategy for Presized {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        synthesize_jobs(&self.pool, jobs, |spec, job| {
            let cs = synthesize_one(spec, job, self.hint(spec), Direct)?;
            self.learn(spec, cs.size());
            Ok(cs.into_assignment())
        })
    }
}

impl StrategyPlugin for Presized {
    type Options = NoOptions;

    fn describe() -> Description {
        Description {
            name: "presized".into(),
            description: "capacity hints learned per circuit shape, reserved up front".into(),
            capabilities: Capabilities::PARALLEL_BATCH,
            devices: Vec::new(),
        }
    }

    fn open(request: &OpenRequest, _: NoOptions) -> Result<Self, PluginError> {
        Ok(Self { pool: thread_pool("bellhop-presized", request.threads)?, hints: Mutex::default() })
    }
}

bellhop_plugin_sdk::export_strategy!(Presized);

#[cfg(test)]
mod tests {
    use super::*;

    bellhop_synthesis_kit::strategy_tests!(
        presized,
        Presized::open(&OpenRequest { device: 0, threads: 2, options: "".into() }, NoOptions {}).unwrap()
    );
}
