#!/usr/bin/env python3
"""Print criterion results as a markdown table of Bellhop vs bellperson ratios.

Usage: scripts/bench-ratios.py GROUP [GROUP ...]   (e.g. msm_g1 ntt prove)
Reads target/criterion/GROUP/<impl>/<param>/new/estimates.json, where the impls are
`bellhop-cpu`, `bellperson` and, for the MSMs, `blst`, and prints median times and the
ratios to Bellhop's.
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"


def median_seconds(path):
    estimates = json.loads(path.read_text())
    return estimates["median"]["point_estimate"] * 1e-9


def fmt(seconds):
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(groups):
    for group in groups:
        base = ROOT / group
        ours = base / "bellhop-cpu"
        if not ours.is_dir():
            sys.exit(f"no results for {group} under {base}: run the bench first")
        blst = (base / "blst").is_dir()
        if blst:
            print(f"\n| {group} | bellhop-cpu | bellperson | bellperson / bellhop | blst | blst / bellhop |")
            print("|---|---:|---:|---:|---:|---:|")
        else:
            print(f"\n| {group} | bellhop-cpu | bellperson | bellperson / bellhop |")
            print("|---|---:|---:|---:|")
        params = sorted((p.name for p in ours.iterdir() if p.is_dir() and p.name != "report"),
                        key=lambda s: (len(s), s))
        for param in params:
            a = median_seconds(ours / param / "new" / "estimates.json")
            theirs = base / "bellperson" / param / "new" / "estimates.json"
            if not theirs.exists():
                continue
            b = median_seconds(theirs)
            label = f"2^{param}" if param.isdigit() else param
            row = f"| {label} | {fmt(a)} | {fmt(b)} | {b / a:.2f}x |"
            if blst:
                c = median_seconds(base / "blst" / param / "new" / "estimates.json")
                row += f" {fmt(c)} | {c / a:.2f}x |"
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:] or ["msm_g1", "msm_g2", "ntt"])
