//! Finding, loading and opening plugins.
//!
//! A plugin is named in the config either by name (`cpu`, `cuda-pinned`) or by path. A
//! name means an embedded plugin (the CPU backend, the baseline strategy) or the file
//! `libbellhop_<kind>_<name>.so` (underscores for dashes) in the plugin directory:
//! `BELLHOP_PLUGIN_DIR` if set, else `[plugins] dir` from the config, else the directory of
//! the `bellhop` executable.
//!
//! Loading reads the plugin's fixed-layout header first (magic, ABI version, kind), so a
//! wrong file, a wrong kind or another ABI version gets an error that says what to do;
//! then `abi_stable` checks the layout of the root module. Loaded libraries are never
//! unloaded: objects, vectors and vtables from them may live as long as the process.

use std::{
    collections::HashMap,
    env::consts::{DLL_PREFIX, DLL_SUFFIX},
    fmt,
    path::{Path, PathBuf},
    sync::{Mutex, OnceLock},
};

use abi_stable::{
    library::{AbiHeaderRef, LibraryError, RootModule, ROOT_MODULE_LOADER_NAME_WITH_NUL},
    std_types::RResult,
};
use bellhop_baseline::Baseline;
use bellhop_cpu::CpuBackend;
use bellhop_plugin_api::{
    backend::BackendModuleRef, strategy::StrategyModuleRef, AbiVersion, OpenRequest, PluginError, PluginHeader,
    PluginInfo, PluginKind, ABI_VERSION, PLUGIN_HEADER_SYMBOL, PLUGIN_MAGIC,
};
use bellhop_plugin_sdk::{
    backend::{self, Backend},
    build_info,
    strategy::{self, Strategy},
};

/// The environment variable that overrides the plugin directory.
pub const PLUGIN_DIR_ENV: &str = "BELLHOP_PLUGIN_DIR";

/// Why a plugin could not be loaded. Each message names the problem and the fix.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file does not exist.
    #[error("plugin file `{}` does not exist; check the path, or name a plugin that `bellhop plugins` lists", .0.display())]
    NotFound(PathBuf),
    /// No plugin of that name in the plugin directory.
    #[error(
        "no {kind} plugin named `{name}`: expected the file `{}`; available {kind}s: {}. \
         Build the plugin, set {PLUGIN_DIR_ENV} or [plugins] dir to where it is, or give its path",
        .expected.display(),
        if .available.is_empty() { "none".to_string() } else { .available.join(", ") }
    )]
    UnknownName {
        /// The kind asked for.
        kind: PluginKind,
        /// The name asked for.
        name: String,
        /// The file it would be.
        expected: PathBuf,
        /// The names that do exist.
        available: Vec<String>,
    },
    /// The plugin needs a shared library this machine does not have.
    #[error(
        "`{}` needs the shared library `{library}`, which this machine does not have ({reason}); install it: \
         for libOpenCL, an OpenCL ICD loader (scripts/opencl-runtime.sh installs it with PoCL)",
        .path.display()
    )]
    MissingLibrary {
        /// The plugin.
        path: PathBuf,
        /// The library it needs.
        library: String,
        /// What the dynamic loader said.
        reason: String,
    },
    /// Users other than the owner may write the file.
    #[error(
        "plugin file `{}` is writable by other users (mode {mode:o}), who could make it run their code here; \
         refused. Make it writable by its owner alone: chmod go-w {}",
        .path.display(),
        .path.display()
    )]
    WritableByOthers {
        /// The file, links resolved.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file belongs to a user other than root and this process's.
    #[error(
        "plugin file `{}` belongs to user {owner}, neither root nor the user running bellhop, who could make it \
         run their code here; refused. Have root or this user own it: chown root {}",
        .path.display(),
        .path.display()
    )]
    OwnedByOther {
        /// The file, links resolved.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
    },
    /// The file is not a loadable shared library.
    #[error("`{}` is not a loadable shared library ({reason}); a plugin is the .so file a plugin crate builds", .path.display())]
    NotALibrary {
        /// The file.
        path: PathBuf,
        /// What the dynamic loader said.
        reason: String,
    },
    /// A shared library, but not a Bellhop plugin.
    #[error(
        "`{}` is a shared library but not a Bellhop plugin ({reason}); \
         plugins export their header with bellhop_plugin_sdk::export_backend! or export_strategy!",
        .path.display()
    )]
    NotAPlugin {
        /// The file.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// A plugin of the other kind.
    #[error(
        "`{}` is a {found} plugin, but a {expected} is expected here; \
         name it under {} instead, or pick a {expected} from `bellhop plugins`",
        .path.display(),
        if *.found == PluginKind::STRATEGY { "[synthesis] strategy" } else { "[backend] plugin" }
    )]
    WrongKind {
        /// The file.
        path: PathBuf,
        /// What was asked for.
        expected: PluginKind,
        /// What the file is.
        found: PluginKind,
    },
    /// Built against another major ABI version, or an older minor one.
    #[error(
        "`{}` was built for plugin ABI {found}, but this bellhop speaks ABI {host} and loads plugins of \
         ABI {}.{} to {}.x; rebuild the plugin against this bellhop-plugin-sdk (or use a bellhop of ABI {found})",
        .path.display(), .host.major, .host.minor, .host.major
    )]
    AbiMismatch {
        /// The file.
        path: PathBuf,
        /// The plugin's ABI version.
        found: AbiVersion,
        /// The host's ABI version.
        host: AbiVersion,
    },
    /// `abi_stable` refused the root module (its layout differs from the host's).
    #[error("`{}` failed the ABI layout check; rebuild it against this bellhop's plugin SDK (bellhop-plugin-sdk): {error}", .path.display())]
    Layout {
        /// The file.
        path: PathBuf,
        /// abi_stable's report.
        error: Box<LibraryError>,
    },
    /// `describe` failed inside the plugin.
    #[error("`{}` failed to describe itself: {error}", .path.display())]
    Describe {
        /// The file.
        path: PathBuf,
        /// The plugin's error.
        error: PluginError,
    },
}

