//! `bellhop conformance`: a backend's primitives against the CPU references.

use std::{process::ExitCode, time::Instant};

use anyhow::Result;
use bellhop_conformance::{run_suite, seed_from_env, Report, Suite};
use bellhop_plugin_sdk::{
    backend::{Backend, NttDirection, ProvingBases},
    cast_slice,
    strategy::{Assignment, Density},
    types::Fr,
    ErrorKind, OpenRequest, PluginError,
};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{
    prime::{PrimeCurve, PrimeCurveAffine},
    Group,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::Context;
use bellhop_host::plugins::{Backends, Plugin};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// A backend name (as `bellhop plugins` lists it) or the path of a plugin file.
    plugin: String,
    /// The device to open.
    #[arg(long, default_value_t = 0)]
    device: u32,
    /// Worker threads for the backend (0: all cores).
    #[arg(long, default_value_t = 0)]
    threads: u32,
    /// The seed of the random inputs (default: `BELLHOP_SEED`, else fresh; always printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Also time each primitive at 2^K (bases kept, as when proving; median of 3), and
    /// `proof_msms` where offered against the primitives it stands for.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=MAX_TIME_AT))]
    time_at: Option<u32>,
}

/// The largest `--time-at`: 2^28 G2 bases alone take 48 GiB.
const MAX_TIME_AT: i64 = 28;

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    let plugin = Plugin::<Backends>::find(&args.plugin, &context.plugin_dir)?;
    let options = if args.plugin == context.config.backend.plugin {
        toml::to_string(&context.config.backend.options)?
    } else {
        String::new()
    };
    let request = OpenRequest { device: args.device, threads: args.threads, options: options.into() };
    let backend = plugin.open(&request)?;
    println!("backend {} ({}) device {}", plugin.info.name, plugin.source, args.device);
    let seed = args.seed.unwrap_or_else(seed_from_env);
    let mut results = Vec::new();
    for suite in Suite::ALL {
        results.extend(run_suite(backend.as_ref(), suite, seed).results);
    }
    let report = Report { seed, results };
    print!("{report}");
    if let Some(log_n) = args.time_at {
        time_primitives(backend.as_ref(), log_n, seed)?;
    }
    Ok(if report.passed() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Prints the median of three timed calls of each primitive at `2^log_n`, after one
/// untimed call. The bases are `(i+1)·G`, kept by the backend as the prover's are.
fn time_primitives(backend: &dyn Backend, log_n: u32, seed: u64) -> Result<()> {
    let n = 1usize << log_n;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let g1 = multiples(G1Projective::generator(), n);
    let g2 = multiples(G2Projective::generator(), n);
    backend.keep_bases(&[cast_slice(&g1)], &[cast_slice(&g2)])?;
    let median_ms = |f: &mut dyn FnMut() -> Result<(), PluginError>| -> Result<f64> {
        f()?;
        let mut times = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            f()?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        Ok(times[1])
    };
    let fr: &[Fr] = cast_slice(&scalars);
    // The transforms work in place: the buffers are made once, outside the timed calls
    // (their contents after a call are as good an input as any; the time does not depend on them).
    let (mut a, mut b, mut c) = (fr.to_vec(), fr.to_vec(), fr.to_vec());
    let rows = [
        ("msm_g1", median_ms(&mut || backend.msm_g1(cast_slice(&g1), fr).map(drop))?),
        ("msm_g2", median_ms(&mut || backend.msm_g2(cast_slice(&g2), fr).map(drop))?),
        ("ntt", median_ms(&mut || backend.ntt(&mut a, NttDirection::Forward))?),
        ("compute_h", median_ms(&mut || backend.compute_h(&mut a, &mut b, &mut c).map(drop))?),
    ];
    // A proof of 2^log_n constraints and as many variables (2 inputs), every one marked:
    // h and four G1 MSMs over 2^log_n points (h's one fewer) and one on G2.
    let everything = |n: usize| Density::from_bits(std::iter::repeat_n(true, n));
    let assignment = Assignment {
        a: fr.to_vec().into(),
        b: fr.to_vec().into(),
        c: fr.to_vec().into(),
        inputs: fr[..2].to_vec().into(),
        aux: fr[2..].to_vec().into(),
        a_aux_density: everything(n - 2),
        b_input_density: everything(2),
        b_aux_density: everything(n - 2),
    };
    let bases = ProvingBases {
        h: cast_slice(&g1[..n - 1]).into(),
        l: cast_slice(&g1[..n - 2]).into(),
        a: cast_slice(&g1).into(),
        b_g1: cast_slice(&g1).into(),
        b_g2: cast_slice(&g2).into(),
    };
    let one_call = if n > 2 {
        match median_ms(&mut || backend.proof_msms(bases, &assignment).map(drop)) {
            Err(e) if e.downcast_ref::<PluginError>().is_some_and(|e| e.kind == ErrorKind::UNSUPPORTED) => None,
            other => Some(other?),
        }
    } else {
        None
    };
    backend.release_bases()?;
    println!("primitive times at 2^{log_n} (median of 3, ms):");
    for (name, ms) in rows {
        println!("  {name:<10} {ms:>10.2}");
    }
    if let Some(ms) = one_call {
        let raw = rows[3].1 + 4.0 * rows[0].1 + rows[1].1;
        println!(
            "  proof_msms {ms:>10.2}  (h and 5 MSMs in one call; compute_h + 4 msm_g1 + msm_g2 take {raw:.2}: {:.2}x)",
            ms / raw
        );
    }
    Ok(())
}

/// `[1·P, 2·P, ..., n·P]` in affine form.
fn multiples<G: PrimeCurve>(p: G, n: usize) -> Vec<G::Affine> {
    let points: Vec<G> = std::iter::successors(Some(p), |q| Some(*q + p)).take(n).collect();
    let mut affine = vec![G::Affine::identity(); n];
    G::batch_normalize(&points, &mut affine);
    affine
}
