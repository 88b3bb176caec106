//! The operator's configuration file (`bellhop.toml`), validated on load.
//!
//! Every section and key is optional; an unknown key or a value of the wrong type is an
//! error naming the key.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

pub use bellhop_plugin_sdk::options::parse_size;
use bellhop_plugin_sdk::options::size;
use serde::Deserialize;

/// The whole configuration.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `[backend]`: which compute backend proves.
    pub backend: BackendConfig,
    /// `[synthesis]`: which strategy synthesizes.
    pub synthesis: SynthesisConfig,
    /// `[params]`: where parameter files live.
    pub params: ParamsConfig,
    /// `[pipeline]`: overlap and checking.
    pub pipeline: PipelineConfig,
    /// `[plugins]`: where plugin files live.
    pub plugins: PluginsConfig,
    /// `[daemon]`: `bellhop serve`.
    pub daemon: DaemonConfig,
    /// `[memory]`: the daemon's memory budget.
    pub memory: MemoryConfig,
    /// `[logging]`: what is logged, and how.
    pub logging: LoggingConfig,
}

/// `[backend]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct BackendConfig {
    /// A backend name (`cpu`, `cuda`, ...) or a path to a plugin file.
    pub plugin: String,
    /// The device index (default 0); for `bellhop serve` without `devices`, its only device.
    pub device: Option<u32>,
    /// The daemon's devices, one worker each (an index may repeat: two instances on one
    /// device). None: `device` if it is set, else every device the backend describes.
    pub devices: Option<Vec<u32>>,
    /// Worker threads for the backend; 0 means all cores.
    pub threads: u32,
    /// Options passed to the plugin, which rejects keys it does not know.
    pub options: toml::Table,
    /// A backend to use when `plugin` cannot be loaded or opened (e.g. `cpu` on a machine
    /// without a GPU). None: such a failure is an error.
    pub fallback: Option<String>,
    /// A reference backend (e.g. `cpu`, on its device 0) that runs every call beside this
    /// one (`proof_msms` against its primitives); the first whose answers differ fails,
    /// naming the part, the primitive and the first index that differs. For backend
    /// authors: it costs the reference's time.
    pub shadow: Option<String>,
    /// Whether proofs use the backend's `proof_msms` (h and the five MSMs in one call, the
    /// data kept on the device; ABI 1.4) where it offers it. false: the SDK's call made of
    /// its primitives, e.g. to compare the two with `bellhop ab`.
    pub proof_msms: bool,
    /// The daemon: the longest a device may take over one partition's backend calls
    /// (`"10m"`). Past it, the partition's job fails and the device is marked down until
    /// the call returns and a probe finds it working. Raise it for a CPU backend proving
    /// 32 GiB sectors.
    #[serde(deserialize_with = "positive_duration")]
    pub call_timeout: Duration,
    /// The daemon: how long a device marked down waits before it is probed (reopened, and
    /// checked on a small MSM where it has one); the wait doubles after each failed probe,
    /// up to 16 times this.
    #[serde(deserialize_with = "positive_duration")]
    pub probe_after: Duration,
}

impl BackendConfig {
    /// The device a one-shot command opens.
    pub fn device(&self) -> u32 {
        self.device.unwrap_or(0)
    }
}

impl Default for BackendConfig {
    fn default() -> Self {
        Self {
            plugin: "cpu".into(),
            device: None,
            devices: None,
            threads: 0,
            options: toml::Table::new(),
            fallback: None,
            shadow: None,
            proof_msms: true,
            call_timeout: Duration::from_secs(600),
            probe_after: Duration::from_secs(30),
        }
    }
}

/// `[synthesis]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SynthesisConfig {
    /// A strategy name (`baseline`, `pce`, ...) or a path to a plugin file.
    pub strategy: String,
    /// Worker threads for synthesis; 0 means all cores.
    pub threads: u32,
    /// Options passed to the plugin, which rejects keys it does not know.
    pub options: toml::Table,
}

impl Default for SynthesisConfig {
    fn default() -> Self {
        Self { strategy: "baseline".into(), threads: 0, options: toml::Table::new() }
    }
}

