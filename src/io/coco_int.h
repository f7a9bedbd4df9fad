/* SPDX-License-Identifier: Apache-2.0 */
/* What coco.c, coco_mask.c and coco_pre.c share: the parsed annotations as flat arrays, laid out
 * as DALI's COCO loader keeps them, so that its preprocessed files (coco_pre.c) are these arrays
 * written out. Each image owns a run of objects (boxes, labels), of polygons (mask index within
 * the image's objects, first and end vertex within the image's vertices) and vertices, and of RLE
 * masks. */
#ifndef SLUICE_IO_COCO_INT_H
#define SLUICE_IO_COCO_INT_H

#include "io/coco.h"

typedef struct sl__coco_image {
    char *file;
    int32_t id;
    double w, h;        /* 0 when absent */
    int64_t first, n;   /* objects: into boxes, labels */
    int64_t pfirst, pn; /* polygons: into polys */
    int64_t vfirst, vn; /* vertices: into verts */
    int64_t rfirst, rn; /* RLE masks: into rles */
    int64_t order;      /* index in the file, for messages */
} sl__coco_image;

typedef struct sl__coco_rle {
    int32_t mask;     /* object index within the image */
    int64_t h, w;     /* the mask's size */
    int64_t first, m; /* its counts: into cnts */
} sl__coco_rle;

struct sl__coco {
    sl__coco_image *img;
    int64_t n;
    float *boxes;    /* (nobj, 4) */
    int32_t *labels; /* (nobj,) */
    int64_t nobj;
    int32_t *polys; /* (npoly, 3) */
    int64_t npoly;
    float *verts;    /* (nvert, 2), as output (divided by the image's size with ratio) */
    float *verts_px; /* (nvert, 2) in pixels, for the masks; NULL: verts are */
    int64_t nvert;
    sl__coco_rle *rles;
    int64_t nrle;
    uint32_t *cnts;
    int64_t ncnt;
};

#endif
