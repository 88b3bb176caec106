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
    std::fs::write(args.report.join("phases.svg"), svg(&report))?;
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

/// A grouped bar chart of the median time of every phase, A against B, with the
/// min-max range of the runs as whiskers.
pub(crate) fn svg(r: &AbReport) -> String {
    let phases: Vec<&ab::Comparison> = r.comparisons.iter().filter(|c| c.unit == "s").collect();
    let (label_w, bar_w, row_h) = (110.0, 520.0, 34.0);
    let height = 60.0 + row_h * phases.len() as f64;
    let max = phases
        .iter()
        .flat_map(|c| r.values(0, &c.metric).into_iter().chain(r.values(1, &c.metric)))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let x = |v: f64| label_w + bar_w * v / max;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"11\">\n",
        label_w + bar_w + 170.0
    );
    let _ = writeln!(
        out,
        "<text x=\"8\" y=\"18\" font-size=\"13\">A/B {}: median seconds per phase (whiskers: min-max)</text>",
        r.circuit
    );
    let _ = writeln!(
        out,
        "<rect x=\"8\" y=\"28\" width=\"10\" height=\"10\" fill=\"#4c78a8\"/><text x=\"22\" y=\"37\">A: {}</text>",
        xml(&r.a)
    );
    let _ = writeln!(
        out,
        "<rect x=\"8\" y=\"42\" width=\"10\" height=\"10\" fill=\"#f58518\"/><text x=\"22\" y=\"51\">B: {}</text>",
        xml(&r.b)
    );
    for (i, c) in phases.iter().enumerate() {
        let y = 62.0 + row_h * i as f64;
        let _ = writeln!(out, "<text x=\"8\" y=\"{}\">{}</text>", y + 16.0, c.metric);
        for (variant, color) in [(0, "#4c78a8"), (1, "#f58518")] {
            let values = r.values(variant, &c.metric);
            let median = stats::median(&values);
            let (lo, hi) = values.iter().fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
            let by = y + 2.0 + 13.0 * variant as f64;
            let _ = writeln!(
                out,
                "<rect x=\"{label_w}\" y=\"{by}\" width=\"{:.1}\" height=\"11\" fill=\"{color}\"/>",
                x(median) - label_w
            );
            let _ = writeln!(
                out,
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#333\"/>",
                x(lo),
                x(hi),
                by + 5.5,
                by + 5.5
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\">B/A {:.3} ({})</text>",
            label_w + bar_w + 8.0,
            y + 16.0,
            c.ratio,
            c.verdict_text()
        );
    }
    out.push_str("</svg>\n");
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
