//! `bellhop ab`: two configurations, interleaved in one process, compared per phase.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Context as _, Result};

use super::Context;
use bellhop_host::{
    ab::{self, AbOptions, AbReport},
    config::{set_key, Config},
    pipeline::Workload,
    session::load_params,
    stats,
};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The circuit, e.g. sha256-merkle:6, or porep:2KiB with --input.
    circuit: String,
    /// The input of a Filecoin circuit (C1 output, PoSt or SnapDeals vanilla proofs): run k
    /// of each variant takes partitions k·batch onwards, round its partitions.
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// Config file of A (default: --config, or the defaults).
    #[arg(long, value_name = "FILE")]
    a: Option<PathBuf>,
    /// Config file of B (default: --config, or the defaults).
    #[arg(long, value_name = "FILE")]
    b: Option<PathBuf>,
    /// Set a key of A, e.g. --set-a synthesis.strategy=baseline (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    set_a: Vec<String>,
    /// Set a key of B, e.g. --set-b synthesis.strategy=pce (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    set_b: Vec<String>,
    /// Measured runs of each variant (12 or more: with fewer, no change can pass the
    /// corrected significance level).
    #[arg(long, default_value_t = 15)]
    runs: usize,
    /// Unmeasured runs of each variant first.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Jobs per run, synthesized as one batch.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Only synthesize, no proving: for comparing strategies, whose proving phases are
    /// the same, with many more rounds in the same time.
    #[arg(long)]
    synthesis_only: bool,
    /// Smallest relative change that gets a verdict.
    #[arg(long, default_value_t = 0.03)]
    threshold: f64,
    /// The parameter file (default: the circuit's file in A's `[params] dir`; not read
    /// with --synthesis-only).
    #[arg(long)]
    params: Option<PathBuf>,
    /// Count host allocations per phase (costs time in allocation-heavy phases: keep it
    /// off when comparing times).
    #[arg(long)]
    allocations: bool,
    /// Where to write report.md, report.json and phases.svg.
    #[arg(long, default_value = "ab-report")]
    report: PathBuf,
}

/// The config of one variant as a table: its file or the base, then the `--set`s.
fn variant_table(base: Option<&Path>, file: Option<&Path>, sets: &[String]) -> Result<toml::Table> {
    let mut table = match file.or(base) {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
            Config::parse(&text).map_err(|e| anyhow::anyhow!("invalid config file `{}`: {e}", path.display()))?;
            text.parse::<toml::Table>()?
        }
        None => toml::Table::new(),
    };
    for set in sets {
        let (key, value) = set.split_once('=').with_context(|| format!("`{set}` is not KEY=VALUE"))?;
        set_key(&mut table, key.trim(), value.trim()).map_err(anyhow::Error::msg)?;
    }
    Ok(table)
}

/// `key=value` for every key whose value differs between the two tables.
fn differences(this: &toml::Table, other: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (key, value) in this {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match (value, other.get(key)) {
            (toml::Value::Table(t), Some(toml::Value::Table(o))) => differences(t, o, &path, out),
            (v, o) if Some(v) != o => out.push(format!("{path}={v}")),
            _ => {}
        }
    }
}

fn label(this: &toml::Table, other: &toml::Table, config: &Config) -> String {
    let mut diffs = Vec::new();
    differences(this, other, "", &mut diffs);
    let base = format!("backend {} / strategy {}", config.backend.plugin, config.synthesis.strategy);
    if diffs.is_empty() {
        base
    } else {
        format!("{base} ({})", diffs.join(", "))
    }
}

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    let workload = Workload::read(args.circuit.parse()?, args.input.as_deref())?;
    let spec = workload.spec;
    let base = context.config_path.as_deref();
    let tables =
        [variant_table(base, args.a.as_deref(), &args.set_a)?, variant_table(base, args.b.as_deref(), &args.set_b)?];
    let configs = [
        Config::from_table(&tables[0]).map_err(|e| anyhow::anyhow!("config of A: {e}"))?,
        Config::from_table(&tables[1]).map_err(|e| anyhow::anyhow!("config of B: {e}"))?,
    ];
    let labels = [label(&tables[0], &tables[1], &configs[0]), label(&tables[1], &tables[0], &configs[1])];
    let srs = if args.synthesis_only { None } else { Some(load_params(&configs[0], &spec, args.params.as_deref())?) };
    let options = AbOptions {
        runs: args.runs,
        warmup: args.warmup,
        batch: args.batch,
        // A benchmark-only circuit's proofs prove nothing: none would verify.
        verify: configs[0].pipeline.verify && configs[1].pipeline.verify && !spec.benchmark_only(),
        threshold: args.threshold,
        ..AbOptions::default()
    };
    bellhop_host::memory::count_allocations(args.allocations);
    let bar = indicatif::ProgressBar::new((2 * (args.runs + args.warmup)) as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("ab {msg} [{bar:30}] {pos}/{len} runs, {elapsed}")?);
    bar.set_message(spec.to_string());
    let report = bellhop_engine::ab::run(
        &workload,
        srs,
        [&configs[0], &configs[1]],
        &context.plugin_dir,
        labels,
        &options,
        &context.phases,
        &|| bar.inc(1),
    )?;
    bar.finish_and_clear();

    std::fs::create_dir_all(&args.report).with_context(|| format!("cannot create {}", args.report.display()))?;
    let markdown = markdown(&report);
    std::fs::write(args.report.join("report.md"), &markdown)?;
    std::fs::write(args.report.join("report.json"), serde_json::to_string_pretty(&report)?)?;
    std::fs::write(args.report.join("phases.svg"), svg(&report)?)?;
    print!("{markdown}");
    println!("\nwritten: {}/report.md, report.json, phases.svg", args.report.display());
    Ok(ExitCode::SUCCESS)
}

