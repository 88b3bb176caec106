/*
 * One window of Pippenger's MSM (a "tile", as blst calls it) with its buckets kept in
 * affine coordinates and filled by batch-affine additions: the additions into distinct
 * buckets are gathered into batches that share one field inversion (Montgomery's trick),
 * 5M+1S an addition against the 8M+2S of blst's XYZZ buckets.
 *
 * Built over blst's internal headers (field arithmetic, XYZZ formulas, window digits), so
 * it calls the same assembly blst's own tiles do; its contract is blst's
 * blst_p1s_tile_pippenger's for one contiguous array of points and one of scalars.
 *
 * A point whose bucket already has an addition in the current batch goes to that
 * bucket's XYZZ overflow instead, so no input degrades the batches into single
 * inversions; the overflows are folded into the affine buckets at the end. A doubling
 * joins a batch with its own numerator and denominator; a cancellation empties the
 * bucket. The buckets are then summed as running sums side by side, whose additions
 * are batched too.
 *
 * Windows of 1 to 25 bits (blst's digit reader's limit); the caller checks.
 */

#include <string.h>

#include "fields.h"
#include "point.h"
#include "ec_ops.h"
#include "ec_mult.h"

/* Exported by blst; reciprocal_fp and reciprocal_fp2 in its headers are static. */
void blst_fp_inverse(vec384 out, const vec384 inp);
void blst_fp2_inverse(vec384x out, const vec384x inp);

/* Additions that share one inversion. */
#define BATCH 256

/* Running sums the buckets are summed in, side by side, so that their additions can
 * share inversions too. */
#define RUNS 128

/* A bucket's state. */
#define OCCUPIED 1
#define PENDING 2
#define OVERFLOWED 4

typedef struct {
    size_t overflow, batch, dx, prefix, runs, flags, size;
} tile_offsets;

/* One queued addition, dst += (-1)^negate src, on affine points; a doubling where
 * the two are equal. */
typedef struct {
    void *dst;
    const void *src;
    limb_t negate, doubling;
} batch_entry;

