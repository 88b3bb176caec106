use std::process::ExitCode;

use clap::Parser;

/// Counts host allocations when asked (`bellhop ab --allocations`), per phase.
#[global_allocator]
static ALLOC: bellhop::memory::CountingAlloc = bellhop::memory::CountingAlloc;

fn main() -> ExitCode {
    let cli = bellhop::cli::Cli::parse();
    match cli.run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
