// Bellhop's CUDA backend: sppark's Pippenger MSM (G1 and G2) and NTT over BLS12-381, and
// the FFT part of Groth16 on the GPU. Every entry point is `extern "C"`, returns
// sppark's RustError (code + strdup'ed message) and never throws.
//
// GPU memory: the bases and proof_msms' buffers stay within a budget (`device_memory`).
// Bases are kept on the device while they and a proof's buffers fit it; otherwise they stay
// in host memory and each MSM streams them through the GPU in chunks sized to the budget.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>
#include <vector>

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>
#include <ntt/ntt.cuh>

// pippenger.cuh instantiates its kernels for G1 only; the calls below sit in host-only
// code, which the device pass does not see, so G2's kernels are instantiated here.
template __global__
void accumulate<bucket_fp2_t, affine_fp2_t::mem_t>(bucket_fp2_t::mem_t buckets_[], uint32_t nwins, uint32_t wbits,
                                                   affine_fp2_t::mem_t points_[], const vec2d_t<uint32_t> digits,
                                                   const vec2d_t<uint32_t> histogram, uint32_t sid);
template __global__
void batch_addition<bucket_fp2_t>(bucket_fp2_t::mem_t buckets[], const affine_fp2_t::mem_t points[], size_t npoints,
                                  const uint32_t digits[], const uint32_t& ndigits);
template __global__
void integrate<bucket_fp2_t>(bucket_fp2_t::mem_t buckets_[], uint32_t nwins, uint32_t wbits, uint32_t nbits);

__launch_bounds__(1024) __global__
void pointwise_mul(fr_t* a, const fr_t* b, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        a[i] *= b[i];
}

__launch_bounds__(1024) __global__
void pointwise_sub_scale(fr_t* a, const fr_t* c, fr_t z_inv, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        fr_t t = a[i] - c[i];
        a[i] = t * z_inv;
    }
}

// out <- the values[i] whose bit i of `words` is set, in order; offsets[w] counts the set
// bits of the words before w.
__launch_bounds__(1024) __global__
void gather_marked(fr_t* out, const fr_t* values, size_t n, const uint64_t* words, const uint64_t* offsets)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        uint64_t word = words[i / 64];
        uint32_t bit = i % 64;
        if (word >> bit & 1)
            out[offsets[i / 64] + __popcll(word & ((1ull << bit) - 1))] = values[i];
    }
}

#ifndef __CUDA_ARCH__

template<class T> static RustError::by_value failure(const T& e)
{
    return RustError{e.code(), e.what()};
}

#define CATCH_CUDA                                                    \
    catch (const cuda_error& e) { return failure(e); }                \
    catch (const std::bad_alloc&) { return RustError{ENOMEM, "out of host memory"}; }

// A reusable page-locked host buffer: staging for every transfer of the pinned variant.
class pinned_buffer {
    void* ptr = nullptr;
    size_t size = 0;
public:
    ~pinned_buffer() { if (ptr) (void)cudaFreeHost(ptr); }
    template<class T> T* reserve(size_t nelems)
    {
        size_t bytes = nelems * sizeof(T);
        if (bytes > size) {
            if (ptr) CUDA_OK(cudaFreeHost(ptr));
            ptr = nullptr;
            size = 0;
            CUDA_OK(cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable));
            size = bytes;
        }
        return static_cast<T*>(ptr);
    }
};

// Page-locks `bytes` at `p` in place (cudaHostRegister) on the current device's context:
// whether it could. What could not be locked stays pageable: slower, still correct.
static bool page_lock(void* p, size_t bytes)
{
    if (cudaHostRegister(p, bytes, cudaHostRegisterDefault) == cudaSuccess)
        return true;
    (void)cudaGetLastError();
    return false;
}

// Host memory page-locked in place (cudaHostRegister) for as long as it is kept, so that
// its uploads run asynchronously at the bus's speed instead of through the driver's
// pageable staging. A range that cannot be registered stays pageable: slower, still
// correct. Released after the device is idle, since a copy from it may still be running.
class host_registration {
    std::set<void*> ranges;
public:
    // Page-locks `bytes` at `ptr` unless it is already: whether it is locked now (an empty
    // range needs no lock).
    bool add(const void* ptr, size_t bytes)
    {
        void* p = const_cast<void*>(ptr);
        if (bytes == 0 || ranges.count(p))
            return true;
        if (!page_lock(p, bytes))
            return false;
        ranges.insert(p);
        return true;
    }
    bool holds(const void* ptr) const { return ranges.count(const_cast<void*>(ptr)) != 0; }
    // Unlocks the range at `ptr`, if locked, once the device is idle.
    void release(const void* ptr)
    {
        auto it = ranges.find(const_cast<void*>(ptr));
        if (it == ranges.end())
            return;
        (void)cudaDeviceSynchronize();
        (void)cudaHostUnregister(*it);
        ranges.erase(it);
    }
    void release()
    {
        if (ranges.empty())
            return;
        (void)cudaDeviceSynchronize();
        for (void* p: ranges)
            (void)cudaHostUnregister(p);
        ranges.clear();
    }
    ~host_registration() { release(); }
};

// Milliseconds since `start` on the host clock.
static float host_ms_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A call's host memory page-locked in place (cudaHostRegister), so that its uploads run
// asynchronously at the bus's speed instead of through the driver's pageable staging.
// Every range is locked at once, each on a thread of its own; `ready` waits for one just
// before its upload, so that it goes up while the next is still being locked, and
// `uploaded` unlocks it on another thread once its copy is done, while the call goes on.
// A range that cannot be locked stays pageable: slower, still correct. Ranges still locked
// when the set is destroyed (a call that failed) are unlocked after the device is idle,
// since a copy from them may still be running.
class host_locks {
    struct range {
        std::future<bool> locking;
        bool locked = false;
        std::future<void> unlocking;
    };
    int device;
    std::map<const void*, range> ranges;
    float waited_ms = 0;

    // The range at `ptr` once its locking has ended; null if it was never asked for.
    range* settled(const void* ptr)
    {
        auto it = ranges.find(ptr);
        if (it == ranges.end())
            return nullptr;
        range& r = it->second;
        if (r.locking.valid()) {
            auto start = std::chrono::steady_clock::now();
            r.locked = r.locking.get();
            waited_ms += host_ms_since(start);
        }
        return &r;
    }

