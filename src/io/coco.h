/* SPDX-License-Identifier: Apache-2.0 */
/* COCO annotation files (instances_*.json) as DALI's readers.coco sees them: the images, sorted by
 * id, each with its boxes and labels in the file's order; the categories remapped to 1..K in the
 * order they are listed (unless told to keep their ids); annotations under size_threshold (width or
 * height) or, when asked, crowd ones left out; images without boxes left out with skip_empty.
 * The JSON is parsed with cJSON (libcjson-dev); a build without it refuses with SL_ENOTSUP. Every
 * flaw is SL_EFORMAT naming the file and the entry (images[3], annotations[17] with its id):
 * a wrong type, a missing field, a box with NaN or a negative size, an image or category id that
 * points nowhere, a duplicate id. */
#ifndef SLUICE_IO_COCO_H
#define SLUICE_IO_COCO_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__coco_opts {
    bool ltrb;            /* boxes as [l, t, r, b] instead of [x, y, w, h] */
    bool ratio;           /* coordinates divided by the image's width and height */
    bool skip_empty;      /* leave out images without a box */
    bool include_iscrowd; /* keep annotations with iscrowd = 1 */
    bool keep_ids;        /* avoid_class_remapping: labels are the category ids */
    double size_threshold;
} sl__coco_opts;

typedef struct sl__coco sl__coco;

/* Parses the n bytes of json (need not end with a NUL); path names the file in messages. */
sl_status sl__coco_parse(const char *json, size_t n, const char *path, const sl__coco_opts *o,
                         sl__coco **out, sl_err *err);
/* Reads and parses the file at path. */
sl_status sl__coco_open(const char *path, const sl__coco_opts *o, sl__coco **out, sl_err *err);
void sl__coco_close(sl__coco *c);

int64_t sl__coco_count(const sl__coco *c); /* images kept */
const char *sl__coco_file(const sl__coco *c, int64_t i);
int32_t sl__coco_image_id(const sl__coco *c, int64_t i);
/* image i's boxes: (n, 4) float and labels: (n,) int32 */
int64_t sl__coco_boxes(const sl__coco *c, int64_t i, const float **boxes, const int32_t **labels);

#ifdef __cplusplus
}
#endif
#endif
