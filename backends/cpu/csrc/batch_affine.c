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
 * A point that cannot join the current batch (its bucket already has an addition in it,
 * or its x equals the bucket's: a doubling or a cancellation) goes to that bucket's XYZZ
 * overflow instead, so no input degrades the batches into single inversions; the bucket's
 * value is its affine part plus its overflow.
 */

#include "fields.h"
#include "point.h"
#include "ec_ops.h"
#include "ec_mult.h"

/* Exported by blst; reciprocal_fp and reciprocal_fp2 in its headers are static. */
void blst_fp_inverse(vec384 out, const vec384 inp);
void blst_fp2_inverse(vec384x out, const vec384x inp);

/* Additions that share one inversion. */
#define BATCH 256

#define OCCUPIED 1
#define PENDING 2
#define OVERFLOWED 4

typedef struct {
    size_t overflow, batch, dx, prefix, flags, size;
} tile_offsets;

typedef struct {
    const void *point;
    size_t bucket;
    limb_t negate;
} batch_entry;

#define BATCH_AFFINE_TILE_IMPL(name, ptype, bits, field, one, inverse) \
typedef struct { vec##bits X,Y,ZZZ,ZZ; } ptype##xyzz; \
POINTXYZZ_TO_JACOBIAN_IMPL(ptype, bits, field) \
POINTXYZZ_DADD_IMPL(ptype, bits, field) \
POINTXYZZ_DADD_AFFINE_IMPL(ptype, bits, field, one) \
\
/* The parts of a tile's scratch. */ \
typedef struct { \
    ptype##_affine *buckets; \
    ptype##xyzz *overflow; \
    batch_entry *batch; \
    vec##bits *dx, *prefix; \
    byte *flags; \
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
    o.flags = o.prefix + BATCH * sizeof(vec##bits); \
    o.size = o.flags + nbuckets; \
    return o; \
} \
\
/* Adds each batched point into its bucket: one inversion of the product of the \
 * batch's x differences, then back through the prefix products for each one's inverse. */ \
static void ptype##_flush_batch(const ptype##_tile_scratch *s, size_t n) \
{ \
    vec##bits inv, dx_inv, lambda, t; \
\
    if (n == 0) \
        return; \
    inverse(inv, s->prefix[n - 1]); \
    while (n--) { \
        const batch_entry *e = &s->batch[n]; \
        const ptype##_affine *p = e->point; \
        ptype##_affine *b = &s->buckets[e->bucket]; \
\
        if (n) { \
            mul_##field(dx_inv, inv, s->prefix[n - 1]); \
            mul_##field(inv, inv, s->dx[n]); \
        } else { \
            vec_copy(dx_inv, inv, sizeof(inv)); \
        } \
        cneg_##field(t, p->Y, e->negate); \
        sub_##field(t, t, b->Y);                /* y2 - y1 */ \
        mul_##field(lambda, t, dx_inv);         /* λ = (y2 - y1)/(x2 - x1) */ \
        sqr_##field(t, lambda); \
        sub_##field(t, t, b->X); \
        sub_##field(t, t, p->X);                /* x3 = λ² - x1 - x2 */ \
        sub_##field(b->X, b->X, t); \
        mul_##field(b->X, b->X, lambda); \
        sub_##field(b->Y, b->X, b->Y);          /* y3 = λ(x1 - x3) - y1 */ \
        vec_copy(b->X, t, sizeof(t)); \
        s->flags[e->bucket] &= ~PENDING; \
    } \
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
    ptype##_tile_scratch s; \
    tile_offsets o; \
    ptype##xyzz acc, sum; \
    size_t wbits, cbits, nbuckets, nbytes = (nbits + 7) / 8, i, n = 0, z; \
    limb_t wmask, wval, wnxt = 0, cmask; \
\
    /* The window's bits and digits as blst's tile takes them: the top window, cut \
     * short by the scalars' end, keeps one more digit bit for Booth's carry. */ \
    if (bit0 + window > nbits) \
        wbits = nbits - bit0, cbits = wbits + 1; \
    else \
        wbits = cbits = window; \
    o = ptype##_tile_offsets(window); \
    s.buckets = (ptype##_affine *)scratch; \
    s.overflow = (ptype##xyzz *)((byte *)scratch + o.overflow); \
    s.batch = (batch_entry *)((byte *)scratch + o.batch); \
    s.dx = (vec##bits *)((byte *)scratch + o.dx); \
    s.prefix = (vec##bits *)((byte *)scratch + o.prefix); \
    s.flags = (byte *)scratch + o.flags; \
    nbuckets = (size_t)1 << (cbits - 1); \
    vec_zero(s.flags, nbuckets); \
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
            sub_##field(s.dx[n], p->X, b->X); \
            if (!vec_is_zero(s.dx[n], sizeof(s.dx[n]))) { \
                if (n) \
                    mul_##field(s.prefix[n], s.prefix[n - 1], s.dx[n]); \
                else \
                    vec_copy(s.prefix[0], s.dx[0], sizeof(s.dx[0])); \
                s.batch[n].point = p; \
                s.batch[n].bucket = idx; \
                s.batch[n].negate = negate; \
                s.flags[idx] |= PENDING; \
                if (++n == BATCH) { \
                    ptype##_flush_batch(&s, n); \
                    n = 0; \
                } \
                continue; \
            } \
        } \
        if (!(s.flags[idx] & OVERFLOWED)) { \
            vec_zero(&s.overflow[idx], sizeof(s.overflow[idx])); \
            s.flags[idx] |= OVERFLOWED; \
        } \
        ptype##xyzz_dadd_affine(&s.overflow[idx], &s.overflow[idx], p, negate); \
    } \
    ptype##_flush_batch(&s, n); \
\
    /* sum_j (j + 1) bucket_j, by running sums from the top bucket down. */ \
    vec_zero(&acc, sizeof(acc)); \
    vec_zero(&sum, sizeof(sum)); \
    for (i = nbuckets; i--;) { \
        if (s.flags[i] & OCCUPIED) \
            ptype##xyzz_dadd_affine(&acc, &acc, &s.buckets[i], 0); \
        if (s.flags[i] & OVERFLOWED) \
            ptype##xyzz_dadd(&acc, &acc, &s.overflow[i]); \
        ptype##xyzz_dadd(&sum, &sum, &acc); \
    } \
    ptype##xyzz_to_Jacobian(ret, &sum); \
}

BATCH_AFFINE_TILE_IMPL(bellhop_p1, POINTonE1, 384, fp, BLS12_381_Rx.p, blst_fp_inverse)

BATCH_AFFINE_TILE_IMPL(bellhop_p2, POINTonE2, 384x, fp2, BLS12_381_Rx.p2, blst_fp2_inverse)
