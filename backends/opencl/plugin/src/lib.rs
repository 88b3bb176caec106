//! The OpenCL backend (`opencl`), exported as a plugin (`libbellhop_backend_opencl.so`).

bellhop_plugin_api::export_backend!(bellhop_opencl::OpenCl);
