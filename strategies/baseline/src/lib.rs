//! The baseline synthesis strategy: bellperson's `ProvingAssignment` behaviour, with the
//! jobs of a batch synthesized in parallel.

use std::sync::Arc;

use bellhop_plugin_sdk::{
    options::NoOptions,
    strategy::{Job, Strategy, StrategyPlugin, Synthesis},
    Capabilities, Description, OpenRequest, PluginError,
};
use bellhop_synthesis_kit::{synthesize_directly, synthesize_jobs, thread_pool};

/// The baseline strategy: grow-as-you-go vectors, as bellperson does.
pub struct Baseline {
    pool: Arc<rayon::ThreadPool>,
}

impl Strategy for Baseline {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        synthesize_jobs(&self.pool, jobs, synthesize_directly)
    }
}

impl StrategyPlugin for Baseline {
    type Options = NoOptions;

    fn describe() -> Description {
        Description {
            name: "baseline".into(),
            description: "bellperson's ProvingAssignment, jobs in parallel".into(),
            capabilities: Capabilities::PARALLEL_BATCH,
            devices: Vec::new(),
        }
    }

    fn open(request: &OpenRequest, _: NoOptions) -> Result<Self, PluginError> {
        Ok(Self { pool: thread_pool("bellhop-baseline", request.threads)? })
    }
}
