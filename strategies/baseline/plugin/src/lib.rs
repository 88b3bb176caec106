//! The baseline strategy, exported as a plugin (`libbellhop_strategy_baseline.so`).

bellhop_plugin_sdk::export_strategy!(bellhop_baseline::Baseline);
