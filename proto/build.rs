//! Compiles `proto/cuzk/v1/proving.proto` with protox (no protoc needed) into prost
//! messages and tonic's server and client.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let file = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={file}");
    let descriptors = protox::compile([file], ["proto"])?;
    tonic_prost_build::configure().build_server(true).build_client(true).compile_fds(descriptors)?;
    Ok(())
}
