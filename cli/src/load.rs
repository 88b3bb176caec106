//! `bellhop client bench`: a bounded load generator for a proving daemon on loopback.
//! CLIENTS connections send COUNT operations drawn from a seed over the requests given:
//! proofs of mixed kinds and priorities, duplicates of earlier ids, submissions cancelled
//! at once, and malformed requests. It stops after COUNT operations or SECONDS, checks
//! every outcome (duplicates are the same job, malformed ones are refused, every proof
//! verifies against its parameters' verifying key) and reports throughput, latency per
//! kind, outcomes and the daemon's memory. Then, optionally, a burst of submissions past
//! the daemon's queue bounds, every one accepted or refused and every accepted one proved.
//! Throughout, a client of its own asks GetStatus every 100 ms and times the answers.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    net::ToSocketAddrs,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellhop_filecoin::curio;
use bellhop_proto::v1::{
    self as pb, await_proof_response::Status as AwaitStatus, AwaitProofRequest, CancelProofRequest, ProveRequest,
};
use bellhop_server::client::{connect_with_token, submit_request};
use bellperson::groth16::{prepare_verifying_key, verify_proof, PreparedVerifyingKey, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};
use rand::{Rng as _, SeedableRng as _};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Request files (`bellhop fil request`), each a JSON list; every request is a kind of load.
    #[arg(long = "requests", required = true)]
    requests: Vec<PathBuf>,
    /// Concurrent clients, each with its own connection.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Operations in all.
    #[arg(long, default_value_t = 200)]
    count: usize,
    /// The share of operations that repeat an earlier request id with its payload.
    #[arg(long, default_value_t = 0.1)]
    duplicates: f64,
    /// The share that submit and cancel at once.
    #[arg(long, default_value_t = 0.05)]
    cancels: f64,
    /// The share that send a malformed request.
    #[arg(long, default_value_t = 0.05)]
    malformed: f64,
    /// Draws the operations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop sending after this many seconds.
    #[arg(long, default_value_t = 1800)]
    seconds: u64,
    /// Where the verifying keys (`.vk`) are (default: `[params] dir`).
    #[arg(long)]
    params: Option<PathBuf>,
    /// The daemon's status address (`127.0.0.1:9821`), for its memory.
    #[arg(long)]
    status: Option<String>,
    /// Write the report as JSON here too.
    #[arg(long)]
    json: Option<PathBuf>,
    /// After the operations, this many submissions (SubmitProof) from every client at once,
    /// meant to pass the daemon's `[daemon] max_queued`: each must be accepted or refused
    /// RESOURCE_EXHAUSTED, and each accepted one end, completed, with a proof that verifies.
    #[arg(long, default_value_t = 0)]
    burst: usize,
}

#[derive(Clone, Debug)]
enum Op {
    Prove { request: usize, id: String, priority: pb::Priority },
    Duplicate { request: usize, id: String },
    Cancel { request: usize, id: String },
    Malformed { request: usize, how: usize },
}

impl Op {
    fn name(&self) -> &'static str {
        match self {
            Op::Prove { .. } => "prove",
            Op::Duplicate { .. } => "duplicate",
            Op::Cancel { .. } => "cancel",
            Op::Malformed { .. } => "malformed",
        }
    }

    fn request(&self) -> usize {
        match self {
            Op::Prove { request, .. }
            | Op::Duplicate { request, .. }
            | Op::Cancel { request, .. }
            | Op::Malformed { request, .. } => *request,
        }
    }
}

/// What one operation came to.
#[derive(Clone, Debug)]
struct Done {
    op: Op,
    /// `completed`, `failed`, `cancelled`, or the gRPC code of a refusal.
    outcome: String,
    latency: Duration,
    proof: Vec<u8>,
    message: String,
}

/// Fails unless `addr` is on this machine: loopback or a unix socket.
pub(super) fn loopback_only(addr: &str) -> Result<()> {
    if addr.starts_with("unix://") {
        return Ok(());
    }
    let host_port = addr.split("://").last().unwrap_or(addr).trim_end_matches('/');
    let resolved: Vec<_> = host_port.to_socket_addrs().with_context(|| format!("resolving {addr}"))?.collect();
    if resolved.is_empty() || !resolved.iter().all(|a| a.ip().is_loopback()) {
        bail!("the load generator sends to loopback only (127.0.0.1, ::1 or unix:///path); {addr} is not");
    }
    Ok(())
}