    // Waits for the range's unlocking, if it was handed over.
    static void unlocked(range& r)
    {
        if (r.unlocking.valid()) {
            r.unlocking.get();
            r.locked = false;
        }
    }

public:
    explicit host_locks(int device) : device(device) {}
    host_locks(const host_locks&) = delete;
    host_locks& operator=(const host_locks&) = delete;

    // Starts locking `bytes` at `ptr` (on this device's context).
    void lock(const void* ptr, size_t bytes)
    {
        if (bytes == 0 || ranges.count(ptr))
            return;
        void* p = const_cast<void*>(ptr);
        int dev = device;
        try {
            ranges[ptr].locking = std::async(std::launch::async, [p, bytes, dev] {
                return cudaSetDevice(dev) == cudaSuccess && page_lock(p, bytes);
            });
        } catch (const std::system_error&) {
            // No thread: the range stays pageable.
        }
    }

    // Waits until the range at `ptr` is locked (or could not be); any other pointer passes.
    void ready(const void* ptr) { settled(ptr); }

    // Unlocks the range at `ptr` once what `s` has been given so far (its upload) is done.
    void uploaded(const void* ptr, stream_t& s)
    {
        range* r = settled(ptr);
        if (!r || !r->locked || r->unlocking.valid())
            return;
        cudaEvent_t copied;
        CUDA_OK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
        cudaError_t recorded = cudaEventRecord(copied, s);
        if (recorded != cudaSuccess) {
            (void)cudaEventDestroy(copied);
            CUDA_OK(recorded);
        }
        void* p = const_cast<void*>(ptr);
        int dev = device;
        try {
            r->unlocking = std::async(std::launch::async, [p, copied, dev] {
                (void)cudaSetDevice(dev);
                (void)cudaEventSynchronize(copied);
                (void)cudaEventDestroy(copied);
                (void)cudaHostUnregister(p);
            });
        } catch (const std::system_error&) {
            // No thread: the range stays locked until the set is destroyed.
            (void)cudaEventDestroy(copied);
        }
    }

    // Waits for every unlocking to end; the milliseconds the call waited on locks in all.
    float finish()
    {
        auto start = std::chrono::steady_clock::now();
        for (auto& r: ranges)
            unlocked(r.second);
        return waited_ms + host_ms_since(start);
    }

    ~host_locks()
    {
        bool idle = false;
        for (auto& entry: ranges) {
            range& r = entry.second;
            if (r.locking.valid())
                r.locked = r.locking.get();
            unlocked(r);
            if (r.locked) {
                if (!idle)
                    (void)cudaDeviceSynchronize();
                idle = true;
                (void)cudaHostUnregister(const_cast<void*>(entry.first));
            }
        }
    }
};

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> msm_g1_t;
typedef msm_t<bucket_fp2_t, point_fp2_t, affine_fp2_t, scalar_t> msm_g2_t;

// Kept bases: a host slice the host promised to leave unchanged, and its device copy while
// the budget holds it (`msm`, `bytes`); without one its MSMs stream it from host memory.
template<class msm_type> struct kept_t {
    size_t npoints;
    std::unique_ptr<msm_type> msm;
    size_t bytes;
};

static uint32_t lg2(size_t n)
{
    uint32_t r = 0;
    while (n >>= 1)
        r++;
    return r;
}

// The device bytes of sppark's (0.1.16) MSMs, as its msm_t allocates them, for planning
// within the budget; `bucket` and `affine` are the group's bucket and affine types.
template<class bucket, class affine> struct msm_bytes {
    static size_t round(size_t n) { return (n + WARP_SZ - 1) & ~(size_t)(WARP_SZ - 1); }
    // msm_t's window: from the points it was built for.
    static uint32_t wbits(size_t np)
    {
        size_t n = round(np);
        if (n > 192)
            return std::max(std::min(lg2(n + n / 2) - 8, 18u), 10u);
        return n > 0 ? 10 : 17;
    }
    static uint32_t nwins(size_t np) { return (scalar_t::bit_length() - 1) / wbits(np) + 1; }
    // An msm_t built for `np` points: its buckets and histogram, and the points if uploaded.
    static size_t built(size_t np, bool with_points, int sm_count)
    {
        size_t row = (size_t)1 << (wbits(np) - 1), windows = nwins(np) * row;
        size_t buckets = windows + (size_t)sm_count * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
        return buckets * sizeof(typename bucket::mem_t) + windows * sizeof(uint32_t) +
               (with_points ? round(np) * sizeof(typename affine::mem_t) : 0);
    }
    // The temporaries of one invoke over `np` points of an msm_t built for `built_for`:
    // points resident or streamed from the host, scalars on the device or the host.
    static size_t invoke(size_t built_for, size_t np, bool host_points, bool host_scalars = false)
    {
        uint32_t w = wbits(built_for);
        size_t batch = std::max<size_t>(((size_t)1 << (std::max(lg2(np + np / 2), w) - w)) >> 6, 1);
        size_t stride = round((np + batch - 1) / batch);
        return stride * std::max(2 * sizeof(uint2), host_scalars ? sizeof(fr_t) : 0) +
               nwins(built_for) * stride * sizeof(uint32_t) +
               (host_points ? (batch > 1 ? 2 : 1) * stride * sizeof(typename affine::mem_t) : 0);
    }
    // One streamed chunk of `np` points, with a sixteenth and 2 MiB over for the allocator.
    static size_t streamed(size_t np, bool host_scalars, int sm_count)
    {
        size_t total = built(np, false, sm_count) + invoke(np, np, true, host_scalars);
        return total + total / 16 + ((size_t)2 << 20);
    }
};
typedef msm_bytes<bucket_t, affine_t> g1_bytes;
typedef msm_bytes<bucket_fp2_t, affine_fp2_t> g2_bytes;

static size_t mib(size_t bytes)
{
    return (bytes + ((size_t)1 << 20) - 1) >> 20;
}

class ntt_ops : public NTT {
public:
    using NTT::NTT_internal;
};

