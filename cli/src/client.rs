//! `bellhop client`: a `cuzk.v1.ProvingEngine` client for operators and scripts, against
//! `bellhop serve` or cuzk's daemon.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

use anyhow::{bail, Context as _, Result};
use bellhop_filecoin::curio;
use bellhop_proto::v1::{
    self as pb, await_proof_response::Status as AwaitStatus, AwaitProofResponse, CancelProofRequest, EvictSrsRequest,
    GetMetricsRequest, GetStatusRequest, PreloadSrsRequest, ProveRequest,
};
use bellhop_server::client::{connect_with_token, submit_request};

use super::Context;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The daemon: host:port or unix:///path (default: `[daemon] listen`).
    #[arg(long)]
    addr: Option<String>,
    /// A file whose first line is the daemon's bearer token (default: `[daemon]
    /// token_file`, if set).
    #[arg(long)]
    token_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Queue the requests of a request file (`bellhop fil request`); prints their job ids.
    Submit(SubmitArgs),
    /// Wait for a job; prints its outcome and timings.
    Await {
        /// The job id.
        job: String,
        /// Give up after this many milliseconds (the job goes on); 0 waits until it ends.
        #[arg(long, default_value_t = 0)]
        timeout_ms: u64,
        /// Write the proof here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Prove the requests of a request file and wait for them (in parallel); the proofs
    /// are written one after another in the file's order (a WindowPoSt's partitions).
    Prove(SubmitArgs),
    /// Cancel a job.
    Cancel {
        /// The job id.
        job: String,
    },
    /// The daemon's devices, parameter sets, queues and counters.
    Status,
    /// The daemon's Prometheus metrics.
    Metrics,
    /// Load a parameter set (cuzk's name, e.g. porep-32g, or a circuit, e.g. porep:32GiB).
    Preload {
        /// The parameter set.
        circuit: String,
    },
    /// Drop a parameter set from the daemon's memory, unless a proof is using it.
    Evict {
        /// The parameter set.
        circuit: String,
    },
    /// A bounded load on a daemon on loopback: mixed requests, duplicates, cancels and
    /// malformed ones from CLIENTS connections; every outcome and proof checked.
    Bench(super::load::Args),
}

#[derive(Debug, clap::Args)]
struct SubmitArgs {
    /// A JSON list of requests, as `bellhop fil request` writes them.
    #[arg(long)]
    requests: PathBuf,
    /// The job id of the first request (the rest get `-1`, `-2`, ... after it); default: new ids.
    #[arg(long)]
    request_id: Option<String>,
    /// low, normal, high or critical (default: the kind's own).
    #[arg(long)]
    priority: Option<String>,
    /// For prove: write the proofs here.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn priority(name: Option<&str>) -> Result<pb::Priority> {
    Ok(match name.map(str::to_ascii_lowercase).as_deref() {
        None => pb::Priority::Unspecified,
        Some("low") => pb::Priority::Low,
        Some("normal") => pb::Priority::Normal,
        Some("high") => pb::Priority::High,
        Some("critical") => pb::Priority::Critical,
        Some(other) => bail!("unknown priority `{other}`: use low, normal, high or critical"),
    })
}

/// The requests of `args.requests`, as the daemon takes them.
fn requests(args: &SubmitArgs) -> Result<Vec<pb::SubmitProofRequest>> {
    let path = &args.requests;
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let requests: Vec<curio::Request> = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a list of requests (bellhop fil request writes one)", path.display()))?;
    let priority = priority(args.priority.as_deref())?;
    Ok(requests
        .iter()
        .enumerate()
        .map(|(i, request)| {
            let id = match (&args.request_id, i) {
                (None, _) => String::new(),
                (Some(id), 0) => id.clone(),
                (Some(id), i) => format!("{id}-{i}"),
            };
            submit_request(request, &id, priority)
        })
        .collect())
}

fn status_name(status: i32) -> &'static str {
    AwaitStatus::try_from(status).map_or("UNKNOWN", |s| s.as_str_name())
}

fn report(result: &AwaitProofResponse) {
    print!("{}: {}", result.job_id, status_name(result.status));
    if result.status == AwaitStatus::Completed as i32 {
        print!(
            ", {} bytes; queue {} ms, parameters {} ms, synthesis {} ms, device {} ms, total {} ms",
            result.proof.len(),
            result.queue_wait_ms,
            result.srs_load_ms,
            result.synthesis_ms,
            result.gpu_compute_ms,
            result.total_ms
        );
    }
    if !result.error_message.is_empty() {
        print!(": {}", result.error_message);
    }
    println!();
}

