//! The CPU backend, exported as a plugin (`libbellhop_backend_cpu.so`).

bellhop_plugin_sdk::export_backend!(bellhop_cpu::CpuBackend);