/// `[params]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ParamsConfig {
    /// The directory of parameter files (default: filecoin-proofs' own,
    /// `FIL_PROOFS_PARAMETER_CACHE` if set, else [`FILECOIN_PROOFS_PARAMETER_DIR`]).
    pub dir: PathBuf,
}

/// filecoin-proofs' parameter directory when `FIL_PROOFS_PARAMETER_CACHE` is unset, where
/// Curio's and Lotus' fetchers put the published parameter files.
pub const FILECOIN_PROOFS_PARAMETER_DIR: &str = "/var/tmp/filecoin-proof-parameters";

impl Default for ParamsConfig {
    fn default() -> Self {
        // Where filecoin-proofs looks, so that its parameter files are found.
        let dir = std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
            .map_or_else(|| PathBuf::from(FILECOIN_PROOFS_PARAMETER_DIR), PathBuf::from);
        Self { dir }
    }
}

/// `[pipeline]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PipelineConfig {
    /// How many batches synthesis may run ahead of proving (0: no overlap). Up to this
    /// many are synthesized at once, each on a thread of its own, as many as the measured
    /// synthesis and proving times need to keep proving busy; each holds its assignments.
    pub lookahead: usize,
    /// Partitions of one circuit (of one job or of several of one priority) synthesized
    /// together in one strategy call and proved together, in one call where the backend
    /// proves whole batches (`prove_batch`).
    #[serde(deserialize_with = "batch")]
    pub batch: usize,
    /// Verify every proof before returning it.
    pub verify: bool,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self { lookahead: 1, batch: 1, verify: true }
    }
}

/// `[plugins]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PluginsConfig {
    /// Where plugin files are looked up by name (default: beside the executable;
    /// `BELLHOP_PLUGIN_DIR` overrides both).
    pub dir: Option<PathBuf>,
}