// One opened GPU. Calls are serialized: sppark's msm_t and streams are not re-entrant.
struct bellhop_cuda {
    bellhop_cuda(int device, bool pinned, bool register_host, size_t budget, size_t chunk_cap)
        : device(device), pinned(pinned), register_host(register_host), budget(budget), chunk_cap(chunk_cap),
          transfers(device) {}

    int device;
    bool pinned;
    // proof_msms page-locks a, b, c and aux in place for its call (host_locks), and bases
    // that stream from the host stay page-locked while kept (host_registration).
    bool register_host;
    // The most device memory the kept bases and one call's buffers may take
    // (device_memory less the CUDA context).
    size_t budget;
    // The most points of one streamed MSM chunk; 0: as many as the budget allows. Set,
    // the bases always stream.
    size_t chunk_cap;
    std::mutex lock;
    // Page-locked staging: one per stream of compute_h, so that its three uploads can
    // overlap, and one for proof_msms' variables.
    pinned_buffer staging[4];
    // proof_msms' variables go up and are gathered here while h is computed on gpu[0..2].
    stream_t transfers;
    std::map<const void*, kept_t<msm_g1_t>> kept_g1;
    std::map<const void*, kept_t<msm_g2_t>> kept_g2;
    // Kept bases that stream from the host, page-locked once (with register_host).
    host_registration streamed_bases;
    // Host memory the host keeps for proofs (keep_host_memory), page-locked until
    // released (with register_host): proof_msms neither locks nor unlocks it.
    host_registration kept_host;

    const gpu_t& gpu() const { return select_gpu(device); }

    size_t kept_bytes() const
    {
        size_t total = 0;
        for (auto& k: kept_g1)
            total += k.second.bytes;
        for (auto& k: kept_g2)
            total += k.second.bytes;
        return total;
    }

    // What the budget leaves beside the kept bases and `used` bytes of buffers.
    size_t room(size_t used) const
    {
        size_t taken = kept_bytes() + used;
        return budget > taken ? budget - taken : 0;
    }

    // Frees the kept bases' device copies: from now on their MSMs stream them.
    template<class Kept, class affine> void stream_kept(Kept& kept)
    {
        for (auto& k: kept) {
            if (!k.second.msm)
                continue;
            k.second.msm.reset();
            k.second.bytes = 0;
            if (register_host)
                streamed_bases.add(k.first, k.second.npoints * sizeof(affine));
        }
    }
    void stream_all_kept()
    {
        stream_kept<decltype(kept_g1), affine_t>(kept_g1);
        stream_kept<decltype(kept_g2), affine_fp2_t>(kept_g2);
    }

    [[noreturn]] void too_small(const char* what, size_t needed) const
    {
        throw cuda_error(cudaErrorMemoryAllocation,
                         fmt("device_memory, less the CUDA context, (%zu MiB) is too small: %s needs at least %zu MiB of the GPU; raise "
                             "[backend.options] device_memory, or leave it out to use the card's free memory",
                             mib(budget), what, mib(needed)));
    }

