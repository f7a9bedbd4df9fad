/* SPDX-License-Identifier: Apache-2.0 */
/* Caffe Datum records (see caffe.h): parsing with the protowire reader and the encoder used by
 * convert (field order as the official protobuf library writes it). */
#include "io/caffe.h"

#include <stdint.h>
#include <string.h>

sl_status sl__caffe_parse(const uint8_t *rec, size_t len, sl__caffe_datum *d, sl_err *err) {
    sl__pw r;
    sl__pw_field f;
    int rc;
    memset(d, 0, sizeof *d);
    sl__protowire_init(&r, rec, len);
    while ((rc = sl__protowire_next(&r, &f)) == 1) {
        switch (f.num) {
        case 1:
        case 2:
        case 3:
        case 5:
        case 7:
            if (f.wt != SL_PW_VARINT)
                return sl_err_set(err, SL_EFORMAT, "Datum field %u has wire type %d", f.num, f.wt);
            /* int32 fields: a negative value comes sign-extended to 64 bits; anything else
               outside int32 is refused rather than cut to its low bits */
            if (f.num != 7 && ((int64_t)f.u < INT32_MIN || (int64_t)f.u > INT32_MAX))
                return sl_err_set(err, SL_EFORMAT, "Datum.%s is %llu, outside int32",
                                  f.num == 1   ? "channels"
                                  : f.num == 2 ? "height"
                                  : f.num == 3 ? "width"
                                               : "label",
                                  (unsigned long long)f.u);
            if (f.num == 1) d->channels = (int32_t)(uint32_t)f.u;
            if (f.num == 2) d->height = (int32_t)(uint32_t)f.u;
            if (f.num == 3) d->width = (int32_t)(uint32_t)f.u;
            if (f.num == 5) d->label = (int32_t)(uint32_t)f.u, d->has_label = true;
            if (f.num == 7) d->encoded = f.u != 0, d->has_encoded = true;
            break;
        case 4:
            if (f.wt != SL_PW_LEN)
                return sl_err_set(err, SL_EFORMAT, "Datum.data has wire type %d", f.wt);
            d->data = f.data;
            d->ndata = f.len;
            d->has_data = true;
            break;
        default:
            break;
        }
    }
    if (rc < 0) return sl_err_set(err, SL_EFORMAT, "not a Datum message (truncated or garbage)");
    return SL_OK;
}

void sl__caffe_encode(sl__pw_buf *b, const void *image, size_t nimage, bool raw, int h, int w,
                      int c, int32_t label) {
    sl__protowire_put_varint(b, 1, (uint64_t)c);
    sl__protowire_put_varint(b, 2, (uint64_t)h);
    sl__protowire_put_varint(b, 3, (uint64_t)w);
    sl__protowire_put_bytes(b, 4, image, nimage);
    sl__protowire_put_varint(b, 5, (uint64_t)(int64_t)label);
    sl__protowire_put_varint(b, 7, raw ? 0 : 1);
}
