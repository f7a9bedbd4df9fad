/* SPDX-License-Identifier: Apache-2.0 */
/* COCO annotation files (instances_*.json) as DALI's readers.coco sees them: the images, sorted by
 * id, each with its boxes and labels in the file's order; the categories remapped to 1..K in the
 * order they are listed (unless told to keep their ids); annotations under size_threshold (width or
 * height) or, when asked, crowd ones left out; images without boxes left out with skip_empty.
 * With masks asked for, each kept annotation's segmentation is read too: polygons (lists of x, y)
 * and, for pixel-wise masks, COCO's run-length encodings (counts as numbers or as COCO's string).
 * The JSON is parsed with cJSON (libcjson-dev); a build without it refuses with SL_ENOTSUP. Every
 * flaw is SL_EFORMAT naming the file and the entry (images[3], annotations[17] with its id):
 * a wrong type, a missing field, a box with NaN or a negative size, an image or category id that
 * points nowhere, a duplicate id, a polygon with an odd number of coordinates, an RLE whose size
 * is not its image's or whose counts do not cover it. DALI's preprocessed annotation files
 * (save_preprocessed_annotations) are written and read by sl__coco_save and sl__coco_load. */
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
    bool polygons; /* read the polygons of the segmentations (polygon_masks, pixelwise_masks) */
    bool rles;     /* and their RLE masks, with the images' sizes (pixelwise_masks) */
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
/* image i's polygons (p, 3) int32: [object index, first vertex, end vertex], the vertices counted
 * from the image's first; and its vertices (v, 2) float (x, y) */
int64_t sl__coco_polygons(const sl__coco *c, int64_t i, const int32_t **polys);
int64_t sl__coco_vertices(const sl__coco *c, int64_t i, const float **verts);
/* image i's size in pixels (pixelwise_masks: always known) */
void sl__coco_size(const sl__coco *c, int64_t i, int64_t *h, int64_t *w);

/* Image i's pixel-wise mask, out (h, w) int32 (sl__coco_size): each pixel the label of the object
 * whose mask covers it, the largest label where masks of several labels overlap, 0 where none
 * does. Polygons are rasterised as COCO's tools (and DALI) do. SL_EFORMAT naming the object for a
 * polygon too far outside the image to rasterise. */
sl_status sl__coco_mask(const sl__coco *c, int64_t i, int32_t *out, sl_err *err);

/* What the preprocessed files hold beyond boxes, labels and file names (DALI's choice by the
 * reader's outputs). */
typedef struct sl__coco_parts {
    bool polygons, masks, ids;
} sl__coco_parts;
/* Writes DALI's preprocessed annotation files into the folder dir (which must exist), each whole
 * or not at all. */
sl_status sl__coco_save(const sl__coco *c, const char *dir, const sl__coco_parts *p, sl_err *err);
/* Reads the preprocessed files in dir back; a missing, truncated or inconsistent file is an error
 * naming it (SL_EFORMAT, SL_ENOENT for a missing one that is needed). */
sl_status sl__coco_load(const char *dir, const sl__coco_parts *p, sl__coco **out, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
