#!/usr/bin/env python3
"""Print the docs/BENCHMARKS.md tables of `bellhop bench` runs (scripts/porep32-sim.sh).

Usage: scripts/porep32-summary.py [--gpu-samples gpu-memory.csv] RUN [RUN ...]
RUN is a run's files without their extension (NAME-SIZE: .json the bench's report, .log
its log, .memory its 5-second samples). Prints two markdown tables: every sustained proof
of each run with s/proof, partition wall, peak RSS and peak GPU memory; then the medians of
the phases over each run's sustained partitions (the bench's own, warm-up left out). GPU
memory is the largest 5-second sample, or with --gpu-samples (porep32-budgets.sh's
nvidia-smi samples, every 200 ms) the largest sample within the run's window.
"""
import argparse
import datetime
import json
import pathlib
import re
import statistics

PHASES = [
    ("synthesis", "synthesis"),
    ("witness", "synthesis.replay_witness_cpu"),
    ("products", "synthesis.replay_products_cpu"),
    ("GPU phases", "msms"),
    ("register", "msms.register"),
    ("page-lock waits", "msms.page_locks"),
    ("h upload + NTT", "msms.h.upload_ntt"),
    ("variables", "msms.variables"),
    ("msm_h", "msms.msm_h"),
    ("msm_a", "msms.msm_a"),
    ("msm_l", "msms.msm_l"),
    ("msm_b_g1", "msms.msm_b_g1"),
    ("msm_b_g2", "msms.msm_b_g2"),
    ("release", "msms.release"),
    ("the call's host time", "msms.call"),
    ("dealloc", "dealloc"),
]
GIB = 2**30


def proved_times(log):
    """Seconds since the bench started at which each partition was proved, in order."""
    return [float(m) for m in re.findall(r"partition \d+ proved after ([\d.]+) s", log)]


def gpu_peak_mib(run, samples):
    """Largest GPU memory (MiB) sampled while RUN ran, or None where nothing was sampled."""
    memory = run.with_suffix(".memory")
    rows = [line.split() for line in memory.read_text().splitlines() if line.strip()]
    if not rows:
        return None
    if samples is None:
        return max(int(row[3]) for row in rows)
    start, end = int(rows[0][0]) - 5, int(rows[-1][0])
    peak = None
    for line in samples.read_text().splitlines():
        stamp, used = (field.strip() for field in line.split(","))
        when = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f")
        seconds = when.replace(tzinfo=datetime.timezone.utc).timestamp()
        if start <= seconds <= end:
            peak = max(peak or 0, int(used))
    return peak


def summarize(run, samples):
    report = json.loads(run.with_suffix(".json").read_text())
    partitions = report["partitions"]
    warm = report["warmup"] * partitions
    times = proved_times(run.with_suffix(".log").read_text())
    ends = [times[i] for i in range(partitions - 1, len(times), partitions)]
    # A proof's time is from the previous proof's end, so without a warm-up the first
    # proof (timed from the bench's start, loading included) is left out.
    proofs = [b - a for a, b in zip(ends, ends[1:])][max(report["warmup"] - 1, 0) :]
    walls = [b - a for a, b in zip(times[warm:], times[warm + 1 :])]
    medians = {key: phase["median"] for key, phase in report["phases"].items() if phase["median"] > 0}
    phases = {label: medians.get(key) for label, key in PHASES}
    return {
        "name": run.name,
        "proofs": proofs,
        "per_proof": report["seconds_per_proof_after_warmup"],
        "wall": statistics.median(walls) if walls else None,
        "rss": report["peak_rss_bytes"] / GIB,
        "gpu": gpu_peak_mib(run, samples),
        "phases": phases,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu-samples", type=pathlib.Path)
    parser.add_argument("runs", nargs="+", type=pathlib.Path)
    args = parser.parse_args()
    rows = [summarize(run, args.gpu_samples) for run in args.runs]
    print("| run | sustained proofs | s per proof (the bench's) | partition wall (median) | peak RSS | peak GPU memory |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        gpu = f"{r['gpu'] / 1024:.1f} GiB" if r["gpu"] is not None else "-"
        wall = f"{r['wall']:.2f}" if r["wall"] is not None else "-"
        proofs = ", ".join(f"{p:.1f}" for p in r["proofs"])
        print(f"| {r['name']} | {proofs} | **{r['per_proof']:.1f}** | {wall} | {r['rss']:.1f} GiB | {gpu} |")
    print()
    print("| run | " + " | ".join(label for label, _ in PHASES) + " |")
    print("|---|" + "---:|" * len(PHASES))
    for r in rows:
        cells = ("-" if v is None else f"{v:.2f}" for v in r["phases"].values())
        print(f"| {r['name']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
