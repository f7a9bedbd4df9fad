/* SPDX-License-Identifier: Apache-2.0 */
/* COCO annotation files (readers.coco's), parsed from memory with the options of the input's last
 * byte (ltrb, ratio, skip_empty, include_iscrowd, avoid_class_remapping, a zero size_threshold),
 * and every kept image's boxes and labels read back. */
#include "fuzz.h"
#include "io/coco.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    uint8_t f = data[size - 1];
    sl__coco_opts o = {.ltrb = f & 1,
                       .ratio = (f >> 1) & 1,
                       .skip_empty = (f >> 2) & 1,
                       .include_iscrowd = !((f >> 3) & 1),
                       .keep_ids = (f >> 4) & 1,
                       .size_threshold = (f >> 5) & 1 ? 0.0 : 0.1};
    sl__coco *c;
    sl_err err;
    if (sl__coco_parse((const char *)data, size - 1, "fuzz.json", &o, &c, &err) != SL_OK) return 0;
    volatile float sink = 0;
    for (int64_t i = 0; i < sl__coco_count(c); i++) {
        const float *b;
        const int32_t *l;
        int64_t n = sl__coco_boxes(c, i, &b, &l);
        for (int64_t k = 0; k < n; k++) sink += b[4 * k + 3] + (float)l[k];
        sink += (float)sl__coco_image_id(c, i) + (float)sl__coco_file(c, i)[0];
    }
    (void)sink;
    sl__coco_close(c);
    return 0;
}