    // out <- the MSM of `npoints` host `points` in chunks within `room` bytes, each chunk
    // run by `invoke(msm, part, offset, count)` with its points streamed from the host.
    template<class bucket, class point, class affine, class Invoke>
    void msm_chunked(point& out, size_t npoints, bool host_scalars, size_t room, Invoke invoke)
    {
        typedef msm_bytes<bucket, affine> bytes;
        out.inf();
        if (npoints == 0)
            return;
        int sm_count = gpu().sm_count();
        auto fits = [&](size_t np) { return bytes::streamed(np, host_scalars, sm_count) <= room; };
        size_t chunk = chunk_cap ? std::min(chunk_cap, npoints) : npoints;
        if (!fits(chunk)) {
            // The largest that fits (lo fits, hi does not; 0: not even one point).
            size_t lo = 0, hi = chunk;
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                (fits(mid) ? lo : hi) = mid;
            }
            if (lo == 0)
                too_small("an MSM streaming its bases", budget - room + bytes::streamed(1, host_scalars, sm_count));
            chunk = lo;
        }
        for (size_t offset = 0; offset < npoints; offset += chunk) {
            size_t count = std::min(chunk, npoints - offset);
            msm_t<bucket, point, affine, fr_t> msm{nullptr, count, sizeof(affine), device};
            point part;
            RustError e = invoke(msm, part, offset, count);
            if (e.code != cudaSuccess)
                throw cuda_error(e.code, "sppark's MSM failed");
            out.add(part);
        }
    }

    // The pinned variant copies host data into page-locked staging first.
    template<class T> const T* stage(const T* src, size_t nelems)
    {
        if (!pinned || nelems == 0)
            return src;
        T* dst = staging[0].reserve<T>(nelems);
        std::memcpy(dst, src, nelems * sizeof(T));
        return dst;
    }

    // The resident copy of `points` if the host kept them and it covers `npoints`, else null.
    template<class Kept> static auto resident(Kept& kept, const void* points, size_t npoints)
    {
        auto it = kept.find(points);
        return it != kept.end() && npoints <= it->second.npoints ? it->second.msm.get() : nullptr;
    }

    template<class bucket, class point, class affine, class Kept>
    RustError::by_value msm(Kept& kept, point* out, const affine* points, size_t npoints, const fr_t* scalars)
    {
        std::lock_guard<std::mutex> guard(lock);
        try {
            if (npoints == 0) {
                out->inf();
                return RustError{cudaSuccess};
            }
            if (auto kept_msm = resident(kept, points, npoints))
                // Null points: the msm_t's resident copy.
                return kept_msm->invoke(*out, (const affine*)nullptr, npoints, stage(scalars, npoints), true);
            if (!pinned) {
                // Points and scalars stream from the host, chunk by chunk (a chunk of
                // scalars is no larger than its points).
                msm_chunked<bucket, point, affine>(*out, npoints, true, room(0), [&](auto& msm, point& part,
                                                                                     size_t at, size_t count) {
                    return msm.invoke(part, slice_t<affine>{points + at, count}, scalars + at, true);
                });
                return RustError{cudaSuccess};
            }
            msm_t<bucket, point, affine, fr_t> msm{nullptr, npoints, sizeof(affine), device};
            // Points and scalars share one staging buffer.
            size_t point_words = npoints * sizeof(affine), scalar_words = npoints * sizeof(fr_t);
            uint8_t* buf = staging[0].reserve<uint8_t>(point_words + scalar_words);
            std::memcpy(buf, points, point_words);
            std::memcpy(buf + point_words, scalars, scalar_words);
            return msm.invoke(*out, slice_t<affine>{(const affine*)buf, npoints}, (const fr_t*)(buf + point_words),
                              true);
        }
        CATCH_CUDA
    }

    // out <- the MSM of the first `npoints` of `points` and of device-resident `d_scalars`;
    // bases not kept are uploaded for this call. Runs under `lock`; throws on failure.
    template<class msm_type, class point, class affine, class Kept>
    void msm_on_device(Kept& kept, point& out, const affine* points, size_t npoints, fr_t* d_scalars)
    {
        if (npoints == 0) {
            out.inf();
            return;
        }
        std::unique_ptr<msm_type> uploaded;
        msm_type* msm = resident(kept, points, npoints);
        if (!msm) {
            uploaded = std::make_unique<msm_type>(points, npoints, sizeof(affine), device);
            gpu().sync();
            msm = uploaded.get();
        }
        // Null points: the msm_t's resident copy; a device pointer: scalars already there.
        RustError e = msm->invoke(out, (const affine*)nullptr, npoints, dev_ptr_t<fr_t>(d_scalars), true);
        if (e.code != cudaSuccess)
            throw cuda_error(e.code, "sppark's MSM failed");
    }

    // out <- the MSM of the first `npoints` of host `points` and of device-resident
    // `d_scalars`, the points streamed in chunks within `room` bytes. Throws on failure.
    template<class bucket, class point, class affine>
    void msm_streamed(point& out, const affine* points, size_t npoints, fr_t* d_scalars, size_t room)
    {
        msm_chunked<bucket, point, affine>(out, npoints, false, room, [&](auto& msm, point& part, size_t at,
                                                                          size_t count) {
            // A device pointer: the scalars are there already.
            return msm.invoke(part, points + at, count, dev_ptr_t<fr_t>(d_scalars + at), true);
        });
    }

    // The device bytes of the MSM of `npoints` of `points` on the resident path: an
    // invoke's temporaries, and the bases themselves where they are not kept.
    template<class bytes, class Kept> size_t resident_msm_bytes(Kept& kept, const void* points, size_t npoints)
    {
        if (npoints == 0)
            return 0;
        auto it = kept.find(points);
        if (it != kept.end() && it->second.msm && npoints <= it->second.npoints)
            return bytes::invoke(it->second.npoints, npoints, false);
        return bytes::built(npoints, true, gpu().sm_count()) + bytes::invoke(npoints, npoints, false);
    }

    template<class msm_type, class bytes, class affine, class Kept>
    RustError::by_value keep(Kept& kept, const affine* points, size_t npoints)
    {
        std::lock_guard<std::mutex> guard(lock);
        try {
            if (npoints == 0 || kept.count(points))
                return RustError{cudaSuccess};
            size_t size = bytes::built(npoints, true, gpu().sm_count());
            if (chunk_cap || size > room(0)) {
                // Beyond the budget: its MSMs stream it from the host.
                kept[points] = {npoints, nullptr, 0};
                if (register_host)
                    streamed_bases.add(points, npoints * sizeof(affine));
                return RustError{cudaSuccess};
            }
            const affine* src = stage(points, npoints);
            kept[points] = {npoints, std::make_unique<msm_type>(src, npoints, sizeof(affine), device), size};
            // msm_t's constructor uploads asynchronously; from page-locked staging the copy
            // reads the buffer while it runs, and the next call refills that buffer.
            gpu().sync();
            return RustError{cudaSuccess};
        }
        CATCH_CUDA
    }
};

extern "C" RustError::by_value bellhop_cuda_open(int device, bool pinned, bool register_host, size_t budget,
                                                 size_t chunk_cap, bellhop_cuda** out)
{
    try {
        if (ngpus() == 0)
            return RustError{cudaErrorNoDevice, "no CUDA GPU is visible (no device, or no NVIDIA driver)"};
        if (device < 0 || (size_t)device >= ngpus())
            return RustError{cudaErrorInvalidDevice, "no such GPU"};
        select_gpu(device);
        *out = new bellhop_cuda(device, pinned, register_host, budget, chunk_cap);
        return RustError{cudaSuccess};
    }
    CATCH_CUDA
}

extern "C" void bellhop_cuda_close(bellhop_cuda* ctx)
{
    delete ctx;
}

extern "C" RustError::by_value bellhop_cuda_msm_g1(bellhop_cuda* ctx, point_t* out, const affine_t* points,
                                                   size_t npoints, const fr_t* scalars)
{
    return ctx->msm<bucket_t, point_t, affine_t>(ctx->kept_g1, out, points, npoints, scalars);
}

extern "C" RustError::by_value bellhop_cuda_msm_g2(bellhop_cuda* ctx, point_fp2_t* out, const affine_fp2_t* points,
                                                   size_t npoints, const fr_t* scalars)
{
    return ctx->msm<bucket_fp2_t, point_fp2_t, affine_fp2_t>(ctx->kept_g2, out, points, npoints, scalars);
}

extern "C" RustError::by_value bellhop_cuda_keep_g1(bellhop_cuda* ctx, const affine_t* points, size_t npoints)
{
    return ctx->keep<msm_g1_t, g1_bytes>(ctx->kept_g1, points, npoints);
}

extern "C" RustError::by_value bellhop_cuda_keep_g2(bellhop_cuda* ctx, const affine_fp2_t* points, size_t npoints)
{
    return ctx->keep<msm_g2_t, g2_bytes>(ctx->kept_g2, points, npoints);
}

extern "C" void bellhop_cuda_release(bellhop_cuda* ctx)
{
    std::lock_guard<std::mutex> guard(ctx->lock);
    ctx->kept_g1.clear();
    ctx->kept_g2.clear();
    ctx->streamed_bases.release();
}

