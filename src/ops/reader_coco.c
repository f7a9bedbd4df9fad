/* SPDX-License-Identifier: Apache-2.0 */
/* readers.coco (reader.h): the images of a COCO data set (file_root + annotations_file) with their
 * boxes and labels (io/coco.h). The images are the records of a file list under file_root, in
 * DALI's order (sorted by image id; shuffled once with random_shuffle), so that sharding,
 * shuffling, global order and checkpoints are the other file readers'; each record's label is its
 * image's index into the annotations. Outputs: the encoded image as uint8 bytes, the boxes (N, 4)
 * float ([x, y, w, h], or [l, t, r, b] with ltrb; divided by the image's size with ratio), the
 * labels (N,) int32, then with polygon_masks the polygons (P, 3) int32 and vertices (V, 2) float,
 * or with pixelwise_masks the mask (H, W, 1) int32 (rasterised by run_cpu, io/coco_mask.c), and
 * with image_ids the image's id (1,) int32. The annotations come from the JSON file or from DALI's
 * preprocessed files (preprocessed_annotations), and can be saved in that form
 * (save_preprocessed_annotations). */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"
#include "io/coco.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct coco_reader {
    sl__reader r; /* first: the common part */
    sl__coco *coco;
    bool image_ids, polygons, masks;
    int64_t *sizes;  /* batch: file sizes */
    int64_t *shapes; /* batch x 3 */
} coco_reader;