/// `[daemon]`: the proving service (`bellhop serve`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// Where the gRPC service listens: `host:port`, or `unix:///path` for a unix socket.
    pub listen: String,
    /// The permissions of the unix socket `listen` names (TOML's `0o660`: its owner and
    /// group may connect).
    pub socket_mode: u32,
    /// Where `GET /metrics` (Prometheus text) and `GET /status` (JSON) are served,
    /// `host:port`; empty: not served.
    pub status_listen: String,
    /// Lets `listen` take connections from other machines without a `token_file` (anyone
    /// who reaches the port may then submit and cancel proofs), and `status_listen` serve
    /// other machines; refused at start otherwise. For a Curio on another machine, whose
    /// client sends no token, behind a firewall of the operator's.
    pub allow_insecure_listen: bool,
    /// Partitions synthesized at the same time, each on a thread of its own.
    pub synthesis_workers: usize,
    /// How long a finished job's proof is kept for `AwaitProof` (e.g. `"1h"`).
    #[serde(deserialize_with = "duration")]
    pub keep_results: Duration,
    /// How long SIGTERM waits for running jobs before the daemon exits anyway.
    #[serde(deserialize_with = "duration")]
    pub shutdown_grace: Duration,
    /// Where accepted jobs are journaled, so that a restart loses none.
    pub state_dir: PathBuf,
    /// How many times a job may be started and have the daemon stop under it (a crash,
    /// an abort, an out-of-memory kill) before it ends FAILED instead of running again.
    #[serde(deserialize_with = "at_least_one")]
    pub max_attempts: u32,
    /// How long a LOW job may wait before it is served as NORMAL, so that a steady stream
    /// of NORMAL work cannot starve it.
    #[serde(deserialize_with = "duration")]
    pub low_priority_aging: Duration,
    /// The highest priority a client may ask for a job of each kind (`porep-c2`,
    /// `snap-update`, `window-post`, `winning-post`, `catalog`), e.g. `{ porep-c2 = "high" }`;
    /// a job asking more gets this. A kind left out: its own default priority (NORMAL for
    /// PoRep and SnapDeals, HIGH for WindowPoSt, CRITICAL for WinningPoSt), CRITICAL for
    /// catalog circuits (tests and benchmarks).
    pub max_priority: BTreeMap<String, String>,
    /// Jobs not ended beyond which a NORMAL or LOW submission is refused
    /// (RESOURCE_EXHAUSTED); HIGH and CRITICAL ones may use twice it.
    pub max_queued: usize,
    /// Bytes of input held by jobs not ended beyond which a submission is refused, as
    /// `max_queued` (a 32 GiB PoRep's C1 output is about 50 MB).
    #[serde(deserialize_with = "size")]
    pub max_queued_bytes: u64,
    /// gRPC requests served at once, over all connections, besides the waits for a proof;
    /// more are refused (RESOURCE_EXHAUSTED) before their messages are read.
    pub max_requests: usize,
    /// gRPC calls waiting for a proof (AwaitProof, and Prove while its job runs) served at
    /// once, apart from `max_requests`, so that parked waits never lock out the other
    /// calls; more are refused as `max_requests`.
    pub max_waits: usize,
    /// gRPC requests (HTTP/2 streams) one connection may have open at once.
    pub max_streams_per_connection: u32,
    /// A file holding a bearer token that every gRPC request over TCP must send
    /// (`authorization: Bearer TOKEN`); readable by its owner only. None: no token. Curio's
    /// client sends none, so set it only where other clients reach the daemon over TCP.
    pub token_file: Option<PathBuf>,
    /// Admit benchmark-only jobs (`synthetic-porep`, from a synthetic C1 output) to
    /// measure the daemon: they are proved like any other and complete without a proof,
    /// since theirs prove nothing. Off, they are refused.
    pub synthetic_benchmarks: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9820".into(),
            socket_mode: 0o660,
            status_listen: "127.0.0.1:9821".into(),
            allow_insecure_listen: false,
            synthesis_workers: 2,
            keep_results: Duration::from_secs(3600),
            shutdown_grace: Duration::from_secs(60),
            state_dir: default_state_dir(),
            max_attempts: 3,
            low_priority_aging: Duration::from_secs(600),
            max_priority: BTreeMap::new(),
            max_queued: 1000,
            max_queued_bytes: 4 << 30,
            max_requests: 1024,
            max_waits: 4096,
            max_streams_per_connection: 256,
            token_file: None,
            synthetic_benchmarks: false,
        }
    }
}

/// `$BELLHOP_STATE_DIR`, else `$XDG_STATE_HOME/bellhop`, else `~/.local/state/bellhop`.
fn default_state_dir() -> PathBuf {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("BELLHOP_STATE_DIR")
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("bellhop")))
        .or_else(|| var("HOME").map(|h| h.join(".local/state/bellhop")))
        .unwrap_or_else(|| PathBuf::from("bellhop-state"))
}

/// `[memory]`: one budget for resident parameter sets and partitions in flight.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// `"auto"` (the machine's memory less `safety_margin`) or a size (`"96GiB"`).
    pub budget: Budget,
    /// What `"auto"` leaves to the system and other processes.
    #[serde(deserialize_with = "size")]
    pub safety_margin: u64,
    /// How long a parameter set must have been idle before it may be evicted for room.
    #[serde(deserialize_with = "duration")]
    pub eviction_min_idle: Duration,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self { budget: Budget::Auto, safety_margin: 5 << 30, eviction_min_idle: Duration::from_secs(300) }
    }
}

/// `[logging]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LoggingConfig {
    /// A level (`error`, `warn`, `info`, `debug`, `trace`) or `tracing` directives
    /// (`info,bellhop_engine=debug`); `RUST_LOG` overrides it. None: `info` for `bellhop
    /// serve`, `warn` for the other commands.
    pub level: Option<String>,
    /// How lines are written.
    pub format: LogFormat,
}

/// `[logging] format`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event (for journald, Loki and the like).
    Json,
}

/// `[memory] budget`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// The machine's memory less the safety margin.
    Auto,
    /// So many bytes.
    Bytes(u64),
}

impl<'de> Deserialize<'de> for Budget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == "auto" {
            return Ok(Budget::Auto);
        }
        parse_size(&text).map(Budget::Bytes).map_err(serde::de::Error::custom)
    }
}

