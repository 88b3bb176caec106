//! The cuda-supraseal backend, exported as a plugin (`libbellhop_backend_cuda_supraseal.so`).

bellhop_plugin_sdk::export_backend!(bellhop_supraseal::CudaSupraseal);
