/* SPDX-License-Identifier: Apache-2.0 */
/* Caffe2 (TensorProtos) and Caffe (Datum) records as the readers parse them, with every value and
 * dimension read back. */
#include "fuzz.h"
#include "io/caffe.h"
#include "io/caffe2.h"
#include "sluice/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sl_err err;
    sl__caffe2_record rec;
    if (sl__caffe2_parse(data, size, &rec, &err) == SL_OK) {
        for (int i = 0; i < rec.n; i++) {
            double v[64];
            int64_t dims[SL_MAX_DIMS];
            sl__caffe2_values(&rec.t[i], v, 64);
            sl__caffe2_dims(&rec.t[i], dims, SL_MAX_DIMS);
        }
    }
    sl__caffe_datum d;
    sl__caffe_parse(data, size, &d, &err);
    return 0;
}