/// A duration written as humans do: `"90s"`, `"15m"`, `"1h 30m"`.
fn duration<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    humantime::parse_duration(&text)
        .map_err(|e| serde::de::Error::custom(format!("`{text}` is not a duration such as \"90s\" or \"1h\": {e}")))
}

/// A [`duration`] longer than zero.
fn positive_duration<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    match duration(deserializer)? {
        Duration::ZERO => Err(serde::de::Error::custom("a zero duration; give one such as \"30s\"")),
        d => Ok(d),
    }
}

fn at_least_one<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    match u32::deserialize(deserializer)? {
        0 => Err(serde::de::Error::custom("0 would fail every job the daemon was stopped under; use 1 or more")),
        n => Ok(n),
    }
}

fn batch<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    match usize::deserialize(deserializer)? {
        0 => Err(serde::de::Error::custom("a batch of 0 partitions proves nothing; use 1 or more")),
        n => Ok(n),
    }
}

/// A configuration file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the config file `{}`: {error}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file is not valid, or has an unknown key or a bad value.
    #[error("invalid config file `{}`: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The parser's message, naming the key and its line.
        message: String,
    },
}

impl Config {
    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read { path: path.into(), error })?;
        Self::parse(&text).map_err(|message| ConfigError::Invalid { path: path.into(), message })
    }

    /// Parses and validates configuration text.
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e: toml::de::Error| e.to_string().trim_end().to_string())
    }

    /// Validates a configuration held as a TOML table.
    pub fn from_table(table: &toml::Table) -> Result<Self, String> {
        Self::parse(&toml::to_string(table).map_err(|e| e.to_string())?)
    }
}