/// The operations, drawn from `args.seed`.
fn plan(args: &Args, requests: usize) -> Vec<Op> {
    let rng = &mut ChaCha8Rng::seed_from_u64(args.seed);
    let run = format!("{:08x}", rng.gen::<u32>());
    let mut proved: Vec<(usize, String)> = Vec::new();
    (0..args.count)
        .map(|i| {
            let request = rng.gen_range(0..requests);
            let id = format!("bench-{run}-{i}");
            let roll: f64 = rng.gen();
            if roll < args.malformed {
                Op::Malformed { request, how: rng.gen_range(0..3) }
            } else if roll < args.malformed + args.cancels {
                Op::Cancel { request, id }
            } else if roll < args.malformed + args.cancels + args.duplicates && !proved.is_empty() {
                let (request, id) = proved[rng.gen_range(0..proved.len())].clone();
                Op::Duplicate { request, id }
            } else {
                let priority = match rng.gen_range(0..10) {
                    0 => pb::Priority::Low,
                    1 => pb::Priority::Normal,
                    2 => pb::Priority::High,
                    3 => pb::Priority::Critical,
                    _ => pb::Priority::Unspecified,
                };
                proved.push((request, id.clone()));
                Op::Prove { request, id, priority }
            }
        })
        .collect()
}

fn malformed(mut request: pb::SubmitProofRequest, how: usize) -> pb::SubmitProofRequest {
    match how {
        0 => request.proof_kind = 0,
        1 => request.registered_proof = 99,
        _ => {
            request.vanilla_proofs = vec![b"not bincode".to_vec()];
            request.vanilla_proof = b"{\"SectorNum\":".to_vec();
        }
    }
    request
}

async fn run_op(client: &mut bellhop_server::client::Client, requests: &[curio::Request], op: Op) -> Done {
    let start = Instant::now();
    let request = &requests[op.request()];
    let result: Result<pb::AwaitProofResponse, tonic::Status> = async {
        Ok(match &op {
            Op::Prove { id, priority, .. } => {
                let submit = submit_request(request, id, *priority);
                client.prove(ProveRequest { submit: Some(submit) }).await?.into_inner().result.unwrap_or_default()
            }
            Op::Duplicate { id, .. } => {
                let submit = submit_request(request, id, pb::Priority::Unspecified);
                client.prove(ProveRequest { submit: Some(submit) }).await?.into_inner().result.unwrap_or_default()
            }
            Op::Cancel { id, .. } => {
                client.submit_proof(submit_request(request, id, pb::Priority::Low)).await?;
                client.cancel_proof(CancelProofRequest { job_id: id.clone() }).await?;
                client.await_proof(AwaitProofRequest { job_id: id.clone(), timeout_ms: 0 }).await?.into_inner()
            }
            Op::Malformed { how, .. } => {
                let submit = malformed(submit_request(request, "", pb::Priority::Unspecified), *how);
                client.submit_proof(submit).await?;
                pb::AwaitProofResponse::default()
            }
        })
    }
    .await;
    let latency = start.elapsed();
    match result {
        Ok(response) => Done {
            outcome: AwaitStatus::try_from(response.status).map_or("unknown", |s| s.as_str_name()).to_lowercase(),
            proof: response.proof,
            message: response.error_message,
            op,
            latency,
        },
        Err(status) => Done {
            outcome: format!("{:?}", status.code()).to_lowercase(),
            message: status.message().to_string(),
            proof: Vec::new(),
            op,
            latency,
        },
    }
}

/// What verifies a request's proof: the verifying key and each partition's public inputs.
struct Check {
    pvk: PreparedVerifyingKey<Bls12>,
    inputs: Vec<Vec<Scalar>>,
}

fn check_for(params: &Path, request: &curio::Request) -> Result<Check> {
    let decoded = request.decode().map_err(|e| anyhow::anyhow!("{e}"))?;
    let spec = CircuitSpec::Filecoin(decoded.spec);
    let vk_path = params.join(spec.params_file_name()?).with_extension("vk");
    let bytes = std::fs::read(&vk_path).with_context(|| format!("reading the verifying key {}", vk_path.display()))?;
    let vk = VerifyingKey::<Bls12>::read(&bytes[..]).with_context(|| format!("{} is damaged", vk_path.display()))?;
    let inputs = (0..decoded.partitions)
        .map(|k| Ok(spec.instance(k as u64, &decoded.input)?.public_inputs))
        .collect::<Result<_>>()?;
    Ok(Check { pvk: prepare_verifying_key(&vk), inputs })
}

