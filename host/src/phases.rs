//! Per-proof phase timings from tracing spans.
//!
//! The prover wraps each proof in a `proof` span (field `index`) and each batch in a
//! `batch` span (fields `first`, `count`); every phase inside is a span named after the
//! phase. [`PhaseLayer`] is a `tracing_subscriber` layer that measures those spans and
//! events carrying a plugin's own sub-phase timings (`subphase`, `nanos`), and
//! [`PhaseTable`] turns the records into a per-proof table, as text or JSON.

use std::{
    collections::BTreeMap,
    fmt,
    sync::{Arc, Mutex},
    time::Instant,
};

use serde::Serialize;
use tracing::{
    field::{Field, Visit},
    span, Event, Subscriber,
};
use tracing_subscriber::{layer::Context, registry::LookupSpan, Layer};

use crate::memory;

/// The phases of one proof, in the order the table shows them.
/// `prove_batch` is the whole proof of a batch in one fused backend call (ABI 1.2), and
/// `msms` h and the five MSMs of a proof in one call (`proof_msms`), its parts as
/// sub-phases (`msms.h`, `msms.h.upload_ntt` ... `msms.msm_b_g2`).
pub const PHASES: [&str; 5] = ["synthesis", "prove_batch", "msms", "verify", "dealloc"];

/// The phases of the backend's share of a proof, by whichever route they ran (`gpu` in
/// `bellhop ab`).
pub const GPU_PHASES: [&str; 2] = ["prove_batch", "msms"];

/// The instant phase start times are measured from.
fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Emits a plugin-reported sub-phase timing as an event the layer records.
pub fn record_subphase(phase: &str, name: &str, nanos: u64) {
    tracing::debug!(subphase = format!("{phase}.{name}").as_str(), nanos, "plugin sub-phase");
}

/// One measured phase of a range of proofs (a batch's synthesis covers all its proofs).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PhaseRecord {
    /// The first proof it belongs to.
    pub first: usize,
    /// How many consecutive proofs it belongs to.
    pub count: usize,
    /// The phase (`msm_l`) or plugin sub-phase (`h.to_coset`).
    pub phase: String,
    /// Seconds.
    pub seconds: f64,
    /// When the phase began, in seconds since the first span this process measured.
    pub start: f64,
    /// Process page faults during the phase (0 for plugin sub-phases).
    pub faults: u64,
    /// Host allocations during the phase, when counted (see [`crate::memory`]).
    pub allocations: Option<u64>,
}

/// The records collected so far, shared between the layer and its readers.
#[derive(Clone, Default)]
pub struct PhaseLog(Arc<Mutex<Vec<PhaseRecord>>>);

impl PhaseLog {
    /// Takes every record collected so far.
    pub fn take(&self) -> Vec<PhaseRecord> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn push(&self, record: PhaseRecord) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(record);
    }
}

/// The `tracing_subscriber` layer that fills a [`PhaseLog`].
pub struct PhaseLayer {
    log: PhaseLog,
}

impl PhaseLayer {
    /// A layer writing into `log`.
    pub fn new(log: PhaseLog) -> Self {
        Self { log }
    }
}

/// What the layer keeps in a span's extensions.
struct SpanState {
    /// `Some((first, count))` for `proof` and `batch` spans.
    proofs: Option<(usize, usize)>,
    opened: Instant,
    faults: u64,
    allocations: Option<u64>,
}