/// Where a plugin comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Compiled into the `bellhop` binary.
    Embedded,
    /// Loaded from this file.
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Embedded => f.write_str("embedded"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// One of the two plugin seams, as the host drives it.
pub trait Seam: Sized + 'static {
    /// The root module type.
    type Module: RootModule + Copy + Send + Sync;
    /// What `open` gives.
    type Opened;
    /// The header kind of this seam.
    const KIND: PluginKind;
    /// Calls the module's `describe`.
    fn describe(module: Self::Module) -> RResult<PluginInfo, PluginError>;
    /// Calls the module's `open`.
    fn open(module: Self::Module, request: &OpenRequest) -> Result<Self::Opened, PluginError>;
    /// The plugins compiled into the host.
    fn embedded() -> Vec<Plugin<Self>>;
    /// The root modules loaded so far, by canonical path: each library is loaded once
    /// and never unloaded.
    fn loaded() -> &'static Mutex<HashMap<PathBuf, Self::Module>>;
}

/// The backend seam.
pub enum Backends {}

impl Seam for Backends {
    type Module = BackendModuleRef;
    type Opened = Box<dyn Backend>;
    const KIND: PluginKind = PluginKind::BACKEND;

    fn describe(module: BackendModuleRef) -> RResult<PluginInfo, PluginError> {
        module.describe()()
    }

    fn open(module: BackendModuleRef, request: &OpenRequest) -> Result<Box<dyn Backend>, PluginError> {
        module.open()(request).into_result().map(|b| Box::new(b) as Box<dyn Backend>)
    }

    /// The CPU backend, named `cpu`, behind the same seam as a loaded plugin.
    fn embedded() -> Vec<Plugin<Self>> {
        vec![Plugin::embedded(backend::info::<CpuBackend>(build_info!()), |request| {
            backend::open_embedded::<CpuBackend>(request).map(|b| Box::new(b) as Box<dyn Backend>)
        })]
    }

    fn loaded() -> &'static Mutex<HashMap<PathBuf, BackendModuleRef>> {
        static LOADED: OnceLock<Mutex<HashMap<PathBuf, BackendModuleRef>>> = OnceLock::new();
        LOADED.get_or_init(Default::default)
    }
}

/// The strategy seam.
pub enum Strategies {}

impl Seam for Strategies {
    type Module = StrategyModuleRef;
    type Opened = Box<dyn Strategy>;
    const KIND: PluginKind = PluginKind::STRATEGY;

    fn describe(module: StrategyModuleRef) -> RResult<PluginInfo, PluginError> {
        module.describe()()
    }

    fn open(module: StrategyModuleRef, request: &OpenRequest) -> Result<Box<dyn Strategy>, PluginError> {
        module.open()(request).into_result().map(|s| Box::new(s) as Box<dyn Strategy>)
    }

    /// The baseline strategy, behind the same seam as a loaded plugin.
    fn embedded() -> Vec<Plugin<Self>> {
        vec![Plugin::embedded(strategy::info::<Baseline>(build_info!()), |request| {
            strategy::open_embedded::<Baseline>(request).map(|s| Box::new(s) as Box<dyn Strategy>)
        })]
    }

