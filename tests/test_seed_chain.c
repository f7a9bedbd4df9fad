/* SPDX-License-Identifier: Apache-2.0 */
/* The seed's chain on real Fashion-MNIST JPEGs from the caffe2 LMDB fixture: decoders.image(GRAY)
 * -> crop_mirror_normalize(dtype=FLOAT, std=[255.0], output_layout="CHW") -> reshape(shape=[784]),
 * and one_hot(num_classes=10) on the labels. Each (784,) row must equal pixel * (float)(1/255.0)
 * exactly (DALI's folded formula) and pixel/255 within one float ulp; each label row is one-hot.
 * The LMDB is read here with liblmdb and a few lines of protobuf (Caffe2 TensorProtos: protos=1,
 * in each string_data=6 holds the JPEG and int32_data=4 the label), not with src/io. */
#include "check.h"
#include "opharness.h"

#include <lmdb.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64

typedef struct {
    const uint8_t *p, *end;
} pb;

static int varint(pb *b, uint64_t *v) {
    *v = 0;
    for (int s = 0; s < 64 && b->p < b->end; s += 7) {
        uint8_t c = *b->p++;
        *v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) return 0;
    }
    return -1;
}

/* one TensorProto: the bytes of its string_data, or its first int32 */
static void tensor_proto(pb b, const uint8_t **jpeg, size_t *len, int *label) {
    while (b.p < b.end) {
        uint64_t tag, v;
        if (varint(&b, &tag)) return;
        int field = (int)(tag >> 3), wt = (int)(tag & 7);
        if (wt == 0) {
            if (varint(&b, &v)) return;
            if (field == 4) *label = (int)v;
        } else if (wt == 2) {
            if (varint(&b, &v) || v > (uint64_t)(b.end - b.p)) return;
            if (field == 6) *jpeg = b.p, *len = (size_t)v;
            if (field == 4) { /* packed */
                pb in = {b.p, b.p + v};
                uint64_t x;
                if (!varint(&in, &x)) *label = (int)x;
            }
            b.p += v;
        } else if (wt == 5) {
            b.p += 4;
        } else if (wt == 1) {
            b.p += 8;
        } else {
            return;
        }
    }
}

