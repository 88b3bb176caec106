//! Writes `submit_request` seeds: each request of the `bellhop fil request` output files
//! named on the command line, encoded as on the wire, into the directory named first.
//!
//!   cargo run -p bellhop-fuzz-targets --example seed_requests -- fuzz/corpus/submit_request a.json b.json

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().ok_or("usage: seed_requests DIR REQUESTS.json...")?);
    for file in args {
        let stem = std::path::Path::new(&file).file_stem().and_then(|s| s.to_str()).unwrap_or("request").to_string();
        for (i, bytes) in bellhop_fuzz_targets::encode_requests(&std::fs::read(&file)?)?.into_iter().enumerate() {
            std::fs::write(dir.join(format!("{stem}-{i}.pb")), bytes)?;
        }
    }
    Ok(())
}
