//! `cuzk.v1.ProvingEngine` over the engine: requests checked and decoded, engine errors
//! mapped to status codes, nothing else.

use std::{sync::Arc, time::Duration};

use bellhop_circuits::CircuitSpec;
use bellhop_engine::{
    Engine, JobKind, JobRequest, Outcome, Priority, Refused, Status as EngineStatus, Timings, Waited,
};
use bellhop_filecoin::curio::{self, ProofKind};
use bellhop_proto::v1::{
    self as pb, await_proof_response::Status as AwaitStatus, proving_engine_server::ProvingEngine, srs_status::Tier,
};
use tonic::{Request, Response, Status};

/// The gRPC service.
pub struct ProvingService {
    engine: Arc<Engine>,
}

impl ProvingService {
    /// The service over `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// Runs `call` on the engine in a blocking task, off the async threads: it may wait
    /// for the engine's locks, a journal sync or a parameter load.
    async fn engine<T: Send + 'static>(&self, call: impl FnOnce(&Engine) -> T + Send + 'static) -> Result<T, Status> {
        let engine = Arc::clone(&self.engine);
        tokio::task::spawn_blocking(move || call(&engine))
            .await
            .map_err(|e| Status::internal(format!("the engine's call failed: {e}")))
    }
}

fn invalid(field: &str, why: impl std::fmt::Display) -> Status {
    Status::invalid_argument(format!("{field}: {why}"))
}

/// Checks and decodes a `SubmitProofRequest` off the async threads (decoding a PoRep C1
/// output parses tens of megabytes).
async fn job_request(request: pb::SubmitProofRequest) -> Result<JobRequest, Status> {
    tokio::task::spawn_blocking(move || decode_submit(request))
        .await
        .map_err(|e| Status::internal(format!("decoding the request failed: {e}")))?
}

/// Checks and decodes a `SubmitProofRequest` into the engine's job; what is wrong with it
/// is an `INVALID_ARGUMENT` naming the field.
pub fn decode_submit(request: pb::SubmitProofRequest) -> Result<JobRequest, Status> {
    let kind = ProofKind::from_wire(request.proof_kind).ok_or_else(|| {
        invalid(
            "proof_kind",
            format!(
                "{} is not a proof kind; use POREP_SEAL_COMMIT (1), SNAP_DEALS_UPDATE (2), WINDOW_POST_PARTITION (3) \
                 or WINNING_POST (4)",
                request.proof_kind
            ),
        )
    })?;
    let priority = match pb::Priority::try_from(request.priority) {
        Ok(pb::Priority::Unspecified) => None,
        Ok(pb::Priority::Low) => Some(Priority::Low),
        Ok(pb::Priority::Normal) => Some(Priority::Normal),
        Ok(pb::Priority::High) => Some(Priority::High),
        Ok(pb::Priority::Critical) => Some(Priority::Critical),
        Err(_) => {
            return Err(invalid(
                "priority",
                format!("{} is not a priority (0-4: UNSPECIFIED to CRITICAL)", request.priority),
            ))
        }
    };
    let request_id = request.request_id;
    let payload = curio::Request {
        proof_kind: kind,
        registered_proof: request.registered_proof,
        vanilla_proof: request.vanilla_proof,
        vanilla_proofs: request.vanilla_proofs,
        sector_number: request.sector_number,
        miner_id: request.miner_id,
        randomness: request.randomness,
        partition_index: request.partition_index,
        comm_r_old: request.comm_r_old,
        comm_r_new: request.comm_r_new,
        comm_d_new: request.comm_d_new,
    };
    let decoded = payload.decode().map_err(|e| invalid(&e.field, &e.why))?;
    let circuit = CircuitSpec::Filecoin(decoded.spec);
    // A PoRep's vanilla proofs are checked here, once for the job.
    let prepared = circuit.prepare(&decoded.input).map_err(|e| invalid("vanilla_proof", e))?;
    Ok(JobRequest {
        request_id: Some(request_id),
        circuit,
        input: decoded.input,
        partitions: decoded.partitions,
        first_seed: 0,
        priority,
        prepared: prepared.partitions,
        aggregation: prepared.aggregation,
    })
}

