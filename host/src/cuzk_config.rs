//! An operator's `cuzk.toml` (cuzk's daemon configuration, Curio's `extern/cuzk`) read as
//! the `bellhop.toml` that runs Bellhop's daemon where cuzk's ran: the same listen
//! address, parameter directory and memory budget, cuzk's defaults included, on the GPU
//! with pce. A key with no equivalent is named with what replaces it.

use crate::config::{set_key, Config};

/// A `cuzk.toml` translated.
#[derive(Clone, Debug, PartialEq)]
pub struct Translation {
    /// The equivalent `bellhop.toml`.
    pub table: toml::Table,
    /// A line per cuzk key not carried over: the key, and what replaces it in Bellhop.
    pub notes: Vec<String>,
}

/// Where each cuzk key goes: `(cuzk key, Bellhop key)`, values carried as they are.
const SAME_VALUE: &[(&str, &str)] = &[
    ("daemon.listen", "daemon.listen"),
    ("daemon.status_listen", "daemon.status_listen"),
    ("srs.param_cache", "params.dir"),
    ("memory.total_budget", "memory.budget"),
    ("memory.safety_margin", "memory.safety_margin"),
    ("memory.eviction_min_idle", "memory.eviction_min_idle"),
    ("gpus.devices", "backend.devices"),
    ("gpus.gpu_threads", "backend.threads"),
    ("synthesis.threads", "synthesis.threads"),
    ("pipeline.synthesis_lookahead", "pipeline.lookahead"),
    ("pipeline.synthesis_concurrency", "daemon.synthesis_workers"),
    ("logging.level", "logging.level"),
    ("logging.format", "logging.format"),
];

/// cuzk's defaults for the keys that say where the daemon stands (`cuzk-core` config):
/// applied where the file leaves them out, so the daemon listens and reads where cuzk did.
const CUZK_DEFAULTS: &[(&str, &str)] = &[
    ("daemon.listen", "unix:///run/curio/cuzk.sock"),
    ("daemon.status_listen", ""),
    ("srs.param_cache", "/data/zk/params"),
    ("memory.total_budget", "auto"),
    ("memory.safety_margin", "5GiB"),
    ("memory.eviction_min_idle", "5m"),
    ("logging.level", "info"),
];

/// cuzk keys with no Bellhop key, and what replaces each.
const REPLACED: &[(&str, &str)] = &[
    ("srs.preload", "deprecated in cuzk too; sets load on demand (`bellhop client preload` loads one ahead)"),
    ("memory.pinned_budget", "deprecated in cuzk too; [memory] budget covers everything"),
    ("memory.working_memory_budget", "deprecated in cuzk too; [memory] budget covers everything"),
    (
        "gpus.gpu_workers_per_device",
        "one device worker per device; synthesis overlaps proving through [pipeline] lookahead (an index \
         repeated in [backend] devices opens a second instance on that device)",
    ),
    (
        "scheduler.max_batch_size",
        "[pipeline] batch counts partitions, not whole proofs: set it by hand (a 32 GiB PoRep is 10 partitions)",
    ),
    (
        "scheduler.max_batch_wait_ms",
        "none: a batch is what is queued when a synthesis worker is free, never waited for",
    ),
    ("scheduler.sort_by_type", "none: parameter sets stay resident within [memory] budget"),
    ("synthesis.partition_workers", "deprecated in cuzk too; [daemon] synthesis_workers"),
    ("pipeline.max_parallel_synthesis", "[daemon] synthesis_workers; the memory budget bounds partitions in flight"),
    ("pipeline.slot_size", "none: [memory] budget bounds partitions in flight"),
    ("pipeline.max_gpu_queue_depth", "[pipeline] lookahead: partitions synthesized ahead per device"),
];

/// Every cuzk key this knows, for the README's table and the tests.
pub fn cuzk_keys() -> impl Iterator<Item = &'static str> {
    SAME_VALUE.iter().map(|(k, _)| *k).chain(["pipeline.enabled"]).chain(REPLACED.iter().map(|(k, _)| *k))
}

fn lookup<'t>(table: &'t toml::Table, key: &str) -> Option<&'t toml::Value> {
    let (section, name) = key.split_once('.')?;
    table.get(section)?.as_table()?.get(name)
}

fn put(table: &mut toml::Table, key: &str, value: toml::Value) {
    let (section, name) = key.split_once('.').expect("dotted keys");
    let entry = table.entry(section).or_insert_with(|| toml::Value::Table(toml::Table::new()));
    entry.as_table_mut().expect("sections are tables").insert(name.to_string(), value);
}

