/* SPDX-License-Identifier: Apache-2.0 */
/* sl__dtype_conv_n: dtype_conv.h's element rules in one loop per pair of types. Each case calls
 * the inline rules with both types constant, so the compiler drops their switches and the loop
 * is a plain conversion (vectorised where the rule allows); the bits are the rules' own. */
#include "operator/dtype_conv.h"

/* the destination types, and the same list again for the source types (a macro does not expand
 * inside its own expansion) */
#define CONV_TO(X)                                                                                 \
    X(U8) X(BOOL) X(I8) X(U16) X(I16) X(I32) X(U32) X(I64) X(U64) X(F16) X(BF16) X(F32) X(F64)
#define CONV_FROM(X)                                                                               \
    X(U8) X(BOOL) X(I8) X(U16) X(I16) X(I32) X(U32) X(I64) X(U64) X(F16) X(BF16) X(F32) X(F64)

/* in conv_to_T: the loop for source type SL_DTYPE_F */
#define FROM(F)                                                                                    \
    case SL_DTYPE_##F:                                                                             \
        for (int64_t k = 0; k < n; k++)                                                            \
            sl__dtype_conv_store(dst, to, k, sl__dtype_conv_load(src, SL_DTYPE_##F, k));           \
        return;

/* one function per destination type T, switching over the source type */
#define TO(T)                                                                                      \
    static void conv_to_##T(void *dst, const void *src, sl_dtype from, int64_t n) {                \
        const sl_dtype to = SL_DTYPE_##T;                                                          \
        switch (from) {                                                                            \
            CONV_FROM(FROM)                                                                        \
        default:                                                                                   \
            for (int64_t k = 0; k < n; k++)                                                        \
                sl__dtype_conv_store(dst, to, k, sl__dtype_conv_load(src, from, k));               \
        }                                                                                          \
    }
CONV_TO(TO)
#undef TO
#undef FROM

void sl__dtype_conv_n(void *dst, sl_dtype to, const void *src, sl_dtype from, int64_t n) {
    switch (to) {
#define CALL(T)                                                                                    \
    case SL_DTYPE_##T:                                                                             \
        conv_to_##T(dst, src, from, n);                                                            \
        return;
        CONV_TO(CALL)
#undef CALL
    default:
        for (int64_t k = 0; k < n; k++)
            sl__dtype_conv_store(dst, to, k, sl__dtype_conv_load(src, from, k));
    }
}
