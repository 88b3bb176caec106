//! Bellhop: a Groth16 (BLS12-381) proving engine whose compute backends and synthesis
//! strategies are plugins.
//!
//! - [`plugins`]: finding, loading and opening backend and strategy plugins;
//! - [`config`]: the operator's `bellhop.toml`;
//! - [`cli`]: the `bellhop` command line.

pub mod cli;
pub mod config;
mod embedded;
pub mod plugins;