// Page-locks the `n` host ranges `ranges[i]` of `lens[i]` scalars until released (with
// register_host): `*kept` says whether all are. If one cannot be, none stays locked.
extern "C" RustError::by_value bellhop_cuda_keep_host(bellhop_cuda* ctx, const fr_t* const* ranges,
                                                      const size_t* lens, size_t n, bool* kept)
{
    std::lock_guard<std::mutex> guard(ctx->lock);
    try {
        *kept = false;
        if (!ctx->register_host)
            return RustError{cudaSuccess};
        CUDA_OK(cudaSetDevice(ctx->device));
        std::vector<const fr_t*> added;
        for (size_t i = 0; i < n; i++) {
            bool held = ctx->kept_host.holds(ranges[i]);
            if (!ctx->kept_host.add(ranges[i], lens[i] * sizeof(fr_t))) {
                for (const fr_t* p: added)
                    ctx->kept_host.release(p);
                return RustError{cudaSuccess};
            }
            if (!held)
                added.push_back(ranges[i]);
        }
        *kept = true;
        return RustError{cudaSuccess};
    }
    CATCH_CUDA
}

// Unlocks the `n` kept host ranges starting at `ranges[i]`, once the device is idle.
extern "C" void bellhop_cuda_release_host(bellhop_cuda* ctx, const fr_t* const* ranges, size_t n)
{
    std::lock_guard<std::mutex> guard(ctx->lock);
    (void)cudaSetDevice(ctx->device);
    for (size_t i = 0; i < n; i++)
        ctx->kept_host.release(ranges[i]);
}

// Copies `n` elements from host `src` to device `dst` on `stream`, through staging when pinned.
static void upload(bellhop_cuda* ctx, stream_t& stream, fr_t* dst, const fr_t* src, size_t n, pinned_buffer& staging)
{
    if (ctx->pinned) {
        fr_t* buf = staging.reserve<fr_t>(n);
        std::memcpy(buf, src, n * sizeof(fr_t));
        stream.HtoD(dst, buf, n);
    } else {
        stream.HtoD(dst, src, n);
    }
}

static void download(bellhop_cuda* ctx, stream_t& stream, fr_t* dst, const fr_t* src, size_t n)
{
    if (ctx->pinned) {
        fr_t* buf = ctx->staging[0].reserve<fr_t>(n);
        stream.DtoH(buf, src, n);
        stream.sync();
        std::memcpy(dst, buf, n * sizeof(fr_t));
    } else {
        stream.DtoH(dst, src, n);
        stream.sync();
    }
}

// direction: 0 forward, 1 inverse; coset: 0 standard, 1 on the coset g·<ω>.
extern "C" RustError::by_value bellhop_cuda_ntt(bellhop_cuda* ctx, fr_t* values, uint32_t lg_n, int inverse,
                                                int coset)
{
    // One point: every transform is the identity (g^0 = ω^0 = 1), and sppark's kernels
    // need at least two.
    if (lg_n == 0)
        return RustError{cudaSuccess};
    std::lock_guard<std::mutex> guard(ctx->lock);
    try {
        const gpu_t& gpu = ctx->gpu();
        size_t n = (size_t)1 << lg_n;
        dev_ptr_t<fr_t> d(n, gpu[0]);
        upload(ctx, gpu[0], &d[0], values, n, ctx->staging[0]);
        ntt_ops::NTT_internal(&d[0], lg_n, NTT::InputOutputOrder::NN,
                              inverse ? NTT::Direction::inverse : NTT::Direction::forward,
                              coset ? NTT::Type::coset : NTT::Type::standard, gpu[0]);
        download(ctx, gpu[0], values, &d[0], n);
        return RustError{cudaSuccess};
    }
    CATCH_CUDA
}

// 1 / Z on the coset: 1 / (g^n - 1), g the coset generator.
static fr_t z_inverse(uint32_t lg_n)
{
    fr_t z_inv = group_gen;
    for (uint32_t i = 0; i < lg_n; i++)
        z_inv ^= 2;
    return (z_inv - fr_t::one()).reciprocal();
}

// d <- `values`' first `m` (zeros up to 2^lg_n) on `s`, from evaluations to the coset:
// iNTT, then coset NTT. `values` goes up once `locks` has it page-locked, if it locks it.
static void to_coset(bellhop_cuda* ctx, stream_t& s, fr_t* d, const fr_t* values, size_t m, uint32_t lg_n,
                     pinned_buffer& staging, host_locks& locks)
{
    locks.ready(values);
    upload(ctx, s, d, values, m, staging);
    locks.uploaded(values, s);
    // Zero is all-zero bits in Montgomery form too.
    s.bzero(d + m, ((size_t)1 << lg_n) - m);
    ntt_ops::NTT_internal(d, lg_n, NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::standard, s);
    ntt_ops::NTT_internal(d, lg_n, NTT::InputOutputOrder::RN, NTT::Direction::forward, NTT::Type::coset, s);
}

// d_abc[0] <- h's coefficients: host[i]'s first `m` values go up to d_abc[i] (zeros up to
// 2^lg_n), each on its own stream so that uploads overlap transforms; then iNTT, coset
// NTT, (a·b - c) / Z and the coset iNTT. marks[0..3] are recorded on gpu[0] at the start,
// after the transforms, after the pointwise pass and after the coset iNTT. lg_n > 0.
static void h_on_device(bellhop_cuda* ctx, fr_t* const d_abc[3], const fr_t* const host[3], size_t m,
                        uint32_t lg_n, cudaEvent_t marks[4], host_locks& locks)
{
    const gpu_t& gpu = ctx->gpu();
    size_t n = (size_t)1 << lg_n;
    CUDA_OK(cudaEventRecord(marks[0], gpu[0]));
    for (int i = 0; i < 3; i++) {
        stream_t& s = gpu[i];
        if (i > 0)
            CUDA_OK(cudaStreamWaitEvent(s, marks[0], 0));
        to_coset(ctx, s, d_abc[i], host[i], m, lg_n, ctx->staging[i], locks);
    }
    event_t done_b(gpu[1]), done_c(gpu[2]);
    done_b.wait(gpu[0]);
    done_c.wait(gpu[0]);
    CUDA_OK(cudaEventRecord(marks[1], gpu[0]));
    int sm_count = gpu.sm_count();
    pointwise_mul<<<sm_count, 1024, 0, gpu[0]>>>(d_abc[0], d_abc[1], n);
    CUDA_OK(cudaGetLastError());
    pointwise_sub_scale<<<sm_count, 1024, 0, gpu[0]>>>(d_abc[0], d_abc[2], z_inverse(lg_n), n);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaEventRecord(marks[2], gpu[0]));
    ntt_ops::NTT_internal(d_abc[0], lg_n, NTT::InputOutputOrder::NN, NTT::Direction::inverse, NTT::Type::coset,
                          gpu[0]);
    CUDA_OK(cudaEventRecord(marks[3], gpu[0]));
}