#[derive(Default)]
struct Fields {
    index: Option<u64>,
    first: Option<u64>,
    count: Option<u64>,
    nanos: Option<u64>,
    subphase: Option<String>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "index" => self.index = Some(value),
            "first" => self.first = Some(value),
            "count" => self.count = Some(value),
            "nanos" => self.nanos = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.record_u64(field, value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "subphase" {
            self.subphase = Some(value.to_string());
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn fmt::Debug) {}
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for PhaseLayer {
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let proofs = match (span.name(), fields.index, fields.first, fields.count) {
            ("proof", Some(index), _, _) => Some((index as usize, 1)),
            ("batch", _, Some(first), Some(count)) => Some((first as usize, count as usize)),
            _ => None,
        };
        let (faults, allocations) = (memory::page_faults(), memory::allocations());
        epoch();
        span.extensions_mut().insert(SpanState { proofs, opened: Instant::now(), faults, allocations });
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let (Some(phase), Some(nanos)) = (fields.subphase, fields.nanos) else {
            return;
        };
        if let Some((first, count)) = ctx.event_scope(event).and_then(|scope| proofs_of(scope.from_root())) {
            let seconds = nanos as f64 * 1e-9;
            // The plugin reports when its sub-phase ended (now) and how long it took.
            let start = (epoch().elapsed().as_secs_f64() - seconds).max(0.0);
            self.log.push(PhaseRecord { first, count, phase, seconds, start, faults: 0, allocations: None });
        }
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        if !PHASES.contains(&span.name()) {
            return;
        }
        let Some((opened, faults, allocations)) =
            span.extensions().get::<SpanState>().map(|s| (s.opened, s.faults, s.allocations))
        else {
            return;
        };
        if let Some((first, count)) = proofs_of(span.scope().from_root()) {
            self.log.push(PhaseRecord {
                first,
                count,
                phase: span.name().to_string(),
                seconds: opened.elapsed().as_secs_f64(),
                start: opened.saturating_duration_since(epoch()).as_secs_f64(),
                faults: memory::page_faults().saturating_sub(faults),
                allocations: memory::allocations().zip(allocations).map(|(now, then)| now - then),
            });
        }
    }
}

/// The proof range of the innermost `proof` or `batch` span among `spans`.
fn proofs_of<'a, S: for<'l> LookupSpan<'l> + 'a>(
    spans: impl Iterator<Item = tracing_subscriber::registry::SpanRef<'a, S>>,
) -> Option<(usize, usize)> {
    spans.filter_map(|s| s.extensions().get::<SpanState>().and_then(|state| state.proofs)).last()
}

/// Phase times per proof, in seconds, with each phase's page faults and allocations.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PhaseTable {
    /// Per proof: phase (or sub-phase) -> seconds.
    pub proofs: Vec<BTreeMap<String, f64>>,
    /// Per proof: phase -> process page faults.
    pub faults: Vec<BTreeMap<String, u64>>,
    /// Per proof: phase -> host allocations (empty when not counted).
    pub allocations: Vec<BTreeMap<String, u64>>,
}

impl PhaseTable {
    /// Builds the table of `proofs` proofs from the records; a batch phase counts fully
    /// for each proof of the batch.
    pub fn from_records(records: &[PhaseRecord], proofs: usize) -> Self {
        let mut table =
            Self { proofs: vec![BTreeMap::new(); proofs], faults: vec![BTreeMap::new(); proofs], allocations: vec![] };
        let counted = records.iter().any(|r| r.allocations.is_some());
        if counted {
            table.allocations = vec![BTreeMap::new(); proofs];
        }
        for r in records {
            for i in r.first..(r.first + r.count).min(proofs) {
                *table.proofs[i].entry(r.phase.clone()).or_insert(0.0) += r.seconds;
                if PHASES.contains(&r.phase.as_str()) {
                    *table.faults[i].entry(r.phase.clone()).or_insert(0) += r.faults;
                    if let (true, Some(n)) = (counted, r.allocations) {
                        *table.allocations[i].entry(r.phase.clone()).or_insert(0) += n;
                    }
                }
            }
        }
        table
    }

    /// The time of `phase` in proof `index` (0 if not measured).
    pub fn get(&self, index: usize, phase: &str) -> f64 {
        self.proofs.get(index).and_then(|row| row.get(phase)).copied().unwrap_or(0.0)
    }
}

impl fmt::Display for PhaseTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>5}", "proof")?;
        for phase in PHASES {
            write!(f, " {phase:>9}")?;
        }
        writeln!(f, "   (seconds; synthesis is per batch, dealloc runs off the hot path)")?;
        for (i, row) in self.proofs.iter().enumerate() {
            write!(f, "{i:>5}")?;
            for phase in PHASES {
                match row.get(phase) {
                    Some(t) => write!(f, " {t:>9.3}")?,
                    None => write!(f, " {:>9}", "-")?,
                }
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn spans_become_per_proof_rows() {
        let log = PhaseLog::default();
        let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(log.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let batch = tracing::info_span!("batch", first = 0u64, count = 2u64);
            batch.in_scope(|| tracing::info_span!("synthesis").in_scope(|| ()));
            for index in 0..2u64 {
                let proof = tracing::info_span!("proof", index);
                proof.in_scope(|| {
                    tracing::info_span!("msms").in_scope(|| record_subphase("msms", "h.to_coset", 5_000_000));
                    tracing::info_span!("verify").in_scope(|| ());
                    tracing::info_span!("not_a_phase").in_scope(|| ());
                });
            }
        });
        let records = log.take();
        let table = PhaseTable::from_records(&records, 2);
        for i in 0..2 {
            for phase in ["synthesis", "msms", "verify"] {
                assert!(table.proofs[i].contains_key(phase), "{phase} of proof {i}: {records:?}");
            }
            assert!((table.get(i, "msms.h.to_coset") - 0.005).abs() < 1e-9);
            assert!(!table.proofs[i].contains_key("not_a_phase"));
        }
        let text = table.to_string();
        assert!(text.contains("dealloc") && text.lines().count() == 3, "{text}");
    }
}
