/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors: dtypes, shapes and strides, views, copies, fills, sample lists. */
#include "check.h"
#include "core/half.h"
#include "sluice/tensor.h"

#include <string.h>

static void test_dtypes(void) {
    CHECK_EQ_INT(sl_dtype_size(SL_DTYPE_U8), 1);
    CHECK_EQ_INT(sl_dtype_size(SL_DTYPE_BF16), 2);
    CHECK_EQ_INT(sl_dtype_size(SL_DTYPE_F64), 8);
    CHECK_EQ_INT(sl_dtype_size(SL_DTYPE_BOOL), 1);
    sl_dtype t;
    CHECK_OK(sl_dtype_parse("FLOAT", &t), NULL);
    CHECK_EQ_INT(t, SL_DTYPE_F32);
    CHECK_OK(sl_dtype_parse("float16", &t), NULL);
    CHECK_EQ_INT(t, SL_DTYPE_F16);
    CHECK_EQ_INT(sl_dtype_parse("complex", &t), SL_EINVAL);
    CHECK(sl_dtype_is_float(SL_DTYPE_BF16) && !sl_dtype_is_float(SL_DTYPE_I32));
}

static void test_half(void) {
    float vals[] = {0.0f, 1.0f, -2.5f, 65504.0f, 1e-5f, 6.1035156e-05f, 5.9604645e-08f, 0.333333f};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        float back = sl__f16_to_f32(sl__f32_to_f16(vals[i]));
        CHECK_NEAR(back, vals[i], 1e-3 * (vals[i] < 0 ? -vals[i] : vals[i]) + 6e-8);
    }
    CHECK_EQ_INT(sl__f32_to_f16(1.0f), 0x3c00);
    CHECK_EQ_INT(sl__f32_to_f16(65520.0f), 0x7c00);       /* rounds to infinity */
    CHECK_EQ_INT(sl__f32_to_f16(5.9604645e-08f), 0x0001); /* smallest subnormal */
    CHECK_EQ_INT(sl__f32_to_bf16(1.0f), 0x3f80);
    CHECK_NEAR(sl__bf16_to_f32(sl__f32_to_bf16(3.14159f)), 3.140625, 1e-6);
}

