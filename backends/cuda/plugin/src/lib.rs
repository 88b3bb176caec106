//! The CUDA backend (`cuda`), exported as a plugin (`libbellhop_backend_cuda.so`).

bellhop_plugin_sdk::export_backend!(bellhop_cuda::Cuda);