fn refused(error: Refused) -> Status {
    let message = error.to_string();
    match error {
        Refused::MissingParams { .. } | Refused::BadParams(_) => Status::failed_precondition(message),
        Refused::TooBig { .. } | Refused::QueueFull { .. } | Refused::NoRoomToProve { .. } => {
            Status::resource_exhausted(message)
        }
        Refused::Invalid(_) => Status::invalid_argument(message),
        Refused::ShuttingDown => Status::unavailable(message),
        Refused::Storage(_) => Status::internal(message),
    }
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// What the daemon tells of a benchmark-only job that completed.
const NO_PROOF: &str = "a benchmark ([daemon] synthetic_benchmarks): its input is synthetic, so its proofs \
                            prove nothing and none is returned";

fn await_response(job_id: &str, waited: Waited) -> pb::AwaitProofResponse {
    let mut response = pb::AwaitProofResponse { job_id: job_id.into(), ..Default::default() };
    let completed = |response: &mut pb::AwaitProofResponse, timings: Timings| {
        response.set_status(AwaitStatus::Completed);
        response.queue_wait_ms = millis(timings.queue_wait);
        response.srs_load_ms = millis(timings.params_load);
        response.synthesis_ms = millis(timings.synthesis);
        response.gpu_compute_ms = millis(timings.proving);
        response.total_ms = millis(timings.total);
    };
    match waited {
        Waited::Timeout => response.set_status(AwaitStatus::Timeout),
        Waited::Done(Outcome::Completed { proof, timings }) => {
            completed(&mut response, timings);
            response.proof = proof;
        }
        Waited::Done(Outcome::Benchmarked { timings }) => {
            completed(&mut response, timings);
            response.error_message = NO_PROOF.into();
        }
        Waited::Done(Outcome::Failed(why)) => {
            response.set_status(AwaitStatus::Failed);
            response.error_message = why;
        }
        Waited::Done(Outcome::Cancelled) => response.set_status(AwaitStatus::Cancelled),
    }
    response
}

/// A parameter set named as cuzk names them (`porep-32g`, `wpost-2k`) or as Bellhop does
/// (`porep:32GiB`, `chain:1024`).
fn circuit_id(id: &str) -> Result<CircuitSpec, Status> {
    if let Some(spec) = curio::from_cuzk_circuit_id(id) {
        return Ok(CircuitSpec::Filecoin(spec));
    }
    id.parse().map_err(|e| {
        invalid(
            "circuit_id",
            format!("`{id}` is neither cuzk's name of a parameter set (e.g. porep-32g, wpost-2k) nor a circuit: {e}"),
        )
    })
}

fn circuit_name(circuit: &str) -> String {
    match circuit.parse::<CircuitSpec>() {
        Ok(CircuitSpec::Filecoin(spec)) => curio::cuzk_circuit_id(spec),
        _ => circuit.to_string(),
    }
}

fn status_response(status: EngineStatus) -> pb::GetStatusResponse {
    pb::GetStatusResponse {
        gpus: status
            .devices
            .into_iter()
            .map(|device| pb::GpuStatus {
                ordinal: device.ordinal,
                // cuzk's message has no field for a device that is down: its name says so.
                name: match device.down {
                    Some(why) => format!("{} [down: {why}]", device.name),
                    None => device.name,
                },
                vram_total_bytes: device.memory_total_bytes,
                vram_free_bytes: device.memory_free_bytes,
                current_job_id: device.current_job.unwrap_or_default(),
                current_proof_kind: device.current_kind.map(|k| k.name().to_string()).unwrap_or_default(),
                kept_host_bytes: device.kept_host_bytes,
            })
            .collect(),
        loaded_srs: status
            .params
            .into_iter()
            .map(|set| pb::SrsStatus {
                circuit_id: circuit_name(&set.circuit),
                tier: Tier::Hot.into(),
                size_bytes: set.bytes,
                ref_count: set.users as u32,
            })
            .collect(),
        queues: status
            .queues
            .into_iter()
            .filter(|q| q.kind != JobKind::Catalog || q.pending + q.in_progress > 0)
            .map(|q| pb::QueueStatus {
                proof_kind: q.kind.name().into(),
                pending: q.pending as u32,
                in_progress: q.in_progress as u32,
            })
            .collect(),
        total_proofs_completed: status.completed,
        total_proofs_failed: status.failed,
        uptime_seconds: status.uptime_seconds,
        // Its memory budget, reserved (page-locked kept assignments among it) and limit.
        pinned_memory_bytes: status.memory.reserved_bytes,
        pinned_memory_limit_bytes: status.memory.budget_bytes,
        running_jobs: status
            .running
            .into_iter()
            .map(|job| pb::JobProgress {
                job_id: job.job_id,
                proof_kind: job.kind.name().into(),
                partitions_done: job.partitions_done as u32,
                partitions_total: job.partitions as u32,
                elapsed_ms: (job.elapsed_seconds * 1000.0) as u64,
            })
            .collect(),
    }
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let job = job_request(request.into_inner()).await?;
        let submitted = self.engine(move |engine| engine.submit(job)).await?.map_err(refused)?;
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: submitted.job_id,
            queue_position: submitted.queue_position,
            assigned_gpu: submitted.assigned_device.map(|d| d.to_string()).unwrap_or_default(),
        }))
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let request = request.into_inner();
        let timeout = (request.timeout_ms > 0).then(|| Duration::from_millis(request.timeout_ms));
        let waited = self.engine.wait(&request.job_id, timeout).await.map_err(|e| Status::not_found(e.to_string()))?;
        Ok(Response::new(await_response(&request.job_id, waited)))
    }

    async fn prove(&self, request: Request<pb::ProveRequest>) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = request.into_inner().submit.ok_or_else(|| invalid("submit", "is missing"))?;
        let job = job_request(submit).await?;
        let submitted = self.engine(move |engine| engine.submit(job)).await?.map_err(refused)?;
        let waited = self.engine.wait_for(&submitted, None).await.map_err(|e| Status::not_found(e.to_string()))?;
        Ok(Response::new(pb::ProveResponse { result: Some(await_response(&submitted.job_id, waited)) }))
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let id = request.into_inner().job_id;
        let cancelled =
            self.engine(move |engine| engine.cancel(&id)).await?.map_err(|e| Status::not_found(e.to_string()))?;
        Ok(Response::new(pb::CancelProofResponse { was_running: cancelled.was_running }))
    }

    async fn get_status(&self, _: Request<pb::GetStatusRequest>) -> Result<Response<pb::GetStatusResponse>, Status> {
        Ok(Response::new(status_response(self.engine(Engine::status).await?)))
    }

    async fn get_metrics(&self, _: Request<pb::GetMetricsRequest>) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse { prometheus_text: self.engine(Engine::metrics).await? }))
    }

    async fn preload_srs(
        &self,
        request: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let circuit = circuit_id(&request.into_inner().circuit_id)?;
        let preloaded = self.engine(move |engine| engine.preload(&circuit)).await?.map_err(refused)?;
        Ok(Response::new(pb::PreloadSrsResponse {
            already_loaded: preloaded.already_loaded,
            load_time_ms: millis(preloaded.load_time),
        }))
    }

    async fn evict_srs(&self, request: Request<pb::EvictSrsRequest>) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let circuit = circuit_id(&request.into_inner().circuit_id)?;
        // Releasing bases on a device waits for the partition it is proving.
        let evicted = self
            .engine(move |engine| engine.evict(&circuit))
            .await?
            .map_err(|e| Status::failed_precondition(e.to_string()))?;
        Ok(Response::new(pb::EvictSrsResponse { was_loaded: evicted.was_loaded, freed_bytes: evicted.freed_bytes }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_benchmark_completes_with_no_proof_and_says_why() {
        let timings = Timings { total: Duration::from_millis(1500), ..Timings::default() };
        let response = await_response("job", Waited::Done(Outcome::Benchmarked { timings }));
        assert_eq!(response.status(), AwaitStatus::Completed);
        assert!(response.proof.is_empty());
        assert_eq!(response.total_ms, 1500);
        assert_eq!(response.error_message, NO_PROOF);
    }
}