fn value(v: f64, unit: &str) -> String {
    match unit {
        "s" if v < 1.0 => format!("{:.1} ms", v * 1e3),
        "s" => format!("{v:.3} s"),
        _ => format!("{:.1} MiB", v / f64::from(1u32 << 20)),
    }
}

/// The report as markdown.
pub(crate) fn markdown(r: &AbReport) -> String {
    let mut out = String::new();
    let o = &r.options;
    let _ = writeln!(out, "# A/B: {}\n", r.circuit);
    let _ = writeln!(out, "- A: {}\n- B: {}", r.a, r.b);
    let _ = writeln!(
        out,
        "- {} runs each after {} warm-up each, interleaved A B B A A B ..., {} job(s) per run, {}",
        o.runs,
        o.warmup,
        o.batch,
        if r.synthesis_only { "synthesis only (no proving)" } else { "proved, no pipeline overlap" }
    );
    let _ = writeln!(
        out,
        "- B/A is the median of the per-round ratios; verdicts need the paired (Wilcoxon signed-rank) p < {} / metrics \
         (Bonferroni), the {:.0}% bootstrap interval of the ratio (resampling rounds) excluding 1, and a change of at \
         least {:.0}%; the Mann-Whitney p of the two unpaired samples is shown too\n",
        o.alpha,
        o.confidence * 100.0,
        o.threshold * 100.0
    );
    let _ = writeln!(
        out,
        "| metric | A median | B median | B/A | {:.0}% CI | p paired | p Mann-Whitney | verdict |",
        o.confidence * 100.0
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---|---:|---:|---|");
    for c in &r.comparisons {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} | [{:.3}, {:.3}] | {:.2e} | {:.2e} | {} |",
            c.metric,
            value(c.median_a, c.unit),
            value(c.median_b, c.unit),
            c.ratio,
            c.ci.0,
            c.ci.1,
            c.p_paired,
            c.p_value,
            c.verdict_text()
        );
    }
    let _ = writeln!(
        out,
        "\nMemory per phase (medians): process page faults (plugins included), and, with --allocations, allocations \
         through the host's allocator (embedded plugins included; plugins loaded from files allocate through their \
         own and are not counted).\n"
    );
    let _ = writeln!(out, "| phase | faults A | faults B | allocations A | allocations B |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    for phase in bellhop_host::phases::PHASES {
        let med = |variant: usize, pick: &dyn Fn(&ab::Run) -> Option<u64>| {
            let v: Vec<f64> =
                r.runs.iter().filter(|x| x.variant == variant).filter_map(|x| pick(x).map(|n| n as f64)).collect();
            if v.is_empty() {
                "-".to_string()
            } else {
                format!("{:.0}", stats::median(&v))
            }
        };
        let faults = |x: &ab::Run| x.faults.get(phase).copied();
        let allocs = |x: &ab::Run| x.allocations.get(phase).copied();
        let _ = writeln!(
            out,
            "| {phase} | {} | {} | {} | {} |",
            med(0, &faults),
            med(1, &faults),
            med(0, &allocs),
            med(1, &allocs)
        );
    }
    out
}