// h_on_device in two device buffers instead of three, for small budgets: a and b are
// transformed on streams of their own and multiplied into d_a, then c goes up into d_b.
// The marks as in h_on_device, but for a·b, which falls between marks 0 and 1.
static void h_in_two_buffers(bellhop_cuda* ctx, fr_t* d_a, fr_t* d_b, const fr_t* const host[3], size_t m,
                             uint32_t lg_n, cudaEvent_t marks[4], host_locks& locks)
{
    const gpu_t& gpu = ctx->gpu();
    size_t n = (size_t)1 << lg_n;
    CUDA_OK(cudaEventRecord(marks[0], gpu[0]));
    CUDA_OK(cudaStreamWaitEvent(gpu[1], marks[0], 0));
    to_coset(ctx, gpu[0], d_a, host[0], m, lg_n, ctx->staging[0], locks);
    to_coset(ctx, gpu[1], d_b, host[1], m, lg_n, ctx->staging[1], locks);
    event_t done_b(gpu[1]);
    done_b.wait(gpu[0]);
    int sm_count = gpu.sm_count();
    pointwise_mul<<<sm_count, 1024, 0, gpu[0]>>>(d_a, d_b, n);
    CUDA_OK(cudaGetLastError());
    event_t product(gpu[0]);
    product.wait(gpu[1]);
    // c's own staging: b's copy may still be reading the buffer b went through.
    to_coset(ctx, gpu[1], d_b, host[2], m, lg_n, ctx->staging[2], locks);
    event_t done_c(gpu[1]);
    done_c.wait(gpu[0]);
    CUDA_OK(cudaEventRecord(marks[1], gpu[0]));
    pointwise_sub_scale<<<sm_count, 1024, 0, gpu[0]>>>(d_a, d_b, z_inverse(lg_n), n);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaEventRecord(marks[2], gpu[0]));
    ntt_ops::NTT_internal(d_a, lg_n, NTT::InputOutputOrder::NN, NTT::Direction::inverse, NTT::Type::coset, gpu[0]);
    CUDA_OK(cudaEventRecord(marks[3], gpu[0]));
}

// CUDA events for timing, destroyed with the set.
struct event_marks {
    std::vector<cudaEvent_t> events;
    explicit event_marks(size_t n) : events(n, nullptr)
    {
        for (auto& e: events)
            CUDA_OK(cudaEventCreate(&e));
    }
    ~event_marks()
    {
        for (auto e: events)
            if (e)
                (void)cudaEventDestroy(e);
    }
    cudaEvent_t& operator[](size_t i) { return events[i]; }
    // Milliseconds from mark `from` to mark `to`, both completed.
    float ms(size_t from, size_t to)
    {
        float t;
        CUDA_OK(cudaEventElapsedTime(&t, events[from], events[to]));
        return t;
    }
};

// Milliseconds the GPU spent in each part of `compute_h`.
struct bellhop_h_timings {
    float upload_ntt_ms, pointwise_ms, intt_ms, download_ms;
};

// a, b, c <- coset NTT(iNTT(.)); a <- (a·b - c) / Z; a <- coset iNTT(a) (h_on_device);
// only a returns.
extern "C" RustError::by_value bellhop_cuda_compute_h(bellhop_cuda* ctx, fr_t* a, const fr_t* b, const fr_t* c,
                                                      uint32_t lg_n, bellhop_h_timings* timings)
{
    std::lock_guard<std::mutex> guard(ctx->lock);
    try {
        if (lg_n == 0) {
            // One point: the transforms are the identity; the rest is one field operation.
            a[0] = (a[0] * b[0] - c[0]) * z_inverse(0);
            *timings = bellhop_h_timings{0, 0, 0, 0};
            return RustError{cudaSuccess};
        }
        const gpu_t& gpu = ctx->gpu();
        size_t n = (size_t)1 << lg_n;
        dev_ptr_t<fr_t> d(3 * n, gpu[0]);
        fr_t* const d_abc[3] = {&d[0], &d[n], &d[2 * n]};
        const fr_t* const host[3] = {a, b, c};
        event_marks marks(5);
        host_locks none(ctx->device);
        h_on_device(ctx, d_abc, host, n, lg_n, &marks[0], none);
        download(ctx, gpu[0], a, d_abc[0], n);
        CUDA_OK(cudaEventRecord(marks[4], gpu[0]));
        CUDA_OK(cudaEventSynchronize(marks[4]));
        *timings = bellhop_h_timings{marks.ms(0, 1), marks.ms(1, 2), marks.ms(2, 3), marks.ms(3, 4)};
        return RustError{cudaSuccess};
    }
    CATCH_CUDA
}

// Which of a proof's variables (inputs, then aux) an MSM takes: a bitmap, and per 64-bit
// word the number of set bits before it.
struct bellhop_selection {
    const uint64_t* words;
    const uint64_t* offsets;
    size_t count;
};

// One proof's assignment and the bases its MSMs run over (host memory).
struct bellhop_proof_input {
    const fr_t *a, *b, *c;
    size_t constraints;
    uint32_t lg_n;
    const fr_t* inputs;
    size_t ninputs;
    const fr_t* aux;
    size_t naux;
    bellhop_selection select_a, select_b;
    const affine_t *h_bases, *l_bases, *a_bases, *b_g1_bases;
    const affine_fp2_t* b_g2_bases;
};

