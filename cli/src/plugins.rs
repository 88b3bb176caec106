//! `bellhop plugins`: what can be loaded, and what each plugin says about itself.

use std::process::ExitCode;

use anyhow::Result;
use bellhop_plugin_sdk::{PluginInfo, PluginKind};
use serde_json::json;

use super::Context;
use bellhop_host::plugins::{plugin_files, read_kind, Backends, LoadError, Plugin, Seam, Source, Strategies};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// One row: a plugin that loaded, or a file that did not.
struct Row {
    source: Source,
    loaded: Result<PluginInfo, LoadError>,
}

fn rows(context: &Context) -> Vec<Row> {
    let embedded = Backends::embedded()
        .into_iter()
        .map(|p| (p.info, p.source))
        .chain(Strategies::embedded().into_iter().map(|p| (p.info, p.source)));
    let mut rows: Vec<Row> = embedded.map(|(info, source)| Row { source, loaded: Ok(info) }).collect();
    for path in plugin_files(&context.plugin_dir) {
        let loaded = read_kind(&path).and_then(|kind| {
            if kind == PluginKind::STRATEGY {
                Plugin::<Strategies>::load(&path).map(|p| p.info)
            } else {
                Plugin::<Backends>::load(&path).map(|p| p.info)
            }
        });
        rows.push(Row { source: Source::File(path), loaded });
    }
    rows
}

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    let rows = rows(context);
    if args.json {
        let list: Vec<_> = rows.iter().map(to_json).collect();
        println!("{}", serde_json::to_string_pretty(&json!({ "plugin_dir": context.plugin_dir, "plugins": list }))?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("plugin directory: {}", context.plugin_dir.display());
    println!("{:<9} {:<14} {:<8} {:<4} {:<34} source", "kind", "name", "version", "abi", "capabilities");
    for row in &rows {
        let source = &row.source;
        match &row.loaded {
            Ok(info) => {
                println!(
                    "{:<9} {:<14} {:<8} {:<4} {:<34} {source}",
                    info.kind.name(),
                    info.name,
                    info.build.crate_version,
                    info.abi.to_string(),
                    info.capabilities.names().join(",")
                );
                let b = &info.build;
                let git = b.git_revision.as_ref().map_or("unknown".into(), |r| r.to_string());
                println!("          {} [{} {} git {git}{}]", info.description, b.target, b.profile, features(info));
                for d in info.devices.iter() {
                    println!(
                        "          device {}: {} ({} compute units, {:.1} GiB)",
                        d.index,
                        d.name,
                        d.compute_units,
                        d.memory_bytes as f64 / f64::from(1u32 << 30)
                    );
                }
            }
            Err(error) => println!("{:<9} {:<14} {source}\n          error: {error}", "?", "(not loaded)"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn features(info: &PluginInfo) -> String {
    if info.build.features.is_empty() {
        String::new()
    } else {
        format!(", features {}", info.build.features)
    }
}

fn to_json(row: &Row) -> serde_json::Value {
    let source = &row.source;
    match &row.loaded {
        Ok(info) => json!({
            "kind": info.kind.name(),
            "name": info.name.as_str(),
            "description": info.description.as_str(),
            "version": info.build.crate_version.as_str(),
            "abi": info.abi.to_string(),
            "capabilities": info.capabilities.names(),
            "source": source.to_string(),
            "build": {
                "crate": info.build.crate_name.as_str(),
                "target": info.build.target.as_str(),
                "profile": info.build.profile.as_str(),
                "features": info.build.features.as_str(),
                "git_revision": info.build.git_revision.as_ref().map(|r| r.as_str()).into_option(),
            },
            "devices": info.devices.iter().map(|d| json!({
                "index": d.index, "name": d.name.as_str(), "memory_bytes": d.memory_bytes,
                "compute_units": d.compute_units,
            })).collect::<Vec<_>>(),
        }),
        Err(error) => {
            json!({ "source": source.to_string(), "error": error.to_string() })
        }
    }
}
