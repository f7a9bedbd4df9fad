/* SPDX-License-Identifier: Apache-2.0 */
/* Element conversions between sluice dtypes for the generic ops (cast, one_hot, random.*): load as
 * double, store with DALI's ConvertSat rules (integers: round to nearest even, saturate; NaN -> 0).
 * Usable from CUDA device code too (SL__HD, core/half.h). */
#ifndef SLUICE_OPERATOR_DTYPE_CONV_H
#define SLUICE_OPERATOR_DTYPE_CONV_H

#include "sluice/tensor.h"

#include "core/half.h"

#include <math.h>
#include <stdint.h>
#if !defined(__CUDA_ARCH__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Double (and float) products and sums rounded one at a time, for arithmetic shared by a CPU run
 * and a CUDA run: a GPU compiler would otherwise fuse a * b + c into one multiply-add that rounds
 * once, and the two runs would part in the last bit. */
#ifdef __CUDA_ARCH__
#define SL__DMUL(a, b) __dmul_rn((a), (b))
#define SL__DADD(a, b) __dadd_rn((a), (b))
#define SL__FMUL(a, b) __fmul_rn((a), (b))
#define SL__FADD(a, b) __fadd_rn((a), (b))
#else
#define SL__DMUL(a, b) ((a) * (b))
#define SL__DADD(a, b) ((a) + (b))
#define SL__FMUL(a, b) ((a) * (b))
#define SL__FADD(a, b) ((a) + (b))
#endif

static inline SL__HD double sl__dtype_conv_load(const void *p, sl_dtype t, int64_t k) {
    switch (t) {
    case SL_DTYPE_U8:
        return ((const uint8_t *)p)[k];
    case SL_DTYPE_BOOL:
        return ((const uint8_t *)p)[k] != 0;
    case SL_DTYPE_I8:
        return ((const int8_t *)p)[k];
    case SL_DTYPE_U16:
        return ((const uint16_t *)p)[k];
    case SL_DTYPE_I16:
        return ((const int16_t *)p)[k];
    case SL_DTYPE_I32:
    case SL_DTYPE_INTERP: /* DALI's code, an int32 */
        return ((const int32_t *)p)[k];
    case SL_DTYPE_I64:
        return (double)((const int64_t *)p)[k];
    case SL_DTYPE_U32:
        return ((const uint32_t *)p)[k];
    case SL_DTYPE_U64:
        return (double)((const uint64_t *)p)[k];
    case SL_DTYPE_F16:
        return sl__f16_to_f32(((const uint16_t *)p)[k]);
    case SL_DTYPE_BF16:
        return sl__bf16_to_f32(((const uint16_t *)p)[k]);
    case SL_DTYPE_F32:
        return ((const float *)p)[k];
    default:
        return ((const double *)p)[k];
    }
}

/* v rounded to an integer in the current rounding mode (to nearest even by default) and
 * saturated to [lo, hi] (integers within 2^51 of 0); NaN gives 0. Clamping first gives the same
 * value (rounding is monotonic and the bounds are integers); on the CPU the rounding is then
 * adding and taking away 1.5 x 2^52, which rounds as nearbyint does for |v| < 2^51 without a
 * call into libm per element (so the loops around it vectorise). */
static inline SL__HD double sl__dtype_conv_sat(double v, double lo, double hi) {
#if !defined(__CUDA_ARCH__) && defined(__SSE2__)
    /* without branches (a compiler keeps C's NaN-exact comparisons as branches, which random
       pixels mispredict): NaN masked to 0, then max and min, which equal the C below on numbers */
    __m128d x = _mm_set_sd(v);
    x = _mm_and_pd(x, _mm_cmpord_sd(x, x));
    x = _mm_min_sd(_mm_max_sd(x, _mm_set_sd(lo)), _mm_set_sd(hi));
    v = _mm_cvtsd_f64(x);
#else
    v = v == v ? v : 0;
    v = v < lo ? lo : v > hi ? hi : v;
#endif
#ifdef __CUDA_ARCH__
    return nearbyint(v);
#else
    const double big = 6755399441055744.0; /* IEEE arithmetic: (v + big) - big is not folded */
    return v + big - big;
#endif
}

/* The low bits of v in integer type t (two's complement wrap). */
static inline SL__HD void sl__dtype_conv_store_bits(void *p, sl_dtype t, int64_t k, uint64_t v) {
    switch (t) {
    case SL_DTYPE_U8:
    case SL_DTYPE_I8:
        ((uint8_t *)p)[k] = (uint8_t)v;
        break;
    case SL_DTYPE_BOOL:
        ((uint8_t *)p)[k] = v != 0;
        break;
    case SL_DTYPE_U16:
    case SL_DTYPE_I16:
        ((uint16_t *)p)[k] = (uint16_t)v;
        break;
    case SL_DTYPE_U32:
    case SL_DTYPE_I32:
    case SL_DTYPE_INTERP:
        ((uint32_t *)p)[k] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)p)[k] = v;
        break;
    }
}

static inline SL__HD void sl__dtype_conv_store(void *p, sl_dtype t, int64_t k, double v) {
    switch (t) {
    case SL_DTYPE_U8:
        ((uint8_t *)p)[k] = (uint8_t)sl__dtype_conv_sat(v, 0, 255);
        break;
    case SL_DTYPE_BOOL:
        ((uint8_t *)p)[k] = v != 0;
        break;
    case SL_DTYPE_I8:
        ((int8_t *)p)[k] = (int8_t)sl__dtype_conv_sat(v, -128, 127);
        break;
    case SL_DTYPE_U16:
        ((uint16_t *)p)[k] = (uint16_t)sl__dtype_conv_sat(v, 0, 65535);
        break;
    case SL_DTYPE_I16:
        ((int16_t *)p)[k] = (int16_t)sl__dtype_conv_sat(v, -32768, 32767);
        break;
    case SL_DTYPE_I32:
    case SL_DTYPE_INTERP:
        ((int32_t *)p)[k] = (int32_t)sl__dtype_conv_sat(v, -2147483648.0, 2147483647.0);
        break;
    case SL_DTYPE_I64:
        ((int64_t *)p)[k] = v != v                        ? 0
                            : v >= 9223372036854775807.0  ? INT64_MAX
                            : v <= -9223372036854775808.0 ? INT64_MIN
                                                          : (int64_t)nearbyint(v);
        break;
    case SL_DTYPE_U32:
        ((uint32_t *)p)[k] = (uint32_t)sl__dtype_conv_sat(v, 0, 4294967295.0);
        break;
    case SL_DTYPE_U64:
        ((uint64_t *)p)[k] = v != v || v <= 0              ? 0
                             : v >= 18446744073709551615.0 ? UINT64_MAX
                                                           : (uint64_t)nearbyint(v);
        break;
    case SL_DTYPE_F16:
        ((uint16_t *)p)[k] = sl__f32_to_f16((float)v);
        break;
    case SL_DTYPE_BF16:
        ((uint16_t *)p)[k] = sl__f32_to_bf16((float)v);
        break;
    case SL_DTYPE_F32:
        ((float *)p)[k] = (float)v;
        break;
    default:
        ((double *)p)[k] = v;
        break;
    }
}

#ifndef __CUDACC__
/* n elements of src (type from) into dst (type to) on the CPU, element k by the two rules above
 * (the same bits), a loop per pair of types rather than two type switches per element. */
void sl__dtype_conv_n(void *dst, sl_dtype to, const void *src, sl_dtype from, int64_t n);
#endif

#endif
