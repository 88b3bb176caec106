//! The [`build_info!`] macro: what a plugin's build script recorded with
//! `bellhop_plugin_build::emit` (the `bellhop-plugin-build` crate).
//!
//! [`build_info!`]: crate::build_info

/// The [`BuildInfo`](crate::BuildInfo) of the crate this macro is expanded in.
#[macro_export]
macro_rules! build_info {
    () => {
        $crate::BuildInfo {
            crate_name: env!("CARGO_PKG_NAME").into(),
            crate_version: env!("CARGO_PKG_VERSION").into(),
            features: option_env!("BELLHOP_BUILD_FEATURES").unwrap_or("").into(),
            target: option_env!("BELLHOP_BUILD_TARGET").unwrap_or("unknown").into(),
            profile: option_env!("BELLHOP_BUILD_PROFILE").unwrap_or("unknown").into(),
            git_revision: match option_env!("BELLHOP_BUILD_GIT") {
                Some(rev) => $crate::__private::abi_stable::std_types::ROption::RSome(rev.into()),
                None => $crate::__private::abi_stable::std_types::ROption::RNone,
            },
        }
    };
}
