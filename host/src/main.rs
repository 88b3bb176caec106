use std::process::ExitCode;

use clap::Parser;

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
