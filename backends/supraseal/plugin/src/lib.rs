//! The cuda-supraseal backend, exported as a plugin (`libbellhop_backend_cuda_supraseal.so`).

bellhop_plugin_api::export_backend!(bellhop_supraseal::CudaSupraseal);
