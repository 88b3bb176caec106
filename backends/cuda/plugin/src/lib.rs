//! The CUDA backend (`cuda`), exported as a plugin (`libbellhop_backend_cuda.so`).

bellhop_plugin_api::export_backend!(bellhop_cuda::Cuda);