    fn loaded() -> &'static Mutex<HashMap<PathBuf, StrategyModuleRef>> {
        static LOADED: OnceLock<Mutex<HashMap<PathBuf, StrategyModuleRef>>> = OnceLock::new();
        LOADED.get_or_init(Default::default)
    }
}

/// How a [`Plugin`] opens.
enum Opener<S: Seam> {
    Embedded(fn(&OpenRequest) -> Result<S::Opened, PluginError>),
    Module(S::Module),
}

/// A plugin that was found and described, ready to open.
pub struct Plugin<S: Seam> {
    /// What it says about itself.
    pub info: PluginInfo,
    /// Where it comes from.
    pub source: Source,
    opener: Opener<S>,
}

/// A plugin whose `open` failed.
#[derive(Debug, thiserror::Error)]
#[error("{kind} `{name}` ({origin}) could not open device {device}: {error}")]
pub struct OpenError {
    /// The plugin's kind.
    pub kind: PluginKind,
    /// The plugin's name.
    pub name: String,
    /// Where it came from.
    pub origin: String,
    /// The device asked for.
    pub device: u32,
    /// The plugin's error.
    pub error: PluginError,
}

impl<S: Seam> Plugin<S> {
    /// An embedded plugin.
    pub(crate) fn embedded(info: PluginInfo, open: fn(&OpenRequest) -> Result<S::Opened, PluginError>) -> Self {
        Self { info, source: Source::Embedded, opener: Opener::Embedded(open) }
    }

    /// Loads the plugin in the file at `path`.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let module = load_module::<S>(path)?;
        let info = S::describe(module)
            .into_result()
            .map_err(|error| LoadError::Describe { path: path.to_path_buf(), error })?;
        Ok(Self { info, source: Source::File(path.to_path_buf()), opener: Opener::Module(module) })
    }

    /// Finds a plugin by name (embedded, or in `dir`) or by path.
    pub fn find(spec: &str, dir: &Path) -> Result<Self, LoadError> {
        if looks_like_path(spec) {
            return Self::load(Path::new(spec));
        }
        if let Some(embedded) = S::embedded().into_iter().find(|p| p.info.name.as_str() == spec) {
            return Ok(embedded);
        }
        let path = dir.join(file_name(S::KIND, spec));
        if path.exists() {
            return Self::load(&path);
        }
        let available = names::<S>(dir);
        Err(LoadError::UnknownName { kind: S::KIND, name: spec.into(), expected: path, available })
    }

    /// Opens the plugin.
    pub fn open(&self, request: &OpenRequest) -> Result<S::Opened, OpenError> {
        let result = match &self.opener {
            Opener::Embedded(open) => open(request),
            Opener::Module(module) => S::open(*module, request),
        };
        result.map_err(|error| OpenError {
            kind: S::KIND,
            name: self.info.name.to_string(),
            origin: self.source.to_string(),
            device: request.device,
            error,
        })
    }
}

/// The file name of the plugin `name` of `kind`: `libbellhop_backend_cuda_pinned.so`.
pub fn file_name(kind: PluginKind, name: &str) -> String {
    format!("{DLL_PREFIX}bellhop_{}_{}{DLL_SUFFIX}", kind.name(), name.replace('-', "_"))
}

fn looks_like_path(spec: &str) -> bool {
    spec.contains(std::path::MAIN_SEPARATOR) || spec.contains('/') || spec.ends_with(DLL_SUFFIX)
}

/// The plugin directory: `BELLHOP_PLUGIN_DIR`, else `configured`, else beside the executable.
pub fn plugin_dir(configured: Option<&Path>) -> PathBuf {
    if let Some(dir) = std::env::var_os(PLUGIN_DIR_ENV) {
        return dir.into();
    }
    if let Some(dir) = configured {
        return dir.to_path_buf();
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The plugin files in `dir`, sorted.
pub fn plugin_files(dir: &Path) -> Vec<PathBuf> {
    let prefix = format!("{DLL_PREFIX}bellhop_");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix) && n.ends_with(DLL_SUFFIX))
        })
        .collect();
    files.sort();
    files
}