/// Sets `key` (dotted, e.g. `synthesis.strategy` or `backend.options.pinned`) to `value`
/// in `table`. The value is read as TOML (`true`, `2`, `"x"`), else taken as a string.
pub fn set_key(table: &mut toml::Table, key: &str, value: &str) -> Result<(), String> {
    let parsed: toml::Value = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().filter(|k| !k.is_empty()).ok_or_else(|| format!("`{key}` is not a config key"))?;
    let mut at = table;
    for part in parts {
        at = at
            .entry(part)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| format!("`{part}` in `{key}` is a value, not a section"))?;
    }
    at.insert(last.to_string(), parsed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_can_be_set_by_path() {
        let mut t = toml::Table::new();
        set_key(&mut t, "synthesis.strategy", "pce").unwrap();
        set_key(&mut t, "backend.options.pinned", "true").unwrap();
        set_key(&mut t, "pipeline.lookahead", "2").unwrap();
        let c = Config::from_table(&t).unwrap();
        assert_eq!(c.synthesis.strategy, "pce");
        assert_eq!(c.backend.options.get("pinned"), Some(&toml::Value::Boolean(true)));
        assert_eq!(c.pipeline.lookahead, 2);
        set_key(&mut t, "synthesis.strategi", "pce").unwrap();
        assert!(Config::from_table(&t).unwrap_err().contains("unknown field `strategi`"));
    }

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(Config::parse("").unwrap(), Config::default());
        assert_eq!(Config::default().backend.plugin, "cpu");
        assert!(Config::default().pipeline.verify);
        assert!(Config::default().backend.proof_msms, "one call where a backend offers it");
    }

    #[test]
    fn full_file_parses() {
        let c = Config::parse(
            r#"
            [backend]
            plugin = "cuda-pinned"
            device = 1
            fallback = "cpu"
            proof_msms = false
            call_timeout = "2m"
            probe_after = "5s"
            [backend.options]
            streams = 2
            [synthesis]
            strategy = "pce"
            threads = 8
            [params]
            dir = "/var/params"
            [pipeline]
            lookahead = 2
            verify = false
            [daemon]
            listen = "unix:///run/bellhop.sock"
            status_listen = ""
            synthesis_workers = 4
            keep_results = "2h 30m"
            shutdown_grace = "90s"
            state_dir = "/var/lib/bellhop"
            max_attempts = 5
            low_priority_aging = "20m"
            max_queued = 50
            socket_mode = 0o600
            max_queued_bytes = "2GiB"
            max_requests = 64
            max_waits = 100
            max_streams_per_connection = 8
            token_file = "/etc/bellhop/token"
            [memory]
            budget = "96GiB"
            safety_margin = "2GiB"
            eviction_min_idle = "30s"
            [logging]
            level = "debug"
            format = "json"
            "#,
        )
        .unwrap();
        assert_eq!(c.backend.plugin, "cuda-pinned");
        assert_eq!(c.backend.options.get("streams").and_then(|v| v.as_integer()), Some(2));
        assert_eq!(c.backend.fallback.as_deref(), Some("cpu"));
        assert!(!c.backend.proof_msms);
        assert_eq!((c.backend.call_timeout, c.backend.probe_after), (Duration::from_secs(120), Duration::from_secs(5)));
        assert_eq!(c.synthesis.threads, 8);
        assert!(!c.pipeline.verify);
        assert_eq!(c.daemon.listen, "unix:///run/bellhop.sock");
        assert_eq!(c.daemon.keep_results, Duration::from_secs(9000));
        assert_eq!(c.daemon.shutdown_grace, Duration::from_secs(90));
        assert_eq!(c.daemon.state_dir, PathBuf::from("/var/lib/bellhop"));
        assert_eq!((c.daemon.max_attempts, c.daemon.low_priority_aging), (5, Duration::from_secs(1200)));
        assert_eq!((c.daemon.max_queued, c.daemon.max_queued_bytes), (50, 2 << 30));
        assert_eq!(c.daemon.socket_mode, 0o600);
        assert_eq!((c.daemon.max_requests, c.daemon.max_waits, c.daemon.max_streams_per_connection), (64, 100, 8));
        assert_eq!(c.daemon.token_file.as_deref(), Some(Path::new("/etc/bellhop/token")));
        assert_eq!(c.memory.budget, Budget::Bytes(96 << 30));
        assert_eq!(c.memory.safety_margin, 2 << 30);
        assert_eq!(c.memory.eviction_min_idle, Duration::from_secs(30));
        assert_eq!(c.logging, LoggingConfig { level: Some("debug".into()), format: LogFormat::Json });
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = Config::parse("[backend]\nplugn = \"cpu\"\n").unwrap_err();
        assert!(e.contains("unknown field `plugn`"), "{e}");
        let e = Config::parse("[pipline]\nverify = true\n").unwrap_err();
        assert!(e.contains("unknown field `pipline`"), "{e}");
    }

    #[test]
    fn bad_values_are_named() {
        let e = Config::parse("[backend]\ndevice = \"first\"\n").unwrap_err();
        assert!(e.contains("device") && e.contains("invalid type"), "{e}");
        let e = Config::parse("[pipeline]\nlookahead = -1\n").unwrap_err();
        assert!(e.contains("lookahead"), "{e}");
        let e = Config::parse("[pipeline]\nbatch = 0\n").unwrap_err();
        assert!(e.contains("batch") && e.contains("use 1 or more"), "{e}");
        let e = Config::parse("[daemon]\nkeep_results = \"an hour\"\n").unwrap_err();
        assert!(e.contains("keep_results") && e.contains("not a duration"), "{e}");
        let e = Config::parse("[daemon]\nmax_attempts = 0\n").unwrap_err();
        assert!(e.contains("max_attempts") && e.contains("use 1 or more"), "{e}");
        let e = Config::parse("[backend]\ncall_timeout = \"0s\"\n").unwrap_err();
        assert!(e.contains("call_timeout") && e.contains("zero duration"), "{e}");
        let e = Config::parse("[memory]\nbudget = \"lots\"\n").unwrap_err();
        assert!(e.contains("budget") && e.contains("not a size"), "{e}");
        let e = Config::parse("[logging]\nformat = \"xml\"\n").unwrap_err();
        assert!(e.contains("format") && e.contains("expected `text` or `json`"), "{e}");
    }
}
