/* SPDX-License-Identifier: Apache-2.0 */
/* COCO annotation files (readers.coco's), parsed from memory with the options of the input's last
 * byte (ltrb, ratio, skip_empty, include_iscrowd, avoid_class_remapping, a zero size_threshold,
 * polygons, polygons and RLE masks), and every kept image's boxes, labels, polygons and vertices
 * read back and, with RLE masks, its pixel-wise mask rasterised (images up to 2^20 pixels). */
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
                       .size_threshold = (f >> 5) & 1 ? 0.0 : 0.1,
                       .polygons = (f >> 6) & 1,
                       .rles = (f >> 7) & 1};
    o.polygons |= o.rles;
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
        if (!o.polygons) continue;
        const int32_t *p;
        const float *v;
        int64_t np = sl__coco_polygons(c, i, &p), nv = sl__coco_vertices(c, i, &v);
        for (int64_t k = 0; k < np; k++) sink += (float)(p[3 * k] + p[3 * k + 1] + p[3 * k + 2]);
        for (int64_t k = 0; k < nv; k++) sink += v[2 * k] + v[2 * k + 1];
        int64_t h, w;
        sl__coco_size(c, i, &h, &w);
        if (!o.rles || h * w > (1 << 20)) continue;
        int32_t *m = malloc((size_t)(h * w) * sizeof *m);
        if (m && sl__coco_mask(c, i, m, &err) == SL_OK) sink += (float)m[h * w - 1];
        free(m);
    }
    (void)sink;
    sl__coco_close(c);
    return 0;
}