static const sl__arg_schema coco_args[] = {
    {"file_root", SL_ARG_STR, NULL, "folder the annotations' file_name entries are relative to",
     SL_ARGF_REQUIRED, NULL},
    {"annotations_file", SL_ARG_STR, "\"\"", "COCO annotation file (JSON, instances_*.json)", 0,
     NULL},
    {"ltrb", SL_ARG_BOOL, "False", "boxes as [l, t, r, b] instead of [x, y, w, h]", 0, NULL},
    {"ratio", SL_ARG_BOOL, "False",
     "box coordinates relative to the image's size (divided by its width and height)", 0, NULL},
    {"skip_empty", SL_ARG_BOOL, "False", "leave out images without a box", 0, NULL},
    {"size_threshold", SL_ARG_FLOAT, "0.1",
     "leave out boxes whose width or height (in pixels) is below this", 0, NULL},
    {"avoid_class_remapping", SL_ARG_BOOL, "False",
     "labels are the category ids as they are, not 1..K in the categories' order", 0, NULL},
    {"include_iscrowd", SL_ARG_BOOL, "True", "keep annotations marked iscrowd", 0, NULL},
    {"image_ids", SL_ARG_BOOL, "False", "also output each image's id, int32 (1,)", 0, NULL},
    {"images", SL_ARG_STRS, NULL, "not supported: refused", 0, NULL},
    {"polygon_masks", SL_ARG_BOOL, "False",
     "also output the masks' polygons (P, 3) int32 [object, first vertex, end vertex] and "
     "vertices (V, 2) float",
     0, NULL},
    {"pixelwise_masks", SL_ARG_BOOL, "False",
     "also output a mask (H, W, 1) int32: each pixel its object's label, 0 for none", 0, NULL},
    {"preprocessed_annotations", SL_ARG_STR, "\"\"",
     "folder of DALI's preprocessed annotation files to read instead of annotations_file", 0, NULL},
    {"save_preprocessed_annotations", SL_ARG_BOOL, "False",
     "write the annotations, as read, in DALI's preprocessed form", 0, NULL},
    {"save_preprocessed_annotations_dir", SL_ARG_STR, "\"\"",
     "the folder save_preprocessed_annotations writes to", 0, NULL},
    SL__READER_ARGS(
        "accepted; no effect (a batch's files are read, in parallel, as it is prepared)",
        "accepted; no effect (files are read into the outputs, never mapped)",
        "accepted; no effect (outputs are sized per batch from the files' sizes)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void coco_free(void *state) {
    coco_reader *f = state;
    if (!f) return;
    sl__coco_close(f->coco);
    free(f->sizes);
    free(f->shapes);
    sl__reader_free(&f->r);
}

static int coco_outputs(const sl__args *a) {
    return 3 + 2 * sl__args_bool(a, "polygon_masks") + sl__args_bool(a, "pixelwise_masks") +
           sl__args_bool(a, "image_ids");
}

static bool given_str(const sl__args *a, const char *name) {
    const char *s = sl__args_str(a, name);
    return s && s[0];
}

/* the arguments that go together or exclude each other, as DALI has them; images=[...] is
 * refused as not supported */
static sl_status check_args(const sl__args *a, sl_err *err) {
    if (sl__args_bool(a, "polygon_masks") && sl__args_bool(a, "pixelwise_masks"))
        return sl_err_set(err, SL_EINVAL,
                          "readers.coco: polygon_masks and pixelwise_masks exclude each other");
    if (sl__args_given(a, "images"))
        return sl_err_set(err, SL_ENOTSUP,
                          "readers.coco: images=[...] is not supported (every image of the "
                          "annotations is read)");
    bool save = sl__args_bool(a, "save_preprocessed_annotations");
    if (save != given_str(a, "save_preprocessed_annotations_dir"))
        return sl_err_set(err, SL_EINVAL,
                          "readers.coco: save_preprocessed_annotations=True and "
                          "save_preprocessed_annotations_dir go together");
    if (given_str(a, "preprocessed_annotations")) {
        static const char *const no[] = {"annotations_file",
                                         "skip_empty",
                                         "ratio",
                                         "ltrb",
                                         "size_threshold",
                                         "include_iscrowd",
                                         "avoid_class_remapping",
                                         "save_preprocessed_annotations",
                                         "save_preprocessed_annotations_dir"};
        for (size_t i = 0; i < sizeof no / sizeof *no; i++)
            if (sl__args_given(a, no[i]))
                return sl_err_set(err, SL_EINVAL,
                                  "readers.coco: %s has no meaning with preprocessed_annotations "
                                  "(the files hold the annotations as they were read)",
                                  no[i]);
        return SL_OK;
    }
    if (!given_str(a, "annotations_file"))
        return sl_err_set(err, SL_EINVAL,
                          "readers.coco: annotations_file or preprocessed_annotations is required");
    return SL_OK;
}

/* the annotations, from the JSON file or the preprocessed folder; saved when asked */
static sl_status open_annotations(coco_reader *f, const sl__args *a, const char **path,
                                  sl_err *err) {
    sl__coco_parts parts = {f->polygons, f->masks, f->image_ids};
    const char *pre = sl__args_str(a, "preprocessed_annotations");
    if (pre && pre[0]) {
        *path = pre;
        return sl__coco_load(pre, &parts, &f->coco, err);
    }
    *path = sl__args_str(a, "annotations_file");
    sl__coco_opts o;
    memset(&o, 0, sizeof o);
    o.ltrb = sl__args_bool(a, "ltrb");
    o.ratio = sl__args_bool(a, "ratio");
    o.skip_empty = sl__args_bool(a, "skip_empty");
    o.include_iscrowd = sl__args_bool(a, "include_iscrowd");
    o.keep_ids = sl__args_bool(a, "avoid_class_remapping");
    o.size_threshold = sl__args_float(a, "size_threshold");
    o.polygons = f->polygons || f->masks;
    o.rles = f->masks;
    sl_status st = sl__coco_open(*path, &o, &f->coco, err);
    if (st) return sl_err_prefix(err, "readers.coco: ");
    if (sl__args_bool(a, "save_preprocessed_annotations"))
        st = sl__coco_save(f->coco, sl__args_str(a, "save_preprocessed_annotations_dir"), &parts,
                           err);
    return st;
}

static sl_status coco_create(const sl__args *a, const sl__op_init *init, void **state,
                             sl_err *err) {
    coco_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    sl__reader *r = &f->r;
    r->fmt = SL__READER_FILE;
    r->opname = "readers.coco";
    f->image_ids = sl__args_bool(a, "image_ids");
    f->polygons = sl__args_bool(a, "polygon_masks");
    f->masks = sl__args_bool(a, "pixelwise_masks");
    const char *root = sl__args_str(a, "file_root"), *path = "";
    sl_status st = check_args(a, err);
    if (!st) st = open_annotations(f, a, &path, err);
    int64_t n = st ? 0 : sl__coco_count(f->coco);
    if (!st && n == 0)
        st = sl_err_set(err, SL_EINVAL, "readers.coco: %s: no images%s", path,
                        sl__args_bool(a, "skip_empty") ? " with boxes (skip_empty=True)" : "");
    if (!st && n > INT32_MAX)
        st = sl_err_set(err, SL_EINVAL, "readers.coco: %s: %lld images, more than 2^31-1", path,
                        (long long)n);
    const char **files = NULL;
    int64_t *labels = NULL;
    if (!st) {
        files = sl__calloc((size_t)n, sizeof *files, err);
        labels = sl__calloc((size_t)n, sizeof *labels, err);
        if (!files || !labels) st = SL_ENOMEM;
    }
    for (int64_t i = 0; !st && i < n; i++) {
        files[i] = sl__coco_file(f->coco, i);
        labels[i] = i;
    }
    if (!st) {
        st = sl__folder_open(root, NULL, (int)n, files, (int)n, labels, &r->folder, err);
        if (st) st = sl_err_prefix(err, "readers.coco: ");
    }
    free(files);
    free(labels);
    if (!st) {
        r->path0 = strdup(path);
        if (!r->path0) st = sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    if (!st) {
        if (sl__args_bool(a, "random_shuffle")) sl__folder_shuffle(r->folder, 524287);
        r->n = n;
        st = sl__reader_start(r, a, init, err);
    }
    if (!st) {
        f->sizes = sl__calloc((size_t)r->batch_size, sizeof *f->sizes, err);
        f->shapes = sl__calloc((size_t)r->batch_size * 3, sizeof *f->shapes, err);
        if (!f->sizes || !f->shapes) st = SL_ENOMEM;
    }
    if (st) {
        coco_free(f);
        return st;
    }
    *state = f;
    return SL_OK;
}

/* the polygons (P, 3) int32 and vertices (V, 2) float of the batch's images: out[3], out[4] */
static sl_status polygon_outputs(coco_reader *f, sl__op_io *io, sl_err *err) {
    sl__reader *r = &f->r;
    sl_tlist *pol = io->out[3], *ver = io->out[4];
    SL_TRY(sl_tlist_reset(pol, io->batch, SL_DTYPE_I32, 2, sl_cpu(), err));
    SL_TRY(sl_tlist_reset(ver, io->batch, SL_DTYPE_F32, 2, sl_cpu(), err));
    pol->layout[0] = ver->layout[0] = 0;
    const int32_t *p;
    const float *v;
    for (int i = 0; i < io->batch; i++) {
        f->shapes[2 * i] = sl__coco_polygons(f->coco, sl__folder_label(r->folder, r->recs[i]), &p);
        f->shapes[2 * i + 1] = 3;
    }
    SL_TRY(sl_tlist_alloc(pol, f->shapes, err));
    for (int i = 0; i < io->batch; i++) {
        f->shapes[2 * i] = sl__coco_vertices(f->coco, sl__folder_label(r->folder, r->recs[i]), &v);
        f->shapes[2 * i + 1] = 2;
    }
    SL_TRY(sl_tlist_alloc(ver, f->shapes, err));
    for (int i = 0; i < io->batch; i++) {
        int64_t k = sl__folder_label(r->folder, r->recs[i]);
        int64_t np = sl__coco_polygons(f->coco, k, &p), nv = sl__coco_vertices(f->coco, k, &v);
        if (np) memcpy(pol->data[i], p, (size_t)np * 3 * sizeof *p);
        if (nv) memcpy(ver->data[i], v, (size_t)nv * 2 * sizeof *v);
    }
    return SL_OK;
}

/* Sizes each image file and allocates the byte output (run_cpu reads the files into it); the
 * boxes, labels and ids are copied here. */
static sl_status coco_setup(void *state, sl__op_io *io, sl_err *err) {
    coco_reader *f = state;
    sl__reader *r = &f->r;
    SL_TRY(sl__reader_next(r, io, err));
    sl_tlist *img = io->out[0], *box = io->out[1], *lab = io->out[2];
    SL_TRY(sl_tlist_reset(img, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
    img->layout[0] = 0;
    for (int i = 0; i < io->batch; i++) {
        size_t n;
        if (sl__folder_size(r->folder, r->recs[i], &n, err) != SL_OK)
            return sl_err_prefix(err, "readers.coco: key %s: ", r->keys[i]);
        f->sizes[i] = (int64_t)n;
    }
    SL_TRY(sl_tlist_alloc(img, f->sizes, err));
    /* boxes (N, 4) float */
    SL_TRY(sl_tlist_reset(box, io->batch, SL_DTYPE_F32, 2, sl_cpu(), err));
    box->layout[0] = 0;
    for (int i = 0; i < io->batch; i++) {
        const float *b;
        const int32_t *l;
        f->shapes[2 * i] = sl__coco_boxes(f->coco, sl__folder_label(r->folder, r->recs[i]), &b, &l);
        f->shapes[2 * i + 1] = 4;
    }
    SL_TRY(sl_tlist_alloc(box, f->shapes, err));
    /* labels (N,) int32 */
    SL_TRY(sl_tlist_reset(lab, io->batch, SL_DTYPE_I32, 1, sl_cpu(), err));
    lab->layout[0] = 0;
    for (int i = 0; i < io->batch; i++) f->sizes[i] = f->shapes[2 * i];
    SL_TRY(sl_tlist_alloc(lab, f->sizes, err));
    for (int i = 0; i < io->batch; i++) {
        const float *b;
        const int32_t *l;
        int64_t n = sl__coco_boxes(f->coco, sl__folder_label(r->folder, r->recs[i]), &b, &l);
        if (n > 0) {
            memcpy(box->data[i], b, (size_t)n * 4 * sizeof *b);
            memcpy(lab->data[i], l, (size_t)n * sizeof *l);
        }
    }
    int next = 3;
    if (f->polygons) SL_TRY(polygon_outputs(f, io, err));
    next += 2 * f->polygons;
    if (f->masks) { /* (H, W, 1) int32, filled by run_cpu */
        sl_tlist *m = io->out[next++];
        SL_TRY(sl_tlist_reset(m, io->batch, SL_DTYPE_I32, 3, sl_cpu(), err));
        strcpy(m->layout, "HWC");
        for (int i = 0; i < io->batch; i++) {
            sl__coco_size(f->coco, sl__folder_label(r->folder, r->recs[i]), &f->shapes[3 * i],
                          &f->shapes[3 * i + 1]);
            f->shapes[3 * i + 2] = 1;
        }
        SL_TRY(sl_tlist_alloc(m, f->shapes, err));
    }
    if (f->image_ids) {
        sl_tlist *ids = io->out[next];
        SL_TRY(sl__reader_label_list(ids, io->batch, err));
        for (int i = 0; i < io->batch; i++)
            *(int32_t *)ids->data[i] =
                sl__coco_image_id(f->coco, sl__folder_label(r->folder, r->recs[i]));
    }
    return SL_OK;
}

/* image file i of the batch into out[0] sample i, as sized by setup */
static sl_status coco_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    coco_reader *f = state;
    (void)worker;
    const sl_tlist *out = io->out[0];
    if (sl__folder_read_into(f->r.folder, f->r.recs[i], out->data[i],
                             sl_tlist_sample_nbytes(out, i), err) != SL_OK)
        return sl_err_prefix(err, "readers.coco: key %s: ", f->r.keys[i]);
    if (f->masks) {
        int64_t k = sl__folder_label(f->r.folder, f->r.recs[i]);
        if (sl__coco_mask(f->coco, k, io->out[3 + 2 * f->polygons]->data[i], err) != SL_OK)
            return sl_err_prefix(err, "readers.coco: key %s (image id %d): pixelwise mask: ",
                                 f->r.keys[i], sl__coco_image_id(f->coco, k));
    }
    return SL_OK;
}

const sl__op_def sl__reader_coco_op = {
    SL__READER_OP_COMMON,
    .name = "readers.coco",
    .aliases = "coco_reader",
    .doc = "Reads a COCO data set (file_root + annotations_file, or DALI's "
           "preprocessed_annotations): the encoded images as uint8 bytes, their boxes (N, 4) "
           "float, labels (N,) int32, with polygon_masks the polygons (P, 3) int32 and vertices "
           "(V, 2) float, with pixelwise_masks a mask (H, W, 1) int32, with image_ids the image "
           "ids (1,) int32; images in the order of their ids, the key is the file name. "
           "annotations_file needs cJSON (libcjson-dev) at build time.",
    .args = coco_args,
    .num_outputs = coco_outputs,
    .create = coco_create,
    .setup = coco_setup,
    .run_cpu = coco_run_cpu,
    .destroy = coco_free,
};
