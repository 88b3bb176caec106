// The GPU list of Bellhop's CUDA backends, in a translation unit of its own: it defines no
// kernels, so a plugin that links another sppark-based library (cuda-supraseal links
// supraseal-c2) can list GPUs without pulling in the backend's kernels, which would define
// sppark's kernels a second time.

#include <cstring>

#include <util/gpu_t.cuh>
#include <util/rusterror.h>

// What `describe` shows of a GPU.
struct bellhop_gpu_info {
    char name[256];
    size_t memory_bytes;
    uint32_t sm_count;
};

extern "C" size_t bellhop_cuda_device_count()
{
    return ngpus();
}

extern "C" RustError::by_value bellhop_cuda_device_info(size_t index, bellhop_gpu_info* out)
{
    if (index >= ngpus())
        return RustError{cudaErrorInvalidDevice, "no such GPU"};
    const cudaDeviceProp& prop = gpu_props((int)index);
    std::strncpy(out->name, prop.name, sizeof(out->name) - 1);
    out->name[sizeof(out->name) - 1] = 0;
    out->memory_bytes = prop.totalGlobalMem;
    out->sm_count = prop.multiProcessorCount;
    return RustError{cudaSuccess};
}

// The GPU's memory now; it takes no lock, so it answers while the GPU is busy.
extern "C" RustError::by_value bellhop_cuda_device_memory(size_t index, size_t* free, size_t* total)
{
    if (index >= ngpus())
        return RustError{cudaErrorInvalidDevice, "no such GPU"};
    select_gpu((int)index);
    cudaError_t error = cudaMemGetInfo(free, total);
    if (error != cudaSuccess)
        return RustError{error, "cudaMemGetInfo failed"};
    return RustError{cudaSuccess};
}