/// Every phase's median seconds, A beside B, each with the bootstrap interval of its
/// median at the report's confidence level; on a log scale where the phases differ by two
/// orders of magnitude or more. Each phase is labelled with B/A and its verdict.
pub(crate) fn svg(r: &AbReport) -> Result<String> {
    use plotters::prelude::*;

    let phases: Vec<&ab::Comparison> = r.comparisons.iter().filter(|c| c.unit == "s").collect();
    // Per phase, per variant: the median and its interval.
    let points: Vec<[(f64, f64, f64); 2]> = phases
        .iter()
        .map(|c| {
            [0, 1].map(|variant| {
                let values = r.values(variant, &c.metric);
                let (lo, hi) = stats::bootstrap_median_ci(&values, r.options.confidence, 2000, 0x5f9);
                (stats::median(&values), lo, hi)
            })
        })
        .collect();
    let labels: Vec<String> =
        phases.iter().map(|c| format!("{}: B/A {:.3}, {}", c.metric, c.ratio, c.verdict_text())).collect();
    let positive = || points.iter().flatten().flat_map(|&(m, lo, hi)| [m, lo, hi]).filter(|v| *v > 0.0);
    let (least, most) = (positive().fold(f64::MAX, f64::min), positive().fold(1e-9, f64::max));
    let rows = phases.len().max(1) as f64;
    let mut out = String::new();
    {
        let height = 110 + 36 * phases.len() as u32;
        let root = SVGBackend::with_string(&mut out, (960, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let caption = format!(
            "A/B {}: median seconds per phase, {:.0}% intervals of the median",
            r.circuit,
            100.0 * r.options.confidence
        );
        let mut chart = ChartBuilder::on(&root);
        chart.caption(caption, ("sans-serif", 15)).margin(12).x_label_area_size(32).y_label_area_size(330);
        // Phase i is row i from the top; A just above its centre, B just below.
        let rows_range = -0.5..rows - 0.5;
        let label = |y: &f64| {
            let row = (rows - 1.0 - y).round();
            let exact = (rows - 1.0 - y - row).abs() < 1e-6;
            labels.get(row as usize).filter(|_| exact && row >= 0.0).cloned().unwrap_or_default()
        };
        let legend = [format!("A: {}", r.a), format!("B: {}", r.b)];
        if least < f64::MAX && most / least >= 100.0 {
            let chart = chart.build_cartesian_2d((least / 2.0..most * 2.0).log_scale(), rows_range)?;
            draw_phases(chart, &points, &label, &legend)?;
        } else {
            draw_phases(chart.build_cartesian_2d(0.0..most * 1.1, rows_range)?, &points, &label, &legend)?;
        }
        root.present()?;
    }
    Ok(out)
}

/// Draws `points` (per phase, A's and B's median and interval) on `chart`, rows labelled
/// by `label`, the variants named by `legend`.
fn draw_phases<'a, X>(
    mut chart: plotters::chart::ChartContext<
        'a,
        plotters::backend::SVGBackend<'a>,
        plotters::coord::cartesian::Cartesian2d<X, plotters::coord::types::RangedCoordf64>,
    >,
    points: &[[(f64, f64, f64); 2]],
    label: &dyn Fn(&f64) -> String,
    legend: &[String; 2],
) -> Result<()>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    use plotters::prelude::*;

    let rows = points.len() as f64;
    chart
        .configure_mesh()
        .y_labels(points.len().max(1))
        .y_label_formatter(label)
        .disable_y_mesh()
        .x_desc("seconds")
        .draw()?;
    for (variant, color) in [(0, RGBColor(0x4c, 0x78, 0xa8)), (1, RGBColor(0xf5, 0x85, 0x18))] {
        let bars = points.iter().enumerate().map(move |(i, p)| {
            let (median, lo, hi) = p[variant];
            let y = rows - 1.0 - i as f64 + if variant == 0 { 0.15 } else { -0.15 };
            ErrorBar::new_horizontal(y, lo, median, hi, color.filled().stroke_width(2), 8)
        });
        chart
            .draw_series(bars)?
            .label(legend[variant].clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 10, y + 4)], color.filled()));
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.9)).draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A report of 8 runs a variant whose phases take `seconds` (B's 10% slower).
    fn report(seconds: &[(&str, f64)]) -> AbReport {
        let runs = (0..16)
            .map(|order| {
                let variant = order % 2;
                let jitter = 1.0 + 0.01 * (order % 5) as f64 + 0.1 * variant as f64;
                let seconds: BTreeMap<String, f64> = seconds.iter().map(|(p, s)| (p.to_string(), s * jitter)).collect();
                ab::Run {
                    variant,
                    order,
                    seconds,
                    faults: BTreeMap::new(),
                    allocations: BTreeMap::new(),
                    peak_rss: None,
                }
            })
            .collect();
        AbReport::new("chain:1024".into(), ["a.toml".into(), "b <&> c".into()], &AbOptions::default(), false, runs)
    }

    #[test]
    fn the_chart_shows_every_phase_on_the_scale_its_spread_needs() {
        let close = svg(&report(&[("synthesis", 1.0), ("msms", 0.5), ("verify", 0.2)])).unwrap();
        let spread = svg(&report(&[("synthesis", 2.0), ("msms", 0.01), ("verify", 0.0004)])).unwrap();
        for chart in [&close, &spread] {
            assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"), "{chart}");
            for phase in ["synthesis", "msms", "verify"] {
                assert!(chart.contains(&format!("{phase}: B/A 1.1")), "{phase} labelled with its ratio: {chart}");
            }
            // Labels are escaped.
            assert!(chart.contains("B: b &lt;&amp;&gt; c"), "{chart}");
        }
        // Over three orders of magnitude the axis is logarithmic: its ticks are powers of ten.
        let tick = "\n0.001\n</text>";
        assert!(spread.contains(tick) && !close.contains(tick), "{spread}");
    }
}
