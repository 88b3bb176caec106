//! The baseline synthesis strategy: bellperson's `ProvingAssignment` behaviour, with the
//! jobs of a batch synthesized in parallel, and a circuit that can be cut into independent
//! parts (PoRep C2's challenges, PoSt's sectors) synthesized on many threads, its parts apart.
//!
//! Options: `parallel_parts` (default true; false synthesizes every circuit on one thread,
//! as bellperson does).

use std::sync::Arc;

use bellhop_plugin_sdk::{
    strategy::{Job, Strategy, StrategyPlugin, Synthesis},
    Capabilities, Description, OpenRequest, PluginError,
};
use bellhop_synthesis_kit::{synthesize_directly, synthesize_in_parallel, synthesize_jobs, thread_pool};
use serde::Deserialize;

/// The baseline strategy: grow-as-you-go vectors, as bellperson does.
pub struct Baseline {
    pool: Arc<rayon::ThreadPool>,
    parallel_parts: bool,
}

impl Strategy for Baseline {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        if self.parallel_parts {
            synthesize_jobs(&self.pool, jobs, synthesize_in_parallel)
        } else {
            synthesize_jobs(&self.pool, jobs, synthesize_directly)
        }
    }
}

/// `[synthesis.options]` of the baseline strategy.
#[derive(Deserialize, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Whether a circuit cut into parts has them synthesized in parallel.
    pub parallel_parts: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { parallel_parts: true }
    }
}

impl StrategyPlugin for Baseline {
    type Options = Options;

    fn describe() -> Description {
        Description {
            name: "baseline".into(),
            description: "bellperson's ProvingAssignment, jobs and a circuit's independent parts in parallel".into(),
            capabilities: Capabilities::PARALLEL_BATCH,
            devices: Vec::new(),
        }
    }

    fn open(request: &OpenRequest, options: Options) -> Result<Self, PluginError> {
        Ok(Self { pool: thread_pool("bellhop-baseline", request.threads)?, parallel_parts: options.parallel_parts })
    }
}
