//! The OpenCL backend (`opencl`), exported as a plugin (`libbellhop_backend_opencl.so`).

bellhop_plugin_sdk::export_backend!(bellhop_opencl::OpenCl);