static void test_views(void) {
    sl_err e;
    sl_tensor t;
    int64_t shape[3] = {4, 5, 3};
    CHECK_OK(sl_tensor_alloc(&t, SL_DTYPE_I32, sl_cpu(), 3, shape, "HWC", &e), &e);
    CHECK_EQ_INT(sl_tensor_numel(&t), 60);
    CHECK_EQ_INT(sl_tensor_nbytes(&t), 240);
    CHECK_EQ_INT(t.strides[0], 60);
    CHECK_EQ_INT(t.strides[1], 12);
    CHECK_EQ_INT(t.strides[2], 4);
    CHECK_EQ_INT((uintptr_t)t.data % 64, 0);
    int32_t *d = t.data;
    for (int i = 0; i < 60; i++) d[i] = i;

    sl_tensor s;
    CHECK_OK(sl_tensor_slice(&t, 1, 1, 3, &s, &e), &e);
    CHECK_EQ_INT(s.shape[1], 2);
    CHECK(!sl_tensor_is_contiguous(&s));
    CHECK_EQ_INT(*(int32_t *)s.data, 3);
    CHECK(s.alloc == NULL);
    CHECK_FAILS(sl_tensor_slice(&t, 1, 2, 9, &s, &e), SL_EINVAL, &e, "extent 5");

    sl_tensor row;
    CHECK_OK(sl_tensor_index(&t, 2, &row, &e), &e);
    CHECK_EQ_INT(row.ndim, 2);
    CHECK_STR(row.layout, "WC");
    CHECK_EQ_INT(*(int32_t *)row.data, 30);

    sl_tensor chw;
    int perm[3] = {2, 0, 1};
    CHECK_OK(sl_tensor_permute(&t, perm, &chw, &e), &e);
    CHECK_STR(chw.layout, "CHW");
    CHECK_EQ_INT(chw.shape[0], 3);
    CHECK_EQ_INT(chw.strides[0], 4);

    sl_tensor dense;
    int64_t dshape[3] = {3, 4, 5};
    CHECK_OK(sl_tensor_alloc(&dense, SL_DTYPE_I32, sl_cpu(), 3, dshape, "CHW", &e), &e);
    CHECK_OK(sl_tensor_copy(&dense, &chw, NULL, &e), &e); /* strided -> contiguous */
    int32_t *dd = dense.data;
    CHECK_EQ_INT(dd[0 * 20 + 1 * 5 + 2], (1 * 5 + 2) * 3 + 0); /* c=0,h=1,w=2 */
    CHECK_EQ_INT(dd[2 * 20 + 3 * 5 + 4], (3 * 5 + 4) * 3 + 2);

    sl_tensor flat;
    int64_t fshape[2] = {-1, 15};
    CHECK_OK(sl_tensor_reshape(&t, 2, fshape, &flat, &e), &e);
    CHECK_EQ_INT(flat.shape[0], 4);
    CHECK_STR(flat.layout, "");
    int64_t bad[1] = {7};
    CHECK_FAILS(sl_tensor_reshape(&t, 1, bad, &flat, &e), SL_EINVAL, &e, "60 elements");
    CHECK_FAILS(sl_tensor_reshape(&s, 1, bad, &flat, &e), SL_EINVAL, &e, "contiguous");
    CHECK_FAILS(sl_tensor_set_layout(&t, "NHWC", &e), SL_EINVAL, &e, "NHWC");

    CHECK_OK(sl_tensor_fill(&s, 7, NULL, &e), &e);
    CHECK_EQ_INT(d[3], 7);
    CHECK_EQ_INT(d[0], 0);
    CHECK_EQ_INT(d[9], 9);

    char buf[64];
    CHECK_STR(sl_tensor_describe(&t, buf, sizeof buf), "int32[4,5,3]@cpu HWC");
    sl_tensor_free(&s); /* a view: no-op */
    sl_tensor_free(&t);
    sl_tensor_free(&dense);
    sl_tensor_free(&t); /* twice: no-op */
}

static void test_tlist(void) {
    sl_err e;
    sl_tlist l;
    memset(&l, 0, sizeof l);
    CHECK_OK(sl_tlist_reset(&l, 3, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    int64_t shapes[9] = {2, 3, 1, 4, 5, 1, 2, 3, 1};
    CHECK_OK(sl_tlist_alloc(&l, shapes, &e), &e);
    CHECK(!sl_tlist_uniform(&l));
    CHECK_EQ_INT(sl_tlist_sample_nbytes(&l, 1), 20);
    void *first = l.buf;
    for (int i = 0; i < 3; i++) CHECK_EQ_INT((uintptr_t)l.data[i] % 64, 0); /* mixed shapes */
    sl_tensor t;
    CHECK_FAILS(sl_tlist_as_tensor(&l, &t, &e), SL_EINVAL, &e, "shape");
    /* recycle: a smaller batch reuses the buffer */
    CHECK_OK(sl_tlist_reset(&l, 2, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    int64_t same[6] = {28, 28, 1, 28, 28, 1};
    CHECK_OK(sl_tlist_alloc(&l, same, &e), &e);
    CHECK(l.buf == first || l.buf_size >= 2 * 832);
    strcpy(l.layout, "HWC");
    sl_tlist_sample(&l, 1, &t);
    CHECK_EQ_INT(t.shape[0], 28);
    CHECK_STR(t.layout, "HWC");
    CHECK_OK(sl_tlist_as_tensor(&l, &t, &e), &e); /* one shape: packed, a dense batch */
    CHECK_STR(t.layout, "NHWC");
    CHECK_EQ_INT(t.shape[0], 2);
    unsigned char ext[4] = {1, 2, 3, 4};
    int64_t es[3] = {4, 1, 1};
    sl_tlist_set_external(&l, 0, ext, es);
    CHECK(l.data[0] == ext);
    CHECK_EQ_INT(sl_tlist_shape(&l, 0)[0], 4);
    sl_tlist_free(&l);
    sl_tlist_free(&l);
}

int main(void) {
    test_dtypes();
    test_half();
    test_views();
    test_tlist();
    return check_done();
}