// Milliseconds of each part of proof_msms, in this order: GPU time between events, but for
// T_PAGE_LOCKS (what the call waited for a, b, c and aux to be page-locked before their
// uploads and unlocked at its end: host_locks) and T_CALL (the call up to freeing its
// device buffers), which are host time.
enum {
    T_UPLOAD_NTT, T_POINTWISE, T_INTT, T_VARIABLES, T_MSM_H, T_MSM_L, T_MSM_A, T_MSM_B_G1, T_MSM_B_G2,
    T_PAGE_LOCKS, T_CALL, T_COUNT
};

struct bellhop_proof_output {
    point_t h, l, a, b_g1;
    point_fp2_t b_g2;
    float ms[T_COUNT];
    // Whether the bases streamed from the host (the budget held too little to keep them).
    bool streamed;
};

// Marks 0-3: the h transforms (h_on_device); 4-5: the variables' upload; then a pair
// around each of the five MSMs.
static const size_t PROOF_MARKS = 6 + 2 * 5;

// Runs each MSM of a proof between two events on `stream`, their marks from `next` on.
struct timed_msms {
    event_marks& marks;
    stream_t& stream;
    size_t next;
    template<class Run> void operator()(Run run)
    {
        CUDA_OK(cudaEventRecord(marks[next], stream));
        run();
        CUDA_OK(cudaEventRecord(marks[next + 1], stream));
        CUDA_OK(cudaEventSynchronize(marks[next + 1]));
        next += 2;
    }
};

// The device bytes of a proof on the resident path: a, b and c, the variables and the
// gathered scalars at once, and the largest of its MSMs.
static size_t resident_proof_bytes(bellhop_cuda* ctx, const bellhop_proof_input* in)
{
    size_t nvars = in->ninputs + in->naux, nwords = (nvars + 63) / 64;
    size_t n = (size_t)1 << in->lg_n;
    size_t buffers = ((in->lg_n ? 3 * n : 0) + nvars + in->select_a.count + in->select_b.count) * sizeof(fr_t) +
                     4 * nwords * sizeof(uint64_t);
    size_t msms = std::max({
        ctx->resident_msm_bytes<g1_bytes>(ctx->kept_g1, in->h_bases, in->lg_n ? n - 1 : 0),
        ctx->resident_msm_bytes<g1_bytes>(ctx->kept_g1, in->l_bases, in->naux),
        ctx->resident_msm_bytes<g1_bytes>(ctx->kept_g1, in->a_bases, in->select_a.count),
        ctx->resident_msm_bytes<g1_bytes>(ctx->kept_g1, in->b_g1_bases, in->select_b.count),
        ctx->resident_msm_bytes<g2_bytes>(ctx->kept_g2, in->b_g2_bases, in->select_b.count),
    });
    return buffers + msms;
}

// Uploads the selection's bitmap and offsets into `words` (2 * nwords) and gathers the
// marked variables into `out`, on `s`.
static void gather(bellhop_cuda* ctx, stream_t& s, fr_t* out, const fr_t* d_vars, size_t nvars,
                   const bellhop_selection& selection, uint64_t* words)
{
    size_t nwords = (nvars + 63) / 64;
    uint64_t* offsets = words + nwords;
    s.HtoD(words, selection.words, nwords);
    s.HtoD(offsets, selection.offsets, nwords);
    if (selection.count)
        gather_marked<<<ctx->gpu().sm_count(), 1024, 0, s>>>(out, d_vars, nvars, words, offsets);
    CUDA_OK(cudaGetLastError());
}

// The variables (inputs, then aux) up into `d_vars` on `s`, aux once `locks` has it
// page-locked, if it locks it.
static void upload_variables(bellhop_cuda* ctx, stream_t& s, fr_t* d_vars, const bellhop_proof_input* in,
                             host_locks& locks)
{
    // The inputs are small: straight from pageable memory.
    s.HtoD(d_vars, in->inputs, in->ninputs);
    locks.ready(in->aux);
    upload(ctx, s, d_vars + in->ninputs, in->aux, in->naux, ctx->staging[3]);
    locks.uploaded(in->aux, s);
}

// The proof with every buffer on the device at once and the bases resident (or uploaded
// whole for their MSM): a, b and c go up and h is computed (h_on_device) while the
// variables go up on the transfer stream and the A and B scalars are gathered there; the
// MSMs then read h, aux and the gathered scalars where they lie.
static void proof_resident(bellhop_cuda* ctx, const bellhop_proof_input* in, bellhop_proof_output* out,
                           event_marks& marks, host_locks& locks)
{
    const gpu_t& gpu = ctx->gpu();
    stream_t& vs = ctx->transfers;
    size_t n = (size_t)1 << in->lg_n;
    size_t nvars = in->ninputs + in->naux, nwords = (nvars + 63) / 64;

    dev_ptr_t<fr_t> d_abc(in->lg_n ? 3 * n : 0, gpu[0]);
    if (in->lg_n) {
        fr_t* const d[3] = {&d_abc[0], &d_abc[n], &d_abc[2 * n]};
        const fr_t* const host[3] = {in->a, in->b, in->c};
        h_on_device(ctx, d, host, in->constraints, in->lg_n, &marks[0], locks);
    }

    CUDA_OK(cudaEventRecord(marks[4], vs));
    dev_ptr_t<fr_t> d_vars(nvars, vs);
    dev_ptr_t<uint64_t> d_select(4 * nwords, vs);
    dev_ptr_t<fr_t> d_a(in->select_a.count, vs), d_b(in->select_b.count, vs);
    upload_variables(ctx, vs, d_vars.data(), in, locks);
    gather(ctx, vs, d_a.data(), d_vars.data(), nvars, in->select_a, &d_select[0]);
    gather(ctx, vs, d_b.data(), d_vars.data(), nvars, in->select_b, &d_select[2 * nwords]);
    CUDA_OK(cudaEventRecord(marks[5], vs));
    vs.sync();
    gpu.sync();

    timed_msms timed{marks, gpu[2], 6};
    timed([&] {
        if (in->lg_n)
            ctx->msm_on_device<msm_g1_t>(ctx->kept_g1, out->h, in->h_bases, n - 1, d_abc.data());
        else
            out->h.inf();
    });
    timed([&] { ctx->msm_on_device<msm_g1_t>(ctx->kept_g1, out->l, in->l_bases, in->naux, d_vars.data() + in->ninputs); });
    timed([&] { ctx->msm_on_device<msm_g1_t>(ctx->kept_g1, out->a, in->a_bases, in->select_a.count, d_a.data()); });
    timed([&] { ctx->msm_on_device<msm_g1_t>(ctx->kept_g1, out->b_g1, in->b_g1_bases, in->select_b.count, d_b.data()); });
    timed([&] {
        ctx->msm_on_device<msm_g2_t>(ctx->kept_g2, out->b_g2, in->b_g2_bases, in->select_b.count, d_b.data());
    });
}

