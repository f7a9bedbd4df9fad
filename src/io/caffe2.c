/* SPDX-License-Identifier: Apache-2.0 */
/* Caffe2 TensorProtos records (see caffe2.h): zero-copy parsing with the protowire reader, numeric
 * value extraction for labels and additional inputs, and the record encoder used by convert. */
#include "io/caffe2.h"

#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static sl_status parse_tensor(const uint8_t *msg, size_t len, int idx, sl__caffe2_tensor *t,
                              sl_err *err) {
    sl__pw r;
    sl__pw_field f;
    int rc;
    memset(t, 0, sizeof *t);
    t->data_type = SL_C2_FLOAT;
    t->msg = msg;
    t->len = len;
    sl__protowire_init(&r, msg, len);
    while ((rc = sl__protowire_next(&r, &f)) == 1) {
        switch (f.num) {
        case 2:
            if (f.wt != SL_PW_VARINT) goto bad_type;
            t->data_type = (int)(int32_t)f.u;
            break;
        case 5:
            if (f.wt != SL_PW_LEN) goto bad_type;
            t->bytes = f.data;
            t->nbytes = f.len;
            break;
        case 6:
            if (f.wt != SL_PW_LEN) goto bad_type;
            if (t->nstrings++ == 0) {
                t->str0 = f.data;
                t->nstr0 = f.len;
            }
            break;
        case 7:
        case 11:
            if (f.wt != SL_PW_LEN) goto bad_type;
            break;
        default:
            break; /* repeated scalars are read on demand; unknown fields are skipped */
        }
    }
    if (rc < 0)
        return sl_err_set(err, SL_EFORMAT, "TensorProto %d is malformed (truncated or garbage)",
                          idx);
    return SL_OK;
bad_type:
    return sl_err_set(err, SL_EFORMAT, "TensorProto %d: field %u has wire type %d", idx, f.num,
                      f.wt);
}

sl_status sl__caffe2_parse(const uint8_t *rec, size_t len, sl__caffe2_record *out, sl_err *err) {
    sl__pw r;
    sl__pw_field f;
    int rc;
    out->n = 0;
    sl__protowire_init(&r, rec, len);
    while ((rc = sl__protowire_next(&r, &f)) == 1) {
        if (f.num != 1) continue;
        if (f.wt != SL_PW_LEN)
            return sl_err_set(err, SL_EFORMAT, "TensorProtos.protos has wire type %d", f.wt);
        if (out->n == SL_CAFFE2_MAX_PROTOS)
            return sl_err_set(err, SL_ENOTSUP, "more than %d protos in one record",
                              SL_CAFFE2_MAX_PROTOS);
        SL_TRY(parse_tensor(f.data, f.len, out->n, &out->t[out->n], err));
        out->n++;
    }
    if (rc < 0)
        return sl_err_set(err, SL_EFORMAT, "not a TensorProtos message (truncated or garbage)");
    return SL_OK;
}

int64_t sl__caffe2_values(const sl__caffe2_tensor *t, double *out, int64_t cap) {
    uint64_t tmp[256];
    int64_t n;
    int field, kind;
    switch (t->data_type) {
    case SL_C2_FLOAT:
        field = 3, kind = SL_PW_FIXED32;
        break;
    case SL_C2_DOUBLE:
        field = 9, kind = SL_PW_FIXED64;
        break;
    case SL_C2_INT64:
        field = 10, kind = SL_PW_VARINT;
        break;
    case SL_C2_INT32:
    case SL_C2_BOOL:
    case SL_C2_UINT8:
    case SL_C2_INT8:
    case SL_C2_UINT16:
    case SL_C2_INT16:
        field = 4, kind = SL_PW_VARINT;
        break;
    default:
        return -1;
    }
    /* one pass when the values wanted fit tmp (labels: one), a second for more */
    int64_t m0 = out && cap > 0 ? (cap < 256 ? cap : 256) : 0;
    n = sl__protowire_repeated(t->msg, t->len, (uint32_t)field, kind, m0 ? tmp : NULL, m0);
    if (n < 0 || !out || cap <= 0) return n;
    int64_t m = n < cap ? n : cap;
    uint64_t *raw = m <= 256 ? tmp : malloc((size_t)m * sizeof *raw);
    if (!raw) return -1;
    if (raw != tmp) sl__protowire_repeated(t->msg, t->len, (uint32_t)field, kind, raw, m);
    for (int64_t k = 0; k < m; k++) {
        uint64_t u = raw[k];
        if (kind == SL_PW_FIXED32) {
            float x;
            uint32_t w = (uint32_t)u;
            memcpy(&x, &w, 4);
            out[k] = x;
        } else if (kind == SL_PW_FIXED64) {
            memcpy(&out[k], &u, 8);
        } else if (t->data_type == SL_C2_INT64) {
            out[k] = (double)(int64_t)u;
        } else {
            out[k] = (double)(int32_t)(uint32_t)u;
        }
    }
    if (raw != tmp) free(raw);
    return n;
}

int sl__caffe2_dims(const sl__caffe2_tensor *t, int64_t *out, int cap) {
    uint64_t d[16];
    int64_t n = sl__protowire_repeated(t->msg, t->len, 1, SL_PW_VARINT, d, 16);
    if (n < 0) return -1;
    for (int64_t i = 0; i < n && i < cap && i < 16; i++) out[i] = (int64_t)d[i];
    return (int)n;
}

void sl__caffe2_encode(sl__pw_buf *b, const void *image, size_t nimage, bool raw, int h, int w,
                       int c, int32_t label) {
    sl__pw_buf img = {0}, lab = {0};
    if (raw) {
        sl__protowire_put_varint(&img, 1, (uint64_t)h);
        sl__protowire_put_varint(&img, 1, (uint64_t)w);
        sl__protowire_put_varint(&img, 1, (uint64_t)c);
        sl__protowire_put_varint(&img, 2, SL_C2_BYTE);
        sl__protowire_put_bytes(&img, 5, image, nimage);
    } else {
        sl__protowire_put_varint(&img, 2, SL_C2_STRING);
        sl__protowire_put_bytes(&img, 6, image, nimage);
    }
    sl__protowire_put_varint(&lab, 1, 1); /* dims: [1], as the official writers produce */
    sl__protowire_put_varint(&lab, 2, SL_C2_INT32);
    /* int32_data is [packed=true]: one LEN field holding the varint */
    sl__pw_buf packed = {0};
    sl__protowire_put_raw_varint(&packed, (uint64_t)(int64_t)label);
    sl__protowire_put_bytes(&lab, 4, packed.data, packed.len);
    sl__protowire_put_bytes(b, 1, img.data, img.len);
    sl__protowire_put_bytes(b, 1, lab.data, lab.len);
    if (img.oom || lab.oom || packed.oom) b->oom = true;
    sl__protowire_buf_free(&img);
    sl__protowire_buf_free(&lab);
    sl__protowire_buf_free(&packed);
}
