//! Curio's proving API, `cuzk.v1.ProvingEngine`: the messages, the tonic server trait and
//! the client, generated from Bellhop's copy of the service definition
//! (`proto/cuzk/v1/proving.proto`, with cuzk's field numbers and enum values).

#![allow(missing_docs, clippy::all, clippy::pedantic)]

/// The `cuzk.v1` package.
pub mod v1 {
    tonic::include_proto!("cuzk.v1");
}

/// The largest message Curio's client sends or takes (256 MiB); the server accepts at
/// least this much (a 32 GiB C1 output is about 50 MB).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