fn verifies(check: &Check, proof: &[u8]) -> bool {
    proof.len() == 192 * check.inputs.len()
        && proof.chunks(192).zip(&check.inputs).all(|(bytes, inputs)| {
            Proof::<Bls12>::read(bytes).is_ok_and(|p| verify_proof(&check.pvk, &p, inputs).unwrap_or(false))
        })
}

/// The daemon's `/status` memory section, read over HTTP on loopback.
async fn daemon_memory(addr: &str) -> Result<serde_json::Value> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    loopback_only(addr)?;
    let host_port = addr.trim_start_matches("http://").trim_end_matches('/').trim_end_matches("/status");
    let mut stream = tokio::net::TcpStream::connect(host_port).await?;
    stream.write_all(format!("GET /status HTTP/1.0\r\nHost: {host_port}\r\n\r\n").as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b).context("no HTTP body")?;
    let status: serde_json::Value = serde_json::from_str(body)?;
    Ok(status["memory"].clone())
}

#[derive(Serialize)]
struct Report {
    clients: usize,
    operations: usize,
    not_run: usize,
    seconds: f64,
    completed_jobs: usize,
    proofs_per_minute: f64,
    outcomes: BTreeMap<String, BTreeMap<String, usize>>,
    latency: BTreeMap<String, Latency>,
    latency_by_priority: BTreeMap<String, Latency>,
    unverified: usize,
    problems: Vec<String>,
    daemon_memory: Option<serde_json::Value>,
    /// GetStatus, asked every 100 ms throughout.
    status_latency: Option<Latency>,
    burst: Option<Burst>,
}

/// The burst past the queue's bounds.
#[derive(Serialize, Default)]
struct Burst {
    submitted: usize,
    accepted: usize,
    refused_resource_exhausted: usize,
    completed: usize,
    seconds: f64,
}

