//! The error every plugin call returns.

use std::fmt;

use abi_stable::{std_types::RString, StableAbi};

/// What went wrong, as a plain integer so that a minor ABI version can add kinds.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorKind(pub u32);

impl ErrorKind {
    /// The caller passed inputs the call cannot take (lengths, sizes, values).
    pub const INVALID_INPUT: Self = Self(1);
    /// The plugin does not implement this call.
    pub const UNSUPPORTED: Self = Self(2);
    /// The requested device does not exist, or there is no device at all.
    pub const NO_DEVICE: Self = Self(3);
    /// The device failed (a driver or kernel error).
    pub const DEVICE: Self = Self(4);
    /// The `[backend.options]` / `[synthesis.options]` table has an unknown key or bad value.
    pub const OPTIONS: Self = Self(5);
    /// The plugin panicked; the panic was caught at the ABI boundary.
    pub const PANIC: Self = Self(6);
    /// Anything else inside the plugin.
    pub const INTERNAL: Self = Self(7);
    /// The device had no room for the call's data; it works, and the call may succeed with
    /// less resident on it or a smaller input. ABI 1.5.
    pub const OUT_OF_MEMORY: Self = Self(8);

    /// A short lowercase name, or `kind N` for kinds this version does not know.
    pub fn name(self) -> String {
        match self {
            Self::INVALID_INPUT => "invalid input".into(),
            Self::UNSUPPORTED => "unsupported".into(),
            Self::NO_DEVICE => "no device".into(),
            Self::DEVICE => "device error".into(),
            Self::OPTIONS => "bad options".into(),
            Self::PANIC => "panic".into(),
            Self::INTERNAL => "internal error".into(),
            Self::OUT_OF_MEMORY => "out of device memory".into(),
            Self(n) => format!("kind {n}"),
        }
    }
}

impl fmt::Debug for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// An error returned across the ABI: a kind and a message for the operator.
#[repr(C)]
#[derive(StableAbi, Clone, PartialEq, Eq)]
pub struct PluginError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// What happened and, where there is one, what to do about it.
    pub message: RString,
}

impl PluginError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: RString::from(message.into()) }
    }

    /// An [`ErrorKind::INVALID_INPUT`] error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::INVALID_INPUT, message)
    }

    /// An [`ErrorKind::DEVICE`] error.
    pub fn device(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::DEVICE, message)
    }

    /// An [`ErrorKind::OUT_OF_MEMORY`] error.
    pub fn out_of_memory(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OUT_OF_MEMORY, message)
    }

    /// An [`ErrorKind::UNSUPPORTED`] error naming the call.
    pub fn unsupported(call: &str) -> Self {
        Self::new(ErrorKind::UNSUPPORTED, format!("this plugin does not implement `{call}`"))
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl fmt::Debug for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for PluginError {}