/// The names of the plugins of seam `S`: embedded ones and those in `dir` whose header
/// declares that kind and an ABI this host loads. The headers are read from the files, not
/// by loading them, so listing runs none of the libraries' code; a name is the file's
/// (`libbellhop_backend_cuda_pinned.so`: `cuda-pinned`), which is how `find` looks it up.
pub fn names<S: Seam>(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = S::embedded().into_iter().map(|p| p.info.name.to_string()).collect();
    let kind_prefix = format!("{DLL_PREFIX}bellhop_{}_", S::KIND.name());
    for path in plugin_files(dir) {
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(&kind_prefix))
            .and_then(|n| n.strip_suffix(DLL_SUFFIX))
        else {
            continue;
        };
        if peek_header(&path).is_ok_and(|header| header.kind == S::KIND) {
            names.push(name.replace('_', "-"));
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The header the plugin file at `path` declares, read from its dynamic symbol table and
/// checked as loading checks it, without loading the file (none of its code runs).
pub fn peek_header(path: &Path) -> Result<PluginHeader, LoadError> {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
    let not_a_library = |reason: String| LoadError::NotALibrary { path: path.to_path_buf(), reason };
    let not_a_plugin = |reason: &str| LoadError::NotAPlugin { path: path.to_path_buf(), reason: reason.into() };
    let bytes = std::fs::read(path).map_err(|e| not_a_library(e.to_string()))?;
    let file = object::File::parse(&*bytes).map_err(|e| not_a_library(e.to_string()))?;
    let symbol_name = PLUGIN_HEADER_SYMBOL.strip_suffix(b"\0").unwrap_or(PLUGIN_HEADER_SYMBOL);
    let symbol = file
        .dynamic_symbols()
        .find(|s| s.name_bytes() == Ok(symbol_name))
        .ok_or_else(|| not_a_plugin("it exports no BELLHOP_PLUGIN_HEADER symbol"))?;
    let size = std::mem::size_of::<PluginHeader>();
    let data = symbol
        .section_index()
        .and_then(|index| file.section_by_index(index).ok())
        .and_then(|section| section.data_range(symbol.address(), size as u64).ok().flatten())
        .ok_or_else(|| not_a_plugin("its BELLHOP_PLUGIN_HEADER symbol points at no data of the file"))?;
    let word = |offset: usize| {
        let bytes: [u8; 4] = data[offset..offset + 4].try_into().expect("4 bytes inside the header");
        if file.is_little_endian() {
            u32::from_le_bytes(bytes)
        } else {
            u32::from_be_bytes(bytes)
        }
    };
    let header = PluginHeader {
        magic: data[..8].try_into().expect("8 bytes inside the header"),
        abi: AbiVersion {
            major: word(std::mem::offset_of!(PluginHeader, abi) + std::mem::offset_of!(AbiVersion, major)),
            minor: word(std::mem::offset_of!(PluginHeader, abi) + std::mem::offset_of!(AbiVersion, minor)),
        },
        kind: PluginKind(word(std::mem::offset_of!(PluginHeader, kind))),
    };
    check_header(header, path)
}

/// The kind the plugin file at `path` declares, or why it is not a loadable plugin of this
/// ABI; read from the file without loading it.
pub fn read_kind(path: &Path) -> Result<PluginKind, LoadError> {
    Ok(peek_header(path)?.kind)
}

/// Loads the library at `path` for the life of the process. Plugin files are never
/// unloaded, as abi_stable never unloads what it loads: unloading runs a library's static
/// destructors, and the cuda-supraseal plugin's (sppark's thread pool, which sets its
/// `done` flag outside the lock its workers wait under) can hang forever when they run
/// just after its constructors started the threads. `bellhop plugins`, which only read
/// the file's header, hung so once in a CI run.
fn open_library(path: &Path) -> Result<&'static libloading::Library, LoadError> {
    if !path.exists() {
        return Err(LoadError::NotFound(path.to_path_buf()));
    }
    // The file checked is the file loaded: links are resolved before both.
    let path = &path.canonicalize().map_err(|e| LoadError::NotALibrary { path: path.into(), reason: e.to_string() })?;
    refuse_untrusted(path)?;
    // SAFETY: loading a library runs its initialisers. Plugins are trusted code, like the
    // executable itself; the operator chose the file or the directory it is in, and no
    // other user can have changed the file (checked above).
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| dlopen_error(path, e.to_string()))?;
    Ok(Box::leak(Box::new(lib)))
}

/// Refuses a plugin file that users other than its owner may write, or that another user
/// than root and this process's owns: whoever can write it runs code in every process that
/// loads it.
fn refuse_untrusted(path: &Path) -> Result<(), LoadError> {
    use std::os::unix::fs::MetadataExt as _;
    let meta =
        std::fs::metadata(path).map_err(|e| LoadError::NotALibrary { path: path.into(), reason: e.to_string() })?;
    if meta.mode() & 0o022 != 0 {
        return Err(LoadError::WritableByOthers { path: path.into(), mode: meta.mode() & 0o777 });
    }
    // SAFETY: geteuid takes no arguments, has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    if meta.uid() != 0 && meta.uid() != user {
        return Err(LoadError::OwnedByOther { path: path.into(), owner: meta.uid() });
    }
    Ok(())
}