#define BATCH_AFFINE_TILE_IMPL(name, ptype, bits, field, one, inverse) \
typedef struct { vec##bits X,Y,ZZZ,ZZ; } ptype##xyzz; \
POINTXYZZ_TO_JACOBIAN_IMPL(ptype, bits, field) \
POINTXYZZ_DADD_IMPL(ptype, bits, field) \
POINTXYZZ_DADD_AFFINE_IMPL(ptype, bits, field, one) \
\
/* The parts of a tile's scratch, and the queued additions' count. */ \
typedef struct { \
    ptype##_affine *buckets; \
    ptype##xyzz *overflow; \
    batch_entry *batch; \
    vec##bits *dx, *prefix; \
    ptype##_affine *runs;   /* RUNS partial sums, then RUNS running sums */ \
    byte *flags;            /* the buckets', then the runs' */ \
    size_t queued; \
} ptype##_tile_scratch; \
\
/* Where each part of a tile's scratch starts, in bytes, and the whole size. */ \
static tile_offsets ptype##_tile_offsets(size_t window) \
{ \
    size_t nbuckets = (size_t)1 << (window - 1); \
    tile_offsets o; \
\
    o.overflow = nbuckets * sizeof(ptype##_affine); \
    o.batch = o.overflow + nbuckets * sizeof(ptype##xyzz); \
    o.dx = o.batch + BATCH * sizeof(batch_entry); \
    o.prefix = o.dx + BATCH * sizeof(vec##bits); \
    o.runs = o.prefix + BATCH * sizeof(vec##bits); \
    o.flags = o.runs + 2 * RUNS * sizeof(ptype##_affine); \
    o.size = o.flags + nbuckets + 2 * RUNS; \
    return o; \
} \
\
/* The scratch's parts in |scratch|, for a tile of |window| bits. */ \
static ptype##_tile_scratch ptype##_tile_scratch_at(void *scratch, size_t window) \
{ \
    tile_offsets o = ptype##_tile_offsets(window); \
    ptype##_tile_scratch s; \
\
    s.buckets = (ptype##_affine *)scratch; \
    s.overflow = (ptype##xyzz *)((byte *)scratch + o.overflow); \
    s.batch = (batch_entry *)((byte *)scratch + o.batch); \
    s.dx = (vec##bits *)((byte *)scratch + o.dx); \
    s.prefix = (vec##bits *)((byte *)scratch + o.prefix); \
    s.runs = (ptype##_affine *)((byte *)scratch + o.runs); \
    s.flags = (byte *)scratch + o.flags; \
    s.queued = 0; \
    return s; \
} \
\
/* prefix[n] = dx[0] dx[1] ... dx[n], after dx[n] is set. */ \
static void ptype##_extend_prefix(ptype##_tile_scratch *s, size_t n) \
{ \
    if (n) \
        mul_##field(s->prefix[n], s->prefix[n - 1], s->dx[n]); \
    else \
        vec_copy(s->prefix[0], s->dx[0], sizeof(s->dx[0])); \
} \
\
/* dx[k] = 1/dx[k] for k < n (n > 0, none zero) with one inversion (Montgomery's \
 * trick): of the whole product, then back through the prefix products. */ \
static void ptype##_invert_batch(ptype##_tile_scratch *s, size_t n) \
{ \
    vec##bits inv, t; \
\
    inverse(inv, s->prefix[n - 1]); \
    while (--n) { \
        mul_##field(t, inv, s->prefix[n - 1]);  /* 1/dx[n] */ \
        mul_##field(inv, inv, s->dx[n]);        /* 1/(dx[0] ... dx[n - 1]) */ \
        vec_copy(s->dx[n], t, sizeof(t)); \
    } \
    vec_copy(s->dx[0], inv, sizeof(inv)); \
} \
\
/* Carries out the queued additions, their denominators (x2 - x1, or 2y for a \
 * doubling) inverted in one batch. */ \
static void ptype##_batch_add(ptype##_tile_scratch *s) \
{ \
    vec##bits lambda, t; \
    size_t n = s->queued; \
\
    if (n == 0) \
        return; \
    ptype##_invert_batch(s, n); \
    while (n--) { \
        const batch_entry *e = &s->batch[n]; \
        const ptype##_affine *p = e->src; \
        ptype##_affine *b = e->dst; \
\
        if (e->doubling) { \
            sqr_##field(t, b->X); \
            mul_by_3_##field(t, t);             /* 3x² */ \
        } else { \
            cneg_##field(t, p->Y, e->negate); \
            sub_##field(t, t, b->Y);            /* y2 - y1 */ \
        } \
        mul_##field(lambda, t, s->dx[n]);       /* λ = (y2 - y1)/(x2 - x1), 3x²/2y */ \
        sqr_##field(t, lambda); \
        sub_##field(t, t, b->X); \
        sub_##field(t, t, p->X);                /* x3 = λ² - x1 - x2, x2 = x1 */ \
        sub_##field(b->X, b->X, t); \
        mul_##field(b->X, b->X, lambda); \
        sub_##field(b->Y, b->X, b->Y);          /* y3 = λ(x1 - x3) - y1 */ \
        vec_copy(b->X, t, sizeof(t)); \
    } \
    s->queued = 0; \
} \
\
/* Queues dst += (-1)^negate src, or returns 0 and queues nothing where the sum is \
 * the identity (src = -dst; or a doubling of y = 0, which no point of the curve has). \
 * The caller keeps each dst to one queued addition, and src off the queued dsts. */ \
static bool_t ptype##_batch_push(ptype##_tile_scratch *s, ptype##_affine *dst, \
                                 const ptype##_affine *src, limb_t negate) \
{ \
    size_t n = s->queued; \
    limb_t doubling = 0; \
\
    sub_##field(s->dx[n], src->X, dst->X); \
    if (vec_is_zero(s->dx[n], sizeof(s->dx[n]))) { \
        vec##bits y; \
\
        cneg_##field(y, src->Y, negate); \
        if (!vec_is_equal(y, dst->Y, sizeof(y)) || vec_is_zero(y, sizeof(y))) \
            return 0; \
        add_##field(s->dx[n], y, y);            /* 2y */ \
        doubling = 1; \
    } \
    ptype##_extend_prefix(s, n); \
    s->batch[n].dst = dst; \
    s->batch[n].src = src; \
    s->batch[n].negate = negate; \
    s->batch[n].doubling = doubling; \
    s->queued = n + 1; \
    return 1; \
} \
\
/* *dst (occupied or not, by its flag) += src, queued when it can be. The caller \
 * flushes full batches. */ \
static void ptype##_accumulate(ptype##_tile_scratch *s, ptype##_affine *dst, byte *flag, \
                               const ptype##_affine *src) \
{ \
    if (!(*flag & OCCUPIED)) { \
        vec_copy(dst, src, sizeof(*dst)); \
        *flag |= OCCUPIED; \
    } else if (!ptype##_batch_push(s, dst, src, 0)) { \
        *flag &= ~OCCUPIED;                     /* dst + src = identity */ \
    } \
    if (s->queued == BATCH) \
        ptype##_batch_add(s); \
} \
\
/* Each bucket's overflow into its affine part: the overflows to affine with one \
 * inversion a batch (in place, over their X and Y), then added in batches. */ \
static void ptype##_fold_overflow(ptype##_tile_scratch *s, size_t nbuckets) \
{ \
    size_t i, j, n; \
    vec##bits zz_inv; \
\
    for (i = 0; i < nbuckets;) { \
        for (n = 0; i < nbuckets && n < BATCH; i++) { \
            ptype##xyzz *o = &s->overflow[i]; \
\
            if (!(s->flags[i] & OVERFLOWED)) \
                continue; \
            if (vec_is_zero(o->ZZZ, 2 * sizeof(o->ZZZ))) { \
                s->flags[i] &= ~OVERFLOWED; \
                continue; \
            } \
            vec_copy(s->dx[n], o->ZZZ, sizeof(o->ZZZ)); \
            ptype##_extend_prefix(s, n); \
            s->batch[n++].dst = o; \
        } \
        if (n == 0) \
            break; \
        ptype##_invert_batch(s, n); \
        for (j = 0; j < n; j++) { \
            ptype##xyzz *o = s->batch[j].dst; \
\
            mul_##field(zz_inv, o->ZZ, s->dx[j]); \
            sqr_##field(zz_inv, zz_inv);        /* (Z²/Z³)² = 1/Z² */ \
            mul_##field(o->X, o->X, zz_inv); \
            mul_##field(o->Y, o->Y, s->dx[j]);  /* times 1/Z³ */ \
        } \
    } \
    for (i = 0; i < nbuckets; i++)              /* X, Y lead the XYZZ struct */ \
        if (s->flags[i] & OVERFLOWED) \
            ptype##_accumulate(s, &s->buckets[i], &s->flags[i], \
                               (const ptype##_affine *)&s->overflow[i]); \
    ptype##_batch_add(s); \
} \
\
/* sum_j (j + 1) buckets[j], the buckets affine. In RUNS runs of L consecutive \
 * buckets side by side, each run's additions in one batch: run r's partial sum P_r \
 * and running sum S_r = sum_i (i + 1) buckets[rL + i], then \
 * S_r + rL P_r summed as sum_r S_r + L sum_r r P_r. */ \
static void ptype##_sum_buckets(ptype##xyzz *out, ptype##_tile_scratch *s, \
                                size_t nbuckets) \
{ \
    ptype##_affine *partial = s->runs, *running = s->runs + RUNS; \
    byte *partial_flags = s->flags + nbuckets, *running_flags = partial_flags + RUNS; \
    ptype##xyzz acc, weighted; \
    size_t i, r, len; \
\
    vec_zero(out, sizeof(*out)); \
    if (nbuckets < 2 * RUNS) { \
        vec_zero(&acc, sizeof(acc)); \
        for (i = nbuckets; i--;) { \
            if (s->flags[i] & OCCUPIED) \
                ptype##xyzz_dadd_affine(&acc, &acc, &s->buckets[i], 0); \
            ptype##xyzz_dadd(out, out, &acc); \
        } \
        return; \
    } \
    len = nbuckets / RUNS; \
    memset(partial_flags, 0, 2 * RUNS); \
    for (i = len; i--;) { \
        for (r = 0; r < RUNS; r++) \
            if (s->flags[r * len + i] & OCCUPIED) \
                ptype##_accumulate(s, &partial[r], &partial_flags[r], \
                                   &s->buckets[r * len + i]); \
        ptype##_batch_add(s); \
        for (r = 0; r < RUNS; r++) \
            if (partial_flags[r] & OCCUPIED) \
                ptype##_accumulate(s, &running[r], &running_flags[r], &partial[r]); \
        ptype##_batch_add(s); \
    } \
    vec_zero(&acc, sizeof(acc)); \
    vec_zero(&weighted, sizeof(weighted)); \
    for (r = RUNS; --r;) {                      /* sum_r r P_r */ \
        if (partial_flags[r] & OCCUPIED) \
            ptype##xyzz_dadd_affine(&acc, &acc, &partial[r], 0); \
        ptype##xyzz_dadd(&weighted, &weighted, &acc); \
    } \
    for (; len > 1; len >>= 1)                  /* times L, a power of two */ \
        ptype##xyzz_dadd(&weighted, &weighted, &weighted); \
    for (r = 0; r < RUNS; r++) \
        if (running_flags[r] & OCCUPIED) \
            ptype##xyzz_dadd_affine(&weighted, &weighted, &running[r], 0); \
    vec_copy(out, &weighted, sizeof(*out)); \
} \
\
size_t name##s_tile_batch_affine_scratch_sizeof(size_t window) \
{ \
    return ptype##_tile_offsets(window).size; \
} \
\
void name##s_tile_batch_affine(ptype *ret, const ptype##_affine points[], \
                               size_t npoints, const byte scalars[], size_t nbits, \
                               void *scratch, size_t bit0, size_t window) \
{ \
    ptype##_tile_scratch s = ptype##_tile_scratch_at(scratch, window); \
    ptype##xyzz sum; \
    size_t wbits, cbits, nbuckets, nbytes = (nbits + 7) / 8, i, j, z; \
    limb_t wmask, wval, wnxt = 0, cmask; \
\
    /* The window's bits and digits as blst's tile takes them: the top window, cut \
     * short by the scalars' end, keeps one more digit bit for Booth's carry. */ \
    if (bit0 + window > nbits) \
        wbits = nbits - bit0, cbits = wbits + 1; \
    else \
        wbits = cbits = window; \
    nbuckets = (size_t)1 << (cbits - 1); \
    memset(s.flags, 0, nbuckets); \
    cmask = ((limb_t)1 << cbits) - 1; \
    wmask = ((limb_t)1 << (wbits + 1)) - 1; \
    z = is_zero(bit0); \
    bit0 -= z ^ 1; \
    wbits += z ^ 1; \
\
    if (npoints) \
        wnxt = booth_encode((get_wval_limb(scalars, bit0, wbits) << z) & wmask, cbits); \
    for (i = 0; i < npoints; i++) { \
        const ptype##_affine *p = &points[i]; \
        ptype##_affine *b; \
        limb_t negate, idx; \
\
        wval = wnxt; \
        if (i + 1 < npoints) { \
            wnxt = booth_encode((get_wval_limb(scalars + (i + 1) * nbytes, bit0, wbits) \
                                 << z) & wmask, cbits); \
            if (wnxt & cmask) \
                vec_prefetch(&s.buckets[(wnxt & cmask) - 1], sizeof(ptype##_affine)); \
        } \
        negate = (wval >> cbits) & 1; \
        idx = wval & cmask; \
        if (idx-- == 0 || vec_is_zero(p, sizeof(*p))) \
            continue; \
        b = &s.buckets[idx]; \
        if (!(s.flags[idx] & OCCUPIED)) { \
            vec_copy(b->X, p->X, sizeof(b->X)); \
            cneg_##field(b->Y, p->Y, negate); \
            s.flags[idx] |= OCCUPIED; \
            continue; \
        } \
        if (!(s.flags[idx] & PENDING)) { \
            if (!ptype##_batch_push(&s, b, p, negate)) { \
                s.flags[idx] &= ~OCCUPIED;      /* b + p = identity */ \
                continue; \
            } \
            s.flags[idx] |= PENDING; \
            if (s.queued == BATCH) { \
                for (j = 0; j < BATCH; j++) \
                    s.flags[(ptype##_affine *)s.batch[j].dst - s.buckets] &= ~PENDING; \
                ptype##_batch_add(&s); \
            } \
            continue; \
        } \
        if (!(s.flags[idx] & OVERFLOWED)) { \
            vec_zero(&s.overflow[idx], sizeof(s.overflow[idx])); \
            s.flags[idx] |= OVERFLOWED; \
        } \
        ptype##xyzz_dadd_affine(&s.overflow[idx], &s.overflow[idx], p, negate); \
    } \
    ptype##_batch_add(&s); \
    ptype##_fold_overflow(&s, nbuckets); \
    ptype##_sum_buckets(&sum, &s, nbuckets); \
    ptype##xyzz_to_Jacobian(ret, &sum); \
}

BATCH_AFFINE_TILE_IMPL(bellhop_p1, POINTonE1, 384, fp, BLS12_381_Rx.p, blst_fp_inverse)

BATCH_AFFINE_TILE_IMPL(bellhop_p2, POINTonE2, 384x, fp2, BLS12_381_Rx.p2, blst_fp2_inverse)
