//! What a plugin author says about a plugin.

use crate::{BuildInfo, Capabilities, DeviceInfo, PluginInfo, PluginKind, ABI_VERSION};

/// What a plugin author says about a plugin; the export macros add its kind, ABI
/// version and build information to make a [`PluginInfo`].
#[derive(Clone, Debug)]
pub struct Description {
    /// The name operators use in the config.
    pub name: String,
    /// One line saying what it is.
    pub description: String,
    /// What it can do.
    pub capabilities: Capabilities,
    /// The devices it can open (empty for strategies).
    pub devices: Vec<DeviceInfo>,
}

impl Description {
    /// The full [`PluginInfo`] of a plugin of `kind` built as `build`.
    pub fn into_info(self, kind: PluginKind, build: BuildInfo) -> PluginInfo {
        PluginInfo {
            kind,
            name: self.name.into(),
            description: self.description.into(),
            abi: ABI_VERSION,
            build,
            capabilities: self.capabilities,
            devices: self.devices.into(),
        }
    }
}