/// Names a missing dependency (glibc: "libX.so.1: cannot open shared object file: ...")
/// apart from a file that is not a library at all.
fn dlopen_error(path: &Path, reason: String) -> LoadError {
    let missing = reason
        .split_once(": cannot open shared object file")
        .map(|(head, _)| head.rsplit([' ', ':']).next().unwrap_or(head).to_string())
        .filter(|library| !path.ends_with(library));
    match missing {
        Some(library) => LoadError::MissingLibrary { path: path.to_path_buf(), library, reason },
        None => LoadError::NotALibrary { path: path.to_path_buf(), reason },
    }
}

fn read_header(lib: &libloading::Library, path: &Path) -> Result<PluginHeader, LoadError> {
    // SAFETY: `BELLHOP_PLUGIN_HEADER` is a data symbol; asking for `*const PluginHeader`
    // yields its address without reading anything.
    let symbol = unsafe { lib.get::<*const PluginHeader>(PLUGIN_HEADER_SYMBOL) }.map_err(|_| {
        LoadError::NotAPlugin { path: path.to_path_buf(), reason: "it exports no BELLHOP_PLUGIN_HEADER symbol".into() }
    })?;
    // SAFETY: the symbol is a `static PluginHeader` defined by the export macros, whose
    // layout is frozen across ABI versions; the library stays loaded during the read.
    check_header(unsafe { std::ptr::read(*symbol) }, path)
}

/// Refuses a header of the wrong magic or of an ABI this host does not load.
fn check_header(header: PluginHeader, path: &Path) -> Result<PluginHeader, LoadError> {
    if header.magic != PLUGIN_MAGIC {
        return Err(LoadError::NotAPlugin {
            path: path.to_path_buf(),
            reason: "its BELLHOP_PLUGIN_HEADER has the wrong magic".into(),
        });
    }
    if !header.abi.loads_into(ABI_VERSION) {
        return Err(LoadError::AbiMismatch { path: path.to_path_buf(), found: header.abi, host: ABI_VERSION });
    }
    Ok(header)
}

fn load_module<S: Seam>(path: &Path) -> Result<S::Module, LoadError> {
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mut cache = S::loaded().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(module) = cache.get(&key) {
        return Ok(*module);
    }
    let lib = open_library(path)?;
    let header = read_header(lib, path)?;
    if header.kind != S::KIND {
        return Err(LoadError::WrongKind { path: path.to_path_buf(), expected: S::KIND, found: header.kind });
    }
    let layout = |error| LoadError::Layout { path: path.to_path_buf(), error: Box::new(error) };
    let symbol = ROOT_MODULE_LOADER_NAME_WITH_NUL.as_bytes();
    // SAFETY: every plugin that passed the header check was built by the export macros,
    // which define this symbol as abi_stable's library header.
    let abi_header: AbiHeaderRef = unsafe { lib.get::<AbiHeaderRef>(symbol) }.map(|s| *s).map_err(|_| {
        LoadError::NotAPlugin { path: path.to_path_buf(), reason: "it exports no abi_stable root module".into() }
    })?;
    let module = abi_header.upgrade().and_then(|h| h.init_root_module::<S::Module>()).map_err(layout)?;
    cache.insert(key, module);
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_dependency_is_named() {
        let plugin = Path::new("/plugins/libbellhop_backend_opencl.so");
        let reason = "libOpenCL.so.1: cannot open shared object file: No such file or directory";
        let e = dlopen_error(plugin, reason.into());
        assert!(matches!(&e, LoadError::MissingLibrary { library, .. } if library == "libOpenCL.so.1"), "{e}");
        assert!(e.to_string().contains("opencl-runtime.sh"), "{e}");
        // The plugin itself unreadable, or not a library: no dependency to name.
        let own = "/plugins/libbellhop_backend_opencl.so: cannot open shared object file: Permission denied";
        assert!(matches!(dlopen_error(plugin, own.into()), LoadError::NotALibrary { .. }));
        let junk = "/plugins/libbellhop_backend_opencl.so: invalid ELF header";
        assert!(matches!(dlopen_error(plugin, junk.into()), LoadError::NotALibrary { .. }));
    }
}