// The proof within a budget too small for proof_resident: h in two buffers, then each
// MSM in turn with only what it reads on the device (h; the variables and, for A and B,
// their gathered scalars), its bases streamed from the host in chunks that fit beside them.
static void proof_streamed(bellhop_cuda* ctx, const bellhop_proof_input* in, bellhop_proof_output* out,
                           event_marks& marks, host_locks& locks)
{
    const gpu_t& gpu = ctx->gpu();
    stream_t& vs = ctx->transfers;
    size_t n = (size_t)1 << in->lg_n;
    size_t nvars = in->ninputs + in->naux, nwords = (nvars + 63) / 64;
    const size_t S = sizeof(fr_t);
    timed_msms timed{marks, gpu[2], 6};
    {
        dev_ptr_t<fr_t> d_h(in->lg_n ? n : 0, gpu[0]);
        if (in->lg_n) {
            if (ctx->room(0) < 2 * n * S)
                ctx->too_small("computing h", ctx->budget - ctx->room(0) + 2 * n * S);
            dev_ptr_t<fr_t> d_bc(n, gpu[0]);
            const fr_t* const host[3] = {in->a, in->b, in->c};
            h_in_two_buffers(ctx, d_h.data(), d_bc.data(), host, in->constraints, in->lg_n, &marks[0], locks);
            gpu.sync();
        }
        timed([&] {
            if (in->lg_n)
                ctx->msm_streamed<bucket_t>(out->h, in->h_bases, n - 1, d_h.data(), ctx->room(n * S));
            else
                out->h.inf();
        });
    }

    CUDA_OK(cudaEventRecord(marks[4], vs));
    dev_ptr_t<fr_t> d_vars(nvars, vs);
    dev_ptr_t<uint64_t> d_select(2 * nwords, vs);
    upload_variables(ctx, vs, d_vars.data(), in, locks);
    CUDA_OK(cudaEventRecord(marks[5], vs));
    vs.sync();
    size_t vars = nvars * S + 2 * nwords * sizeof(uint64_t);
    timed([&] {
        ctx->msm_streamed<bucket_t>(out->l, in->l_bases, in->naux, d_vars.data() + in->ninputs, ctx->room(vars));
    });
    // The A scalars, then the B scalars, gathered while their MSMs need them.
    auto gathered = [&](const bellhop_selection& selection, auto&& msms) {
        dev_ptr_t<fr_t> d(selection.count, vs);
        gather(ctx, vs, d.data(), d_vars.data(), nvars, selection, d_select.data());
        vs.sync();
        msms(d.data(), ctx->room(vars + selection.count * S));
    };
    gathered(in->select_a, [&](fr_t* d_a, size_t room) {
        timed([&] { ctx->msm_streamed<bucket_t>(out->a, in->a_bases, in->select_a.count, d_a, room); });
    });
    gathered(in->select_b, [&](fr_t* d_b, size_t room) {
        timed([&] { ctx->msm_streamed<bucket_t>(out->b_g1, in->b_g1_bases, in->select_b.count, d_b, room); });
        timed([&] { ctx->msm_streamed<bucket_fp2_t>(out->b_g2, in->b_g2_bases, in->select_b.count, d_b, room); });
    });
}

// h and the five MSMs of one proof: resident when the kept bases and the proof's buffers
// fit the budget (and no chunk size was set), else streamed (its kept bases freed for room
// first). Each MSM is timed
// between events around it (sppark's MSM waits for its own end, so the interval is its
// time on the GPU and its host-side collection).
extern "C" RustError::by_value bellhop_cuda_proof_msms(bellhop_cuda* ctx, const bellhop_proof_input* in,
                                                       bellhop_proof_output* out)
{
    std::lock_guard<std::mutex> guard(ctx->lock);
    try {
        auto call_start = std::chrono::steady_clock::now();
        // Before the device buffers, so that what a failed call left locked is unlocked
        // after they are freed.
        host_locks locks(ctx->device);
        if (ctx->register_host) {
            for (const fr_t* v: {in->a, in->b, in->c})
                if (!ctx->kept_host.holds(v))
                    locks.lock(v, in->constraints * sizeof(fr_t));
            if (!ctx->kept_host.holds(in->aux))
                locks.lock(in->aux, in->naux * sizeof(fr_t));
        }
        event_marks marks(PROOF_MARKS);
        bool streamed = ctx->chunk_cap || resident_proof_bytes(ctx, in) > ctx->room(0);
        if (streamed) {
            ctx->stream_all_kept();
            proof_streamed(ctx, in, out, marks, locks);
        } else {
            proof_resident(ctx, in, out, marks, locks);
        }
        out->streamed = streamed;

        bool h = in->lg_n != 0;
        out->ms[T_UPLOAD_NTT] = h ? marks.ms(0, 1) : 0;
        out->ms[T_POINTWISE] = h ? marks.ms(1, 2) : 0;
        out->ms[T_INTT] = h ? marks.ms(2, 3) : 0;
        out->ms[T_VARIABLES] = marks.ms(4, 5);
        for (int i = 0; i < 5; i++)
            out->ms[T_MSM_H + i] = marks.ms(6 + 2 * i, 7 + 2 * i);
        out->ms[T_PAGE_LOCKS] = locks.finish();
        out->ms[T_CALL] = host_ms_since(call_start);
        return RustError{cudaSuccess};
    }
    CATCH_CUDA
}

#endif
