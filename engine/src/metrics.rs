//! The engine's Prometheus metrics: jobs by kind and outcome, where their time went, and
//! parameter sets loaded and evicted; gauges are set from the engine's state at each scrape.

use std::time::Duration;

use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};

use crate::{
    budget::MemoryStatus,
    job::{JobKind, Outcome, Timings},
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindOutcome {
    kind: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CircuitLabel {
    circuit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeviceLabel {
    device: String,
}

type Seconds = Family<KindLabel, Histogram, fn() -> Histogram>;

fn seconds() -> Histogram {
    // 10 ms to about 45 minutes.
    Histogram::new(exponential_buckets(0.01, 2.0, 19))
}

/// Every metric the engine exports.
pub(crate) struct Metrics {
    registry: Registry,
    jobs: Family<KindOutcome, Counter>,
    queue_wait: Seconds,
    synthesis: Seconds,
    proving: Seconds,
    total: Seconds,
    param_loads: Family<CircuitLabel, Counter>,
    param_evictions: Family<CircuitLabel, Counter>,
    pending: Family<KindLabel, Gauge>,
    in_progress: Family<KindLabel, Gauge>,
    resident_bytes: Family<CircuitLabel, Gauge>,
    device_busy: Family<DeviceLabel, Gauge>,
    device_up: Family<DeviceLabel, Gauge>,
    memory: [Gauge; 5],
    uptime: Gauge,
}

/// What the gauges show at one scrape.
pub(crate) struct Snapshot {
    pub(crate) queues: Vec<(JobKind, usize, usize)>,
    pub(crate) resident: Vec<(String, u64)>,
    pub(crate) devices: Vec<(u32, bool, bool)>,
    pub(crate) memory: MemoryStatus,
    pub(crate) uptime: Duration,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("bellhop");
        let jobs = Family::<KindOutcome, Counter>::default();
        let [queue_wait, synthesis, proving, total] =
            std::array::from_fn(|_| Seconds::new_with_constructor(seconds as fn() -> Histogram));
        let [param_loads, param_evictions] = std::array::from_fn(|_| Family::<CircuitLabel, Counter>::default());
        let [pending, in_progress] = std::array::from_fn(|_| Family::<KindLabel, Gauge>::default());
        let resident_bytes = Family::<CircuitLabel, Gauge>::default();
        let [device_busy, device_up] = std::array::from_fn(|_| Family::<DeviceLabel, Gauge>::default());
        let memory: [Gauge; 5] = Default::default();
        let uptime = Gauge::default();
        registry.register("jobs", "Jobs ended, by kind and outcome", jobs.clone());
        registry.register("queue_wait_seconds", "Submission to first synthesis, per job", queue_wait.clone());
        registry.register("synthesis_seconds", "Synthesis time per job, summed over partitions", synthesis.clone());
        registry.register("proving_seconds", "Device time per job (with verification)", proving.clone());
        registry.register("job_seconds", "Submission to completion, per job", total.clone());
        registry.register("params_loads", "Parameter files read into memory", param_loads.clone());
        registry.register("params_evictions", "Parameter sets dropped from memory", param_evictions.clone());
        registry.register("queue_pending_partitions", "Partitions not started, by kind", pending.clone());
        registry.register("jobs_in_progress", "Jobs started and not ended, by kind", in_progress.clone());
        registry.register("params_resident_bytes", "Memory of each resident parameter set", resident_bytes.clone());
        registry.register("device_busy", "1 while the device proves a partition", device_busy.clone());
        registry.register("device_up", "1 while the device takes work, 0 once it failed", device_up.clone());
        let names = [
            ("memory_budget_bytes", "The [memory] budget"),
            ("memory_reserved_bytes", "Reserved by parameter sets and partitions in flight"),
            ("memory_peak_reserved_bytes", "The most ever reserved"),
            ("process_peak_rss_bytes", "The process's peak resident memory"),
            ("memory_waiting", "Partitions and parameter loads waiting for room"),
        ];
        for ((name, help), gauge) in names.into_iter().zip(&memory) {
            registry.register(name, help, gauge.clone());
        }
        registry.register("uptime_seconds", "Seconds since the engine started", uptime.clone());
        Self {
            registry,
            jobs,
            queue_wait,
            synthesis,
            proving,
            total,
            param_loads,
            param_evictions,
            pending,
            in_progress,
            resident_bytes,
            device_busy,
            device_up,
            memory,
            uptime,
        }
    }

    /// Counts a job that ended; a completed one's timings go into the histograms.
    pub(crate) fn job_ended(&self, kind: JobKind, outcome: &Outcome) {
        self.jobs.get_or_create(&KindOutcome { kind: kind.name(), outcome: outcome.name() }).inc();
        if let Outcome::Completed { timings, .. } | Outcome::Benchmarked { timings } = outcome {
            let Timings { queue_wait, synthesis, proving, total, .. } = *timings;
            let label = KindLabel { kind: kind.name() };
            self.queue_wait.get_or_create(&label).observe(queue_wait.as_secs_f64());
            self.synthesis.get_or_create(&label).observe(synthesis.as_secs_f64());
            self.proving.get_or_create(&label).observe(proving.as_secs_f64());
            self.total.get_or_create(&label).observe(total.as_secs_f64());
        }
    }

    pub(crate) fn params_loaded(&self, circuit: &str) {
        self.param_loads.get_or_create(&CircuitLabel { circuit: circuit.into() }).inc();
    }

    pub(crate) fn params_evicted(&self, circuit: &str) {
        self.param_evictions.get_or_create(&CircuitLabel { circuit: circuit.into() }).inc();
    }

    /// The Prometheus text exposition, with the gauges set from `snapshot`.
    pub(crate) fn text(&self, snapshot: Snapshot) -> String {
        for (kind, pending, in_progress) in snapshot.queues {
            let label = KindLabel { kind: kind.name() };
            self.pending.get_or_create(&label).set(pending as i64);
            self.in_progress.get_or_create(&label).set(in_progress as i64);
        }
        self.resident_bytes.clear();
        for (circuit, bytes) in snapshot.resident {
            self.resident_bytes.get_or_create(&CircuitLabel { circuit }).set(bytes as i64);
        }
        for (device, busy, up) in snapshot.devices {
            let label = DeviceLabel { device: device.to_string() };
            self.device_busy.get_or_create(&label).set(i64::from(busy));
            self.device_up.get_or_create(&label).set(i64::from(up));
        }
        let m = snapshot.memory;
        for (gauge, value) in self.memory.iter().zip([
            m.budget_bytes,
            m.reserved_bytes,
            m.peak_reserved_bytes,
            m.peak_rss_bytes,
            m.waiting as u64,
        ]) {
            gauge.set(value as i64);
        }
        self.uptime.set(snapshot.uptime.as_secs() as i64);
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String does not fail");
        text
    }
}