int main(void) {
    sl_err e;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    CHECK_EQ_INT(mdb_env_create(&env), 0);
    CHECK_EQ_INT(
        mdb_env_open(env, fixture("caffe2-fmnist-256"), MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0444),
        0);
    CHECK_EQ_INT(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    CHECK_EQ_INT(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
    CHECK_EQ_INT(mdb_cursor_open(txn, dbi, &cur), 0);
    const void *jpegs[BATCH];
    size_t lens[BATCH];
    int labels[BATCH];
    char keybuf[BATCH][64];
    const char *keys[BATCH];
    MDB_val k, v;
    int n = 0;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && n < BATCH;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        pb b = {v.mv_data, (const uint8_t *)v.mv_data + v.mv_size};
        const uint8_t *jpeg = NULL;
        size_t len = 0;
        int label = -1, found = 0;
        while (b.p < b.end) {
            uint64_t tag, l;
            if (varint(&b, &tag) || (tag & 7) != 2 || varint(&b, &l)) break;
            pb sub = {b.p, b.p + l};
            tensor_proto(sub, &jpeg, &len, &label);
            b.p += l;
            found++;
        }
        CHECK(found == 2 && jpeg && label >= 0 && label < 10);
        jpegs[n] = jpeg, lens[n] = len, labels[n] = label;
        snprintf(keybuf[n], sizeof keybuf[n], "%.*s", (int)k.mv_size, (const char *)k.mv_data);
        keys[n] = keybuf[n];
        n++;
    }
    CHECK_EQ_INT(n, BATCH);

    sl_tlist enc, lab;
    memset(&enc, 0, sizeof enc), memset(&lab, 0, sizeof lab);
    CHECK_OK(oph_bytes(&enc, BATCH, jpegs, lens, &e), &e);
    CHECK_OK(sl_tlist_reset(&lab, BATCH, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    int64_t one[BATCH];
    for (int i = 0; i < BATCH; i++) one[i] = 1;
    CHECK_OK(sl_tlist_alloc(&lab, one, &e), &e);
    for (int i = 0; i < BATCH; i++) *(int32_t *)lab.data[i] = labels[i];

    oph dec, cmn, rs, oh;
    const char *a_dec[] = {"output_type=types.GRAY", NULL};
    const char *a_cmn[] = {"dtype=types.FLOAT", "std=[255.0]", "output_layout=\"CHW\"", NULL};
    const char *a_rs[] = {"shape=[784]", NULL};
    const char *a_oh[] = {"num_classes=10", NULL};
    CHECK_OK(oph_create(&dec, "decoders.image", a_dec, 2, BATCH, 0, &e), &e);
    CHECK(dec.def->devices & SL_OPDEV_MIXED); /* the seed's device="mixed" (the executor's arg) */
    CHECK_OK(oph_create(&cmn, "crop_mirror_normalize", a_cmn, 2, BATCH, 0, &e), &e);
    CHECK_OK(oph_create(&rs, "reshape", a_rs, 1, BATCH, 0, &e), &e);
    CHECK_OK(oph_create(&oh, "one_hot", a_oh, 1, BATCH, 0, &e), &e);
    sl_tlist *in0[1] = {&enc}, *in1[1] = {&dec.out[0]}, *in2[1] = {&cmn.out[0]}, *in3[1] = {&lab};
    CHECK_OK(oph_run(&dec, BATCH, in0, 1, NULL, 0, keys, 0, &e), &e);
    CHECK_OK(oph_run(&cmn, BATCH, in1, 1, NULL, 0, keys, 0, &e), &e);
    CHECK_OK(oph_run(&rs, BATCH, in2, 1, NULL, 0, keys, 0, &e), &e);
    CHECK_OK(oph_run(&oh, BATCH, in3, 1, NULL, 0, keys, 0, &e), &e);

    CHECK_EQ_INT(rs.out[0].dtype, SL_DTYPE_F32);
    CHECK_EQ_INT(rs.out[0].ndim, 1);
    CHECK_STR(rs.out[0].layout, "");
    CHECK_STR(cmn.out[0].layout, "CHW");
    int exact = 0, ulp = 0, shapes = 0, nocopy = 0, hot = 0;
    double maxrel = 0;
    const float inv = (float)(1.0 / 255.0);
    for (int i = 0; i < BATCH; i++) {
        const int64_t *ds = sl_tlist_shape(&dec.out[0], i);
        shapes +=
            ds[0] == 28 && ds[1] == 28 && ds[2] == 1 && sl_tlist_shape(&rs.out[0], i)[0] == 784;
        nocopy += rs.out[0].data[i] == cmn.out[0].data[i];
        const uint8_t *px = dec.out[0].data[i];
        const float *f = rs.out[0].data[i];
        for (int j = 0; j < 784; j++) {
            exact += f[j] == (float)px[j] * inv;
            float want = (float)px[j] / 255.0f;
            ulp += f[j] == want || nextafterf(f[j], want) == want;
            if (want > 0 && fabs(f[j] - want) / want > maxrel) maxrel = fabs(f[j] - want) / want;
        }
        const float *o = oh.out[0].data[i];
        int ok = sl_tlist_shape(&oh.out[0], i)[0] == 10 && oh.out[0].ndim == 1;
        for (int c = 0; c < 10; c++) ok &= o[c] == (c == labels[i] ? 1.0f : 0.0f);
        hot += ok;
    }
    printf("seed chain: %d samples, max relative diff to pixel/255 %.3g\n", BATCH, maxrel);
    CHECK_EQ_INT(shapes, BATCH);
    CHECK_EQ_INT(nocopy, BATCH);
    CHECK_EQ_INT(exact, BATCH * 784);
    CHECK_EQ_INT(ulp, BATCH * 784);
    CHECK_EQ_INT(hot, BATCH);
    /* not all black: real images */
    double sum = 0;
    for (int j = 0; j < 784; j++) sum += ((const float *)rs.out[0].data[0])[j];
    CHECK(sum > 10);

    oph_destroy(&dec), oph_destroy(&cmn), oph_destroy(&rs), oph_destroy(&oh);
    sl_tlist_free(&enc), sl_tlist_free(&lab);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return check_done();
}
