//! The CUDA backend (`cuda-pinned`), exported as a plugin (`libbellhop_backend_cuda_pinned.so`).

bellhop_plugin_sdk::export_backend!(bellhop_cuda::CudaPinned);