/// Sends `count` submissions of `requests` (in turn) from `clients` connections at once;
/// then waits for every accepted one. Adds what is wrong to `problems`.
async fn burst(
    addr: &str,
    token: Option<&str>,
    requests: &Arc<Vec<curio::Request>>,
    checks: &Arc<Vec<Check>>,
    count: usize,
    clients: usize,
    problems: &Arc<Mutex<Vec<String>>>,
) -> Result<Burst> {
    let start = Instant::now();
    let run = format!("{:08x}", rand::random::<u32>());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tally = Arc::new(Mutex::new(Burst { submitted: count, ..Burst::default() }));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients.max(1) {
        let mut client = connect_with_token(addr, token).await?;
        let (next, tally, problems) = (Arc::clone(&next), Arc::clone(&tally), Arc::clone(problems));
        let (requests, checks, run) = (Arc::clone(requests), Arc::clone(checks), run.clone());
        tasks.spawn(async move {
            let mut accepted = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let which = i % requests.len();
                let submit = submit_request(&requests[which], &format!("burst-{run}-{i}"), pb::Priority::Unspecified);
                match client.submit_proof(submit).await {
                    Ok(response) => accepted.push((which, response.into_inner().job_id)),
                    Err(status) if status.code() == tonic::Code::ResourceExhausted => {
                        tally.lock().expect("no panics hold the tally").refused_resource_exhausted += 1;
                    }
                    Err(status) => problems.lock().expect("no panics hold the problems").push(format!(
                        "burst submission {i}: {:?} ({})",
                        status.code(),
                        status.message()
                    )),
                }
            }
            tally.lock().expect("no panics hold the tally").accepted += accepted.len();
            for (which, job_id) in accepted {
                let problem = match client
                    .await_proof(AwaitProofRequest { job_id: job_id.clone(), timeout_ms: 0 })
                    .await
                {
                    Ok(response) => {
                        let response = response.into_inner();
                        if response.status != AwaitStatus::Completed as i32 {
                            Some(format!("burst job {job_id}: ended {} ({})", response.status, response.error_message))
                        } else if !verifies(&checks[which], &response.proof) {
                            Some(format!("burst job {job_id}: the proof does not verify"))
                        } else {
                            tally.lock().expect("no panics hold the tally").completed += 1;
                            None
                        }
                    }
                    Err(status) => Some(format!("burst job {job_id}: {:?} ({})", status.code(), status.message())),
                };
                problems.lock().expect("no panics hold the problems").extend(problem);
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined?;
    }
    let mut tally = std::mem::take(&mut *tally.lock().expect("no panics hold the tally"));
    tally.seconds = start.elapsed().as_secs_f64();
    Ok(tally)
}

/// Asks GetStatus every 100 ms until `stop` turns true; the latencies, in seconds.
async fn sample_status(
    mut client: bellhop_server::client::Client,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Vec<f64> {
    let mut latencies = Vec::new();
    while !*stop.borrow() {
        let asked = Instant::now();
        if client.get_status(pb::GetStatusRequest {}).await.is_ok() {
            latencies.push(asked.elapsed().as_secs_f64());
        } else {
            latencies.push(f64::INFINITY);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    latencies
}

#[derive(Serialize)]
struct Latency {
    count: usize,
    p50_s: f64,
    p99_s: f64,
    max_s: f64,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub(super) async fn run(addr: &str, token: Option<&str>, params: &Path, args: &Args) -> Result<ExitCode> {
    loopback_only(addr)?;
    let mut requests: Vec<curio::Request> = Vec::new();
    for path in &args.requests {
        let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let list: Vec<curio::Request> =
            serde_json::from_slice(&text).with_context(|| format!("{} is not a list of requests", path.display()))?;
        requests.extend(list);
    }
    anyhow::ensure!(!requests.is_empty(), "the request files hold no requests");
    let params = args.params.clone().unwrap_or_else(|| params.to_path_buf());
    eprintln!("preparing the checks of {} request(s)", requests.len());
    let (checks, requests) = tokio::task::spawn_blocking(move || {
        let checks = requests.iter().map(|r| check_for(&params, r)).collect::<Result<Vec<Check>>>();
        checks.map(|checks| (checks, requests))
    })
    .await??;
    let ops = plan(args, requests.len());
    let queue = Arc::new(Mutex::new(ops.iter().cloned().collect::<VecDeque<Op>>()));
    let done = Arc::new(Mutex::new(Vec::<Done>::new()));
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let requests = Arc::new(requests);
    let checks = Arc::new(checks);
    let (stop_sampling, sampling) = tokio::sync::watch::channel(false);
    let sampler = tokio::spawn(sample_status(connect_with_token(addr, token).await?, sampling));
    let start = Instant::now();
    let burst_problems = Arc::new(Mutex::new(Vec::new()));
    let mut burst_tally = None;
    // The operations' time, without the burst.
    let seconds;
    let memory = {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..args.clients.max(1) {
            let (queue, done, requests) = (Arc::clone(&queue), Arc::clone(&done), Arc::clone(&requests));
            let mut client = connect_with_token(addr, token).await?;
            tasks.spawn(async move {
                loop {
                    let Some(op) = queue.lock().expect("no panics hold the queue").pop_front() else { break };
                    let result = tokio::time::timeout_at(deadline.into(), run_op(&mut client, &requests, op)).await;
                    match result {
                        Ok(result) => done.lock().expect("no panics hold the results").push(result),
                        Err(_) => break,
                    }
                }
            });
        }
        while let Some(joined) = tasks.join_next().await {
            joined?;
        }
        seconds = start.elapsed().as_secs_f64();
        if args.burst > 0 {
            eprintln!("a burst of {} submissions from {} clients", args.burst, args.clients.max(1));
            let clients = args.clients.max(1);
            burst_tally = Some(burst(addr, token, &requests, &checks, args.burst, clients, &burst_problems).await?);
        }
        match &args.status {
            Some(status) => Some(daemon_memory(status).await?),
            None => None,
        }
    };
    let _ = stop_sampling.send(true);
    let status_samples = sampler.await?;
    let done = Arc::try_unwrap(done).map_err(|_| anyhow::anyhow!("a client is still running"))?.into_inner()?;

    let mut problems = std::mem::take(&mut *burst_problems.lock().expect("no panics hold the problems"));
    let slow_status = status_samples.iter().filter(|&&s| s > 0.2).count();
    if slow_status > 0 {
        problems
            .push(format!("GetStatus took over 200 ms (or failed) {slow_status} of {} times", status_samples.len()));
    }
    let mut outcomes: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut latencies: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut by_priority: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut by_id: HashMap<String, Vec<u8>> = HashMap::new();
    let mut unverified = 0;
    let mut completed_jobs = 0;
    let mut partitions = 0;
    for d in &done {
        *outcomes.entry(d.op.name().into()).or_default().entry(d.outcome.clone()).or_default() += 1;
        let kind = format!("{:?}", requests[d.op.request()].proof_kind);
        match &d.op {
            Op::Prove { id, .. } | Op::Duplicate { id, .. } => {
                if d.outcome != "completed" {
                    problems.push(format!("{id}: {} ({})", d.outcome, d.message));
                    continue;
                }
                latencies.entry(kind).or_default().push(d.latency.as_secs_f64());
                if let Op::Prove { priority, .. } = &d.op {
                    by_priority.entry(priority.as_str_name().to_lowercase()).or_default().push(d.latency.as_secs_f64());
                }
                if !verifies(&checks[d.op.request()], &d.proof) {
                    unverified += 1;
                    problems.push(format!("{id}: the proof does not verify"));
                }
                match by_id.get(id) {
                    Some(first) if first != &d.proof => problems.push(format!("{id}: two proofs for one job")),
                    Some(_) => {}
                    None => {
                        by_id.insert(id.clone(), d.proof.clone());
                        completed_jobs += 1;
                        partitions += d.proof.len() / 192;
                    }
                }
            }
            Op::Cancel { id, .. } => {
                if d.outcome != "cancelled" && d.outcome != "completed" {
                    problems.push(format!("{id}: cancelled, but {} ({})", d.outcome, d.message));
                }
            }
            Op::Malformed { .. } => {
                if d.outcome != "invalidargument" {
                    problems.push(format!("a malformed request was answered {} ({})", d.outcome, d.message));
                }
            }
        }
    }
    let latency = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let (p50_s, p99_s, max_s) = (percentile(&v, 0.5), percentile(&v, 0.99), v[v.len() - 1]);
        Latency { count: v.len(), p50_s, p99_s, max_s }
    };
    let summarize = |samples: BTreeMap<String, Vec<f64>>| -> BTreeMap<String, Latency> {
        samples.into_iter().map(|(key, v)| (key, latency(v))).collect()
    };
    let report = Report {
        clients: args.clients,
        operations: done.len(),
        not_run: ops.len() - done.len(),
        seconds,
        completed_jobs,
        proofs_per_minute: 60.0 * partitions as f64 / seconds,
        outcomes,
        latency: summarize(latencies),
        latency_by_priority: summarize(by_priority),
        unverified,
        problems,
        daemon_memory: memory,
        status_latency: (!status_samples.is_empty()).then(|| latency(status_samples)),
        burst: burst_tally,
    };
    print_report(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(if report.problems.is_empty() && report.not_run == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print_report(report: &Report) {
    println!(
        "{} operations by {} clients in {:.1} s ({} not run); {} jobs completed, {:.1} proofs (partitions) per minute",
        report.operations,
        report.clients,
        report.seconds,
        report.not_run,
        report.completed_jobs,
        report.proofs_per_minute
    );
    for (op, outcomes) in &report.outcomes {
        let list: Vec<String> = outcomes.iter().map(|(o, n)| format!("{o} {n}")).collect();
        println!("  {op:<10} {}", list.join(", "));
    }
    for (key, l) in report.latency.iter().chain(&report.latency_by_priority) {
        println!(
            "  latency {key:<22} n {:>4}  p50 {:>7.3} s  p99 {:>7.3} s  max {:>7.3} s",
            l.count, l.p50_s, l.p99_s, l.max_s
        );
    }
    println!("  every returned proof verified: {}", if report.unverified == 0 { "yes" } else { "NO" });
    if let Some(l) = &report.status_latency {
        println!(
            "  GetStatus every 100 ms: n {}  p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
            l.count,
            l.p50_s * 1e3,
            l.p99_s * 1e3,
            l.max_s * 1e3
        );
    }
    if let Some(b) = &report.burst {
        println!(
            "  burst: {} submitted, {} accepted ({} completed and verified), {} refused RESOURCE_EXHAUSTED, in {:.1} s",
            b.submitted, b.accepted, b.completed, b.refused_resource_exhausted, b.seconds
        );
    }
    if let Some(memory) = &report.daemon_memory {
        println!("  daemon memory: {memory}");
    }
    for problem in &report.problems {
        println!("  PROBLEM: {problem}");
    }
}

#[cfg(test)]
mod tests {
    use super::loopback_only;

    #[test]
    fn only_loopback_addresses_and_unix_sockets_are_accepted() {
        for addr in ["127.0.0.1:9820", "http://127.0.0.1:9820/", "[::1]:9820", "unix:///run/bellhop.sock"] {
            loopback_only(addr).unwrap();
        }
        for addr in ["10.1.2.3:9820", "http://192.0.2.1:9820", "0.0.0.0:9820"] {
            let refused = loopback_only(addr).unwrap_err().to_string();
            assert!(refused.contains("loopback only"), "{refused}");
        }
    }
}