/// Translates the text of a `cuzk.toml`. Unknown cuzk keys and keys without an equivalent
/// are notes, not errors (cuzk accepts them); a value Bellhop cannot use is an error naming
/// the cuzk key.
pub fn translate(text: &str) -> Result<Translation, String> {
    let cuzk: toml::Table = text.parse().map_err(|e: toml::de::Error| format!("not a cuzk.toml: {e}"))?;
    let mut table = toml::Table::new();
    let mut notes = Vec::new();
    // cuzk proves with supraseal on NVIDIA GPUs and pre-compiled constraints.
    set_key(&mut table, "backend.plugin", "\"cuda\"")?;
    set_key(&mut table, "synthesis.strategy", "\"pce\"")?;
    for (from, to) in SAME_VALUE {
        let value = match lookup(&cuzk, from) {
            Some(value) => value.clone(),
            None => match CUZK_DEFAULTS.iter().find(|(key, _)| key == from) {
                Some((_, default)) => toml::Value::String((*default).into()),
                None => continue,
            },
        };
        // cuzk's empty device list means every GPU, as Bellhop's leaving it out does.
        if *from == "gpus.devices" && value.as_array().is_some_and(Vec::is_empty) {
            continue;
        }
        // cuzk's 0 synthesis tasks, or lookahead (a minimum it scales up), are not Bellhop's
        // 0 (none): Bellhop's defaults stand.
        if matches!(*from, "pipeline.synthesis_concurrency" | "pipeline.synthesis_lookahead")
            && value.as_integer() == Some(0)
        {
            continue;
        }
        put(&mut table, to, value);
    }
    if lookup(&cuzk, "pipeline.enabled").and_then(toml::Value::as_bool) == Some(false) {
        put(&mut table, "pipeline.lookahead", toml::Value::Integer(0));
    }
    for (section, keys) in &cuzk {
        let Some(keys) = keys.as_table() else {
            notes.push(format!("`{section}` is not a cuzk section; ignored"));
            continue;
        };
        for key in keys.keys() {
            let dotted = format!("{section}.{key}");
            if let Some((_, instead)) = REPLACED.iter().find(|(k, _)| *k == dotted) {
                notes.push(format!("{dotted}: not carried over; {instead}"));
            } else if !cuzk_keys().any(|k| k == dotted) {
                notes.push(format!("{dotted}: not a key cuzk knows; ignored"));
            }
        }
    }
    Config::from_table(&table).map_err(|e| {
        let cuzk_key = SAME_VALUE.iter().find(|(_, to)| e.contains(to.rsplit('.').next().unwrap_or(to)));
        match cuzk_key {
            Some((from, to)) => format!("cuzk's {from} (Bellhop's {to}) cannot be used: {e}"),
            None => format!("the translated configuration is not valid: {e}"),
        }
    })?;
    Ok(Translation { table, notes })
}

impl Translation {
    /// The configuration it describes.
    pub fn config(&self) -> Config {
        Config::from_table(&self.table).expect("checked when translated")
    }

    /// The `bellhop.toml` text, headed by the notes as comments.
    pub fn to_toml(&self) -> String {
        let mut text = String::from("# Translated from a cuzk.toml by `bellhop config from-cuzk`.\n");
        for note in &self.notes {
            text += &format!("# {note}\n");
        }
        text += "\n";
        text + &toml::to_string(&self.table).expect("tables serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Budget;
    use std::{path::PathBuf, time::Duration};

    #[test]
    fn an_empty_cuzk_toml_is_cuzks_defaults_on_the_gpu() {
        let translated = translate("").unwrap();
        let config = translated.config();
        assert_eq!(config.daemon.listen, "unix:///run/curio/cuzk.sock");
        assert_eq!(config.daemon.status_listen, "");
        assert_eq!(config.params.dir, PathBuf::from("/data/zk/params"));
        assert_eq!(config.memory.budget, Budget::Auto);
        assert_eq!(config.memory.safety_margin, 5 << 30);
        assert_eq!(config.memory.eviction_min_idle, Duration::from_secs(300));
        assert_eq!((config.backend.plugin.as_str(), config.synthesis.strategy.as_str()), ("cuda", "pce"));
        assert_eq!(config.logging.level.as_deref(), Some("info"));
        assert!(translated.notes.is_empty(), "{:?}", translated.notes);
    }

    #[test]
    fn keys_are_carried_over_and_the_rest_named() {
        let translated = translate(
            r#"
            [daemon]
            listen = "0.0.0.0:9820"
            status_listen = "127.0.0.1:9821"
            [srs]
            param_cache = "/var/params"
            preload = ["porep-32g"]
            [memory]
            total_budget = "400GiB"
            [gpus]
            devices = [0, 1]
            gpu_threads = 32
            gpu_workers_per_device = 2
            [scheduler]
            max_batch_size = 2
            [pipeline]
            enabled = false
            synthesis_concurrency = 3
            [logging]
            format = "json"
            [extra]
            knob = 1
            "#,
        )
        .unwrap();
        let config = translated.config();
        assert_eq!(config.daemon.listen, "0.0.0.0:9820");
        assert_eq!(config.daemon.status_listen, "127.0.0.1:9821");
        assert_eq!(config.params.dir, PathBuf::from("/var/params"));
        assert_eq!(config.memory.budget, Budget::Bytes(400 << 30));
        assert_eq!(config.backend.devices, Some(vec![0, 1]));
        assert_eq!(config.backend.threads, 32);
        assert_eq!(config.pipeline.lookahead, 0);
        assert_eq!(config.daemon.synthesis_workers, 3);
        assert_eq!(config.logging.format, crate::config::LogFormat::Json);
        let notes = translated.notes.join("\n");
        for key in ["srs.preload", "gpus.gpu_workers_per_device", "scheduler.max_batch_size", "extra.knob"] {
            assert!(notes.contains(key), "{key} is named: {notes}");
        }
        assert_eq!(translated.notes.len(), 4, "{notes}");
        // The text written is the same configuration.
        assert_eq!(Config::parse(&translated.to_toml()).unwrap(), config);
    }

    #[test]
    fn a_value_bellhop_cannot_use_names_the_cuzk_key() {
        let e = translate("[memory]\ntotal_budget = \"plenty\"\n").unwrap_err();
        assert!(e.contains("memory.total_budget") && e.contains("not a size"), "{e}");
        assert!(translate("[daemon").unwrap_err().contains("not a cuzk.toml"));
    }
}
