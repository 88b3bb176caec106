//! The CPU backend, exported as a plugin (`libbellhop_backend_cpu.so`).

bellhop_plugin_api::export_backend!(bellhop_cpu::CpuBackend);
