/* SPDX-License-Identifier: Apache-2.0 */
/* Caffe2 records (docs/dali.md 4.1/4.2): a TensorProtos message whose protos are, in order,
 * the image (STRING: encoded bytes in string_data[0]; BYTE: raw H,W[,C] in byte_data), the label
 * (INT32 or FLOAT; SINGLE_LABEL, MULTI_LABEL_SPARSE, MULTI_LABEL_DENSE, MULTI_LABEL_WEIGHTED_SPARSE
 * or NO_LABEL), additional inputs and an optional bounding box. Parsing is zero-copy (views into
 * the record); an encoder writes records as the official protobuf library does. */
#ifndef SLUICE_IO_CAFFE2_H
#define SLUICE_IO_CAFFE2_H

#include "io/protowire.h"
#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    SL_C2_UNDEFINED = 0,
    SL_C2_FLOAT = 1,
    SL_C2_INT32 = 2,
    SL_C2_BYTE = 3,
    SL_C2_STRING = 4,
    SL_C2_BOOL = 5,
    SL_C2_UINT8 = 6,
    SL_C2_INT8 = 7,
    SL_C2_UINT16 = 8,
    SL_C2_INT16 = 9,
    SL_C2_INT64 = 10,
    SL_C2_FLOAT16 = 12,
    SL_C2_DOUBLE = 13
};
enum {
    SL_C2_SINGLE_LABEL = 0,
    SL_C2_MULTI_LABEL_SPARSE = 1,
    SL_C2_MULTI_LABEL_DENSE = 2,
    SL_C2_MULTI_LABEL_WEIGHTED_SPARSE = 3,
    SL_C2_NO_LABEL = 4
};

typedef struct sl__caffe2_tensor {
    int data_type;      /* default FLOAT */
    const uint8_t *msg; /* the TensorProto bytes */
    size_t len;
    const uint8_t *bytes; /* byte_data, NULL if absent */
    size_t nbytes;
    const uint8_t *str0; /* string_data[0], NULL if absent */
    size_t nstr0;
    int nstrings;
} sl__caffe2_tensor;

#define SL_CAFFE2_MAX_PROTOS 64
typedef struct sl__caffe2_record {
    int n;
    sl__caffe2_tensor t[SL_CAFFE2_MAX_PROTOS];
} sl__caffe2_record;

/* Splits a record into its protos. SL_EFORMAT with a short reason (callers add path and key). */
sl_status sl__caffe2_parse(const uint8_t *rec, size_t len, sl__caffe2_record *out, sl_err *err);
/* Numeric values of a proto as doubles (INT32/INT64/FLOAT/DOUBLE and the small int types): up to
 * cap into out; returns the count, or -1 when malformed or not numeric. */
int64_t sl__caffe2_values(const sl__caffe2_tensor *t, double *out, int64_t cap);
/* dims: up to cap; returns the count or -1. */
int sl__caffe2_dims(const sl__caffe2_tensor *t, int64_t *out, int cap);

/* Encodes {image STRING (encoded bytes), label INT32 dims [1]} (MNIST-style, byte for byte as the
 * fixtures written by the official protobuf library), or with
 * raw != 0 {image BYTE dims (h, w, c) with byte_data, label INT32}. Appends to b. */
void sl__caffe2_encode(sl__pw_buf *b, const void *image, size_t nimage, bool raw, int h, int w,
                       int c, int32_t label);

#ifdef __cplusplus
}
#endif
#endif