pub(super) fn run(context: &Context, args: Args) -> Result<ExitCode> {
    let addr = args.addr.unwrap_or_else(|| context.config.daemon.listen.clone());
    let token = match args.token_file.as_deref().or(context.config.daemon.token_file.as_deref()) {
        Some(path) => Some(bellhop_server::read_token(path)?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(command(&addr, token.as_deref(), &context.config.params.dir, args.command))
}

async fn command(addr: &str, token: Option<&str>, params: &Path, command: Command) -> Result<ExitCode> {
    if let Command::Bench(bench) = &command {
        return super::load::run(addr, token, params, bench).await;
    }
    let client = &mut connect_with_token(addr, token).await?;
    match command {
        Command::Bench(_) => unreachable!("run above"),
        Command::Submit(args) => {
            for request in requests(&args)? {
                let submitted = client.submit_proof(request).await?.into_inner();
                println!(
                    "{} (queue position {}{})",
                    submitted.job_id,
                    submitted.queue_position,
                    if submitted.assigned_gpu.is_empty() {
                        String::new()
                    } else {
                        format!(", device {}", submitted.assigned_gpu)
                    }
                );
            }
        }
        Command::Await { job, timeout_ms, out } => {
            let result = client.await_proof(pb::AwaitProofRequest { job_id: job, timeout_ms }).await?.into_inner();
            report(&result);
            return finish(&[result], out.as_ref());
        }
        Command::Prove(args) => {
            let start = Instant::now();
            let mut tasks = tokio::task::JoinSet::new();
            for (index, request) in requests(&args)?.into_iter().enumerate() {
                let mut client = client.clone();
                tasks.spawn(async move {
                    let response = client.prove(ProveRequest { submit: Some(request) }).await;
                    (index, response)
                });
            }
            let mut results = Vec::new();
            while let Some(joined) = tasks.join_next().await {
                let (index, response) = joined?;
                let result = response?.into_inner().result.context("the daemon answered without a result")?;
                report(&result);
                results.push((index, result));
            }
            results.sort_by_key(|(index, _)| *index);
            eprintln!("{} request(s) in {:.3} s", results.len(), start.elapsed().as_secs_f64());
            let results: Vec<AwaitProofResponse> = results.into_iter().map(|(_, r)| r).collect();
            return finish(&results, args.out.as_ref());
        }
        Command::Cancel { job } => {
            let cancelled = client.cancel_proof(CancelProofRequest { job_id: job.clone() }).await?.into_inner();
            println!("{job}: cancelled ({})", if cancelled.was_running { "it was running" } else { "it was queued" });
        }
        Command::Status => print_status(&client.get_status(GetStatusRequest {}).await?.into_inner()),
        Command::Metrics => print!("{}", client.get_metrics(GetMetricsRequest {}).await?.into_inner().prometheus_text),
        Command::Preload { circuit } => {
            let loaded = client.preload_srs(PreloadSrsRequest { circuit_id: circuit.clone() }).await?.into_inner();
            if loaded.already_loaded {
                println!("{circuit}: already loaded");
            } else {
                println!("{circuit}: loaded in {} ms", loaded.load_time_ms);
            }
        }
        Command::Evict { circuit } => {
            let evicted = client.evict_srs(EvictSrsRequest { circuit_id: circuit.clone() }).await?.into_inner();
            if evicted.was_loaded {
                println!("{circuit}: evicted, {} bytes freed", evicted.freed_bytes);
            } else {
                println!("{circuit}: was not loaded");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the proofs of `results` (in order) to `out`; fails unless every one completed.
fn finish(results: &[AwaitProofResponse], out: Option<&PathBuf>) -> Result<ExitCode> {
    let completed = results.iter().all(|r| r.status == AwaitStatus::Completed as i32);
    if let Some(out) = out {
        if !completed {
            eprintln!("not every request completed: {} not written", out.display());
        } else if results.iter().any(|r| r.proof.is_empty()) {
            eprintln!("a benchmark-only job returns no proof: {} not written", out.display());
        } else {
            let proofs: Vec<u8> = results.iter().flat_map(|r| r.proof.iter().copied()).collect();
            std::fs::write(out, proofs).with_context(|| format!("writing {}", out.display()))?;
        }
    }
    Ok(if completed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print_status(status: &pb::GetStatusResponse) {
    println!(
        "uptime {} s; proofs completed {}, failed {}",
        status.uptime_seconds, status.total_proofs_completed, status.total_proofs_failed
    );
    for gpu in &status.gpus {
        let job = if gpu.current_job_id.is_empty() {
            "idle".to_string()
        } else {
            format!("proving {} ({})", gpu.current_job_id, gpu.current_proof_kind)
        };
        println!(
            "device {}: {}, {} MiB, {} MiB free; {job}; {} MiB of host memory kept",
            gpu.ordinal,
            gpu.name,
            gpu.vram_total_bytes >> 20,
            gpu.vram_free_bytes >> 20,
            gpu.kept_host_bytes >> 20
        );
    }
    println!(
        "memory budget: {} MiB reserved of {} MiB",
        status.pinned_memory_bytes >> 20,
        status.pinned_memory_limit_bytes >> 20
    );
    for set in &status.loaded_srs {
        println!("parameters {}: {} MiB, {} in use", set.circuit_id, set.size_bytes >> 20, set.ref_count);
    }
    for queue in &status.queues {
        println!("queue {}: {} pending, {} in progress", queue.proof_kind, queue.pending, queue.in_progress);
    }
    for job in &status.running_jobs {
        println!(
            "job {} ({}): {} of {} partitions proved, {:.1} s",
            job.job_id,
            job.proof_kind,
            job.partitions_done,
            job.partitions_total,
            job.elapsed_ms as f64 / 1000.0
        );
    }
}
