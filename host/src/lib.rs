//! Bellhop: a Groth16 (BLS12-381) proving engine whose compute backends and synthesis
//! strategies are plugins.
//!
//! - [`plugins`]: finding, loading and opening backend and strategy plugins;
//! - [`config`]: the operator's `bellhop.toml`; [`cuzk_config`]: a `cuzk.toml` read as one;
//! - [`params`]: parameter files in bellperson's format;
//! - [`prover`]: one Groth16 proof over any backend; [`pipeline`]: many, overlapped;
//! - [`phases`]: per-proof phase tables from tracing spans; [`stats`]: summaries;
//! - [`ab`]: two configurations compared in one process; [`shadow`]: a backend checked
//!   call by call against a reference.

pub mod ab;
pub mod config;
pub mod cuzk_config;
pub mod dealloc;
pub mod memory;
pub mod params;
pub mod phases;
pub mod pipeline;
pub mod plugins;
pub mod prover;
pub mod recycler;
pub mod session;
pub mod shadow;
pub mod stats;
pub mod synthetic_params;
