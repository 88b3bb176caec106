// Bellhop's CUDA backend: sppark's Pippenger MSM (G1 and G2) and NTT over BLS12-381, and
// the FFT part of Groth16 on the GPU. Every entry point is `extern "C"`, returns
// sppark's RustError (code + strdup'ed message) and never throws.

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
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

// Host memory page-locked in place (cudaHostRegister) for one call, so that its uploads
// run asynchronously at the bus's speed instead of through the driver's pageable staging.
// A range that cannot be registered stays pageable: slower, still correct. Released after
// the device is idle, since a copy from it may still be running when a call fails.
class host_registration {
    std::vector<void*> ranges;
public:
    void add(const void* ptr, size_t bytes)
    {
        if (bytes == 0)
            return;
        void* p = const_cast<void*>(ptr);
        if (cudaHostRegister(p, bytes, cudaHostRegisterDefault) == cudaSuccess)
            ranges.push_back(p);
        else
            (void)cudaGetLastError();
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

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> msm_g1_t;
typedef msm_t<bucket_fp2_t, point_fp2_t, affine_fp2_t, scalar_t> msm_g2_t;

// Kept bases: the device copy of a host slice the host promised to leave unchanged.
template<class msm_type> struct kept_t {
    size_t npoints;
    std::unique_ptr<msm_type> msm;
};

class ntt_ops : public NTT {
public:
    using NTT::NTT_internal;
};

// One opened GPU. Calls are serialized: sppark's msm_t and streams are not re-entrant.
struct bellhop_cuda {
    bellhop_cuda(int device, bool pinned, bool register_host)
        : device(device), pinned(pinned), register_host(register_host), transfers(device) {}

    int device;
    bool pinned;
    // proof_msms page-locks a, b, c and aux in place for its call (host_registration).
    bool register_host;
    std::mutex lock;
    // Page-locked staging: one per stream of compute_h, so that its three uploads can
    // overlap, and one for proof_msms' variables.
    pinned_buffer staging[4];
    // proof_msms' variables go up and are gathered here while h is computed on gpu[0..2].
    stream_t transfers;
    std::map<const void*, kept_t<msm_g1_t>> kept_g1;
    std::map<const void*, kept_t<msm_g2_t>> kept_g2;

    const gpu_t& gpu() const { return select_gpu(device); }

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
            msm_t<bucket, point, affine, fr_t> msm{nullptr, npoints, sizeof(affine), device};
            if (!pinned)
                return msm.invoke(*out, slice_t<affine>{points, npoints}, scalars, true);
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

    template<class msm_type, class affine, class Kept>
    RustError::by_value keep(Kept& kept, const affine* points, size_t npoints)
    {
        std::lock_guard<std::mutex> guard(lock);
        try {
            if (npoints == 0 || kept.count(points))
                return RustError{cudaSuccess};
            const affine* src = stage(points, npoints);
            kept[points] = {npoints, std::make_unique<msm_type>(src, npoints, sizeof(affine), device)};
            // msm_t's constructor uploads asynchronously; from page-locked staging the copy
            // reads the buffer while it runs, and the next call refills that buffer.
            gpu().sync();
            return RustError{cudaSuccess};
        }
        CATCH_CUDA
    }
};

extern "C" RustError::by_value bellhop_cuda_open(int device, bool pinned, bool register_host, bellhop_cuda** out)
{
    try {
        if (ngpus() == 0)
            return RustError{cudaErrorNoDevice, "no CUDA GPU is visible (no device, or no NVIDIA driver)"};
        if (device < 0 || (size_t)device >= ngpus())
            return RustError{cudaErrorInvalidDevice, "no such GPU"};
        select_gpu(device);
        *out = new bellhop_cuda(device, pinned, register_host);
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
    return ctx->keep<msm_g1_t>(ctx->kept_g1, points, npoints);
}

extern "C" RustError::by_value bellhop_cuda_keep_g2(bellhop_cuda* ctx, const affine_fp2_t* points, size_t npoints)
{
    return ctx->keep<msm_g2_t>(ctx->kept_g2, points, npoints);
}

extern "C" void bellhop_cuda_release(bellhop_cuda* ctx)
{
    std::lock_guard<std::mutex> guard(ctx->lock);
    ctx->kept_g1.clear();
    ctx->kept_g2.clear();
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

// d_abc[0] <- h's coefficients: host[i]'s first `m` values go up to d_abc[i] (zeros up to
// 2^lg_n), each on its own stream so that uploads overlap transforms; then iNTT, coset
// NTT, (a·b - c) / Z and the coset iNTT. marks[0..3] are recorded on gpu[0] at the start,
// after the transforms, after the pointwise pass and after the coset iNTT. lg_n > 0.
static void h_on_device(bellhop_cuda* ctx, fr_t* const d_abc[3], const fr_t* const host[3], size_t m,
                        uint32_t lg_n, cudaEvent_t marks[4])
{
    const gpu_t& gpu = ctx->gpu();
    size_t n = (size_t)1 << lg_n;
    CUDA_OK(cudaEventRecord(marks[0], gpu[0]));
    for (int i = 0; i < 3; i++) {
        stream_t& s = gpu[i];
        if (i > 0)
            CUDA_OK(cudaStreamWaitEvent(s, marks[0], 0));
        upload(ctx, s, d_abc[i], host[i], m, ctx->staging[i]);
        // Zero is all-zero bits in Montgomery form too.
        s.bzero(d_abc[i] + m, n - m);
        ntt_ops::NTT_internal(d_abc[i], lg_n, NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                              NTT::Type::standard, s);
        ntt_ops::NTT_internal(d_abc[i], lg_n, NTT::InputOutputOrder::RN, NTT::Direction::forward,
                              NTT::Type::coset, s);
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
        h_on_device(ctx, d_abc, host, n, lg_n, &marks[0]);
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

// Milliseconds of each part of proof_msms, in this order: GPU time between events, but
// for T_REGISTER and T_RELEASE (page-locking a, b, c and aux, and undoing it) and T_CALL
// (the call up to freeing its device buffers), which are host time.
enum {
    T_UPLOAD_NTT, T_POINTWISE, T_INTT, T_VARIABLES, T_MSM_H, T_MSM_L, T_MSM_A, T_MSM_B_G1, T_MSM_B_G2,
    T_REGISTER, T_RELEASE, T_CALL, T_COUNT
};

struct bellhop_proof_output {
    point_t h, l, a, b_g1;
    point_fp2_t b_g2;
    float ms[T_COUNT];
};

// h and the five MSMs of one proof, the data kept on the GPU between them: a, b and c go up
// and h is computed (h_on_device) while the variables go up on the transfer stream and the
// A and B scalars are gathered there; the MSMs then read h, aux and the gathered scalars
// where they lie. Each MSM is timed between events around it (sppark's MSM waits for its
// own end, so the interval is its time on the GPU and its host-side collection).
extern "C" RustError::by_value bellhop_cuda_proof_msms(bellhop_cuda* ctx, const bellhop_proof_input* in,
                                                       bellhop_proof_output* out)
{
    std::lock_guard<std::mutex> guard(ctx->lock);
    try {
        auto call_start = std::chrono::steady_clock::now();
        const gpu_t& gpu = ctx->gpu();
        stream_t& vs = ctx->transfers;
        size_t n = (size_t)1 << in->lg_n;
        size_t nvars = in->ninputs + in->naux, nwords = (nvars + 63) / 64;
        // Before the device buffers, so that it is released after they are freed.
        host_registration registered;
        if (ctx->register_host) {
            auto start = std::chrono::steady_clock::now();
            for (const fr_t* v: {in->a, in->b, in->c})
                registered.add(v, in->constraints * sizeof(fr_t));
            registered.add(in->aux, in->naux * sizeof(fr_t));
            out->ms[T_REGISTER] = host_ms_since(start);
        } else {
            out->ms[T_REGISTER] = 0;
        }
        // Marks 0-3: h_on_device; 4-5: the variables; then a pair per MSM.
        event_marks marks(6 + 2 * 5);

        dev_ptr_t<fr_t> d_abc(in->lg_n ? 3 * n : 0, gpu[0]);
        if (in->lg_n) {
            fr_t* const d[3] = {&d_abc[0], &d_abc[n], &d_abc[2 * n]};
            const fr_t* const host[3] = {in->a, in->b, in->c};
            h_on_device(ctx, d, host, in->constraints, in->lg_n, &marks[0]);
        }

        CUDA_OK(cudaEventRecord(marks[4], vs));
        dev_ptr_t<fr_t> d_vars(nvars, vs);
        dev_ptr_t<uint64_t> d_select(4 * nwords, vs);
        dev_ptr_t<fr_t> d_a(in->select_a.count, vs), d_b(in->select_b.count, vs);
        // The inputs and the bitmaps are small: straight from pageable memory.
        vs.HtoD(d_vars.data(), in->inputs, in->ninputs);
        upload(ctx, vs, d_vars.data() + in->ninputs, in->aux, in->naux, ctx->staging[3]);
        const bellhop_selection* selections[2] = {&in->select_a, &in->select_b};
        fr_t* gathered[2] = {d_a.data(), d_b.data()};
        for (int i = 0; i < 2; i++) {
            uint64_t* words = &d_select[2 * i * nwords];
            uint64_t* offsets = words + nwords;
            vs.HtoD(words, selections[i]->words, nwords);
            vs.HtoD(offsets, selections[i]->offsets, nwords);
            if (selections[i]->count)
                gather_marked<<<gpu.sm_count(), 1024, 0, vs>>>(gathered[i], d_vars.data(), nvars, words, offsets);
            CUDA_OK(cudaGetLastError());
        }
        CUDA_OK(cudaEventRecord(marks[5], vs));
        vs.sync();
        gpu.sync();

        size_t mark = 6;
        auto timed = [&](auto&& run) {
            CUDA_OK(cudaEventRecord(marks[mark], gpu[2]));
            run();
            CUDA_OK(cudaEventRecord(marks[mark + 1], gpu[2]));
            CUDA_OK(cudaEventSynchronize(marks[mark + 1]));
            mark += 2;
        };
        timed([&] {
            if (in->lg_n)
                ctx->msm_on_device<msm_g1_t>(ctx->kept_g1, out->h, in->h_bases, n - 1, d_abc.data());
            else
                out->h.inf();
        });
        timed([&] { ctx->msm_on_device<msm_g1_t>(ctx->kept_g1, out->l, in->l_bases, in->naux, d_vars.data() + in->ninputs); });
        timed([&] { ctx->msm_on_device<msm_g1_t>(ctx->kept_g1, out->a, in->a_bases, in->select_a.count, d_a.data()); });
        timed([&] {
            ctx->msm_on_device<msm_g1_t>(ctx->kept_g1, out->b_g1, in->b_g1_bases, in->select_b.count, d_b.data());
        });
        timed([&] {
            ctx->msm_on_device<msm_g2_t>(ctx->kept_g2, out->b_g2, in->b_g2_bases, in->select_b.count, d_b.data());
        });

        bool h = in->lg_n != 0;
        out->ms[T_UPLOAD_NTT] = h ? marks.ms(0, 1) : 0;
        out->ms[T_POINTWISE] = h ? marks.ms(1, 2) : 0;
        out->ms[T_INTT] = h ? marks.ms(2, 3) : 0;
        out->ms[T_VARIABLES] = marks.ms(4, 5);
        for (int i = 0; i < 5; i++)
            out->ms[T_MSM_H + i] = marks.ms(6 + 2 * i, 7 + 2 * i);
        auto release_start = std::chrono::steady_clock::now();
        registered.release();
        out->ms[T_RELEASE] = host_ms_since(release_start);
        out->ms[T_CALL] = host_ms_since(call_start);
        return RustError{cudaSuccess};
    }
    CATCH_CUDA
}

#endif
