/* SPDX-License-Identifier: Apache-2.0 */
/* DALI's preprocessed COCO annotations (coco.h: sl__coco_save, sl__coco_load): a folder of
 * binary files, each the flat array DALI's loader keeps, as a 32-bit element count followed by
 * the elements in the machine's order: offsets.dat, counts.dat, labels.dat (int32 per image,
 * per image, per object), boxes.dat (float, 4 per object), filenames.dat (text, a file name a
 * line); with polygons polygon_data.dat (int32 x 3 per polygon), vertices.dat (float x 2 per
 * vertex), polygon_offset.dat, polygons_count.dat, vertices_offset.dat, vertices_count.dat (int64
 * per image); with pixel-wise masks masks_rles.dat (per RLE: uint64 height, width and count m,
 * then m uint32 counts), masks_rles_idx.dat (int32 object index per RLE), masks_offset.dat,
 * mask_count.dat (int64 per image), heights.dat, widths.dat (int32 per image); with image ids
 * original_ids.dat (int32 per image). DALI leaves out the file of an empty array and reads a
 * missing one as empty; sluice writes every file of the set (all of them synced beside their
 * names before any replaces its old one), and refuses a missing file that the outputs need, a
 * count the file's size does not hold, and indices that point outside. */
#include "io/coco_int.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WHAT "readers.coco: preprocessed annotations"

/* ---- writing ---- */

/* The files of one save: each built in memory, then all written beside their names (NAME.tmp)
 * and synced, and only then renamed over them, so that a failure before the renames leaves the
 * old set whole (a set of old and new files would read as annotations that never were). */
#define MAX_FILES 24
typedef struct saver {
    const char *dir;
    const char *name[MAX_FILES];
    char *buf[MAX_FILES];
    size_t len[MAX_FILES];
    int n;
} saver;

static void saver_free(saver *v) {
    for (int i = 0; i < v->n; i++) free(v->buf[i]);
}

/* takes buf (malloc'd, len bytes) as the file name */
static sl_status add(saver *v, const char *name, char *buf, size_t len) {
    SL_ASSERT(v->n < MAX_FILES);
    v->name[v->n] = name;
    v->buf[v->n] = buf;
    v->len[v->n++] = len;
    return SL_OK;
}

static sl_status saver_commit(saver *v, sl_err *err) {
    char tmp[4096], path[4096];
    int k = 0;
    sl_status st = SL_OK;
    for (; k < v->n; k++) {
        snprintf(path, sizeof path, "%s/%s", v->dir, v->name[k]);
        snprintf(tmp, sizeof tmp, "%s/%s.tmp", v->dir, v->name[k]);
        struct stat sb; /* a FIFO or device there would be replaced by the rename */
        if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
            st = sl_err_set(err, SL_EINVAL, WHAT " %s: not a regular file", path);
            break;
        }
        if (sl__file_write_synced(tmp, v->buf[k], v->len[k]) != 0) {
            st = sl_err_set(err, SL_EIO, WHAT " %s: write failed: %s", tmp, strerror(errno));
            unlink(tmp);
            break;
        }
    }
    if (st) { /* the old set stays: no temporary is left */
        for (int j = 0; j < k; j++) {
            snprintf(tmp, sizeof tmp, "%s/%s.tmp", v->dir, v->name[j]);
            unlink(tmp);
        }
        return st;
    }
    for (k = 0; k < v->n; k++) {
        snprintf(path, sizeof path, "%s/%s", v->dir, v->name[k]);
        snprintf(tmp, sizeof tmp, "%s/%s.tmp", v->dir, v->name[k]);
        if (rename(tmp, path) != 0) {
            st = sl_err_set(err, SL_EIO, WHAT " %s: rename failed: %s", path, strerror(errno));
            for (int j = k; j < v->n; j++) {
                snprintf(tmp, sizeof tmp, "%s/%s.tmp", v->dir, v->name[j]);
                unlink(tmp);
            }
            return st;
        }
    }
    snprintf(path, sizeof path, "%s/offsets.dat", v->dir);
    if (sl__file_sync_parent(path) != 0)
        return sl_err_set(err, SL_EIO, WHAT " %s: syncing the folder: %s", v->dir, strerror(errno));
    return SL_OK;
}

/* name: count n then the n elements of elem bytes at p */
static sl_status put(saver *v, const char *name, const void *p, int64_t n, size_t elem,
                     sl_err *err) {
    if (n > (int64_t)UINT32_MAX)
        return sl_err_set(err, SL_EINVAL,
                          "readers.coco: %s/%s: %lld entries, more than DALI's format holds",
                          v->dir, name, (long long)n);
    size_t len = 4 + (size_t)n * elem;
    char *buf = sl__malloc(len, err);
    if (!buf) return SL_ENOMEM;
    uint32_t k = (uint32_t)n;
    memcpy(buf, &k, 4);
    if (n) memcpy(buf + 4, p, (size_t)n * elem);
    return add(v, name, buf, len);
}

/* per image: a member of c->img as int32 or int64 */
static sl_status put_per_image(const sl__coco *c, saver *sv, const char *name, size_t off,
                               bool wide, bool dbl, sl_err *err) {
    size_t elem = wide ? 8 : 4;
    char *v = sl__malloc((size_t)(c->n > 0 ? c->n : 1) * elem, err);
    if (!v) return SL_ENOMEM;
    for (int64_t i = 0; i < c->n; i++) {
        const char *f = (const char *)&c->img[i] + off;
        int64_t x = dbl ? (int64_t) * (const double *)f : *(const int64_t *)f;
        if (wide) {
            memcpy(v + i * 8, &x, 8);
        } else {
            int32_t y = (int32_t)x;
            memcpy(v + i * 4, &y, 4);
        }
    }
    sl_status st = put(sv, name, v, c->n, elem, err);
    free(v);
    return st;
}

#define OFF(m) offsetof(sl__coco_image, m)

static sl_status put_names(const sl__coco *c, saver *v, sl_err *err) {
    size_t len = 0;
    for (int64_t i = 0; i < c->n; i++) {
        if (strpbrk(c->img[i].file, "\n\r"))
            return sl_err_set(err, SL_EINVAL,
                              "readers.coco: image file name \"%s\" holds a line "
                              "break, which filenames.dat cannot",
                              c->img[i].file);
        len += strlen(c->img[i].file) + 1;
    }
    char *buf = sl__malloc(len + 1, err);
    if (!buf) return SL_ENOMEM;
    size_t at = 0;
    for (int64_t i = 0; i < c->n; i++) at += (size_t)sprintf(buf + at, "%s\n", c->img[i].file);
    return add(v, "filenames.dat", buf, at);
}

static sl_status put_rles(const sl__coco *c, saver *v, sl_err *err) {
    size_t len = 4;
    for (int64_t r = 0; r < c->nrle; r++) len += 24 + (size_t)c->rles[r].m * 4;
    char *buf = sl__malloc(len, err);
    if (!buf) return SL_ENOMEM;
    uint32_t k = (uint32_t)c->nrle;
    memcpy(buf, &k, 4);
    size_t at = 4;
    for (int64_t r = 0; r < c->nrle; r++) {
        uint64_t dims[3] = {(uint64_t)c->rles[r].h, (uint64_t)c->rles[r].w, (uint64_t)c->rles[r].m};
        memcpy(buf + at, dims, 24);
        memcpy(buf + at + 24, c->cnts + c->rles[r].first, (size_t)c->rles[r].m * 4);
        at += 24 + (size_t)c->rles[r].m * 4;
    }
    return add(v, "masks_rles.dat", buf, len);
}

/* every file of the set into v */
static sl_status build_set(const sl__coco *c, saver *v, const sl__coco_parts *p, sl_err *err) {
    SL_TRY(put_per_image(c, v, "offsets.dat", OFF(first), false, false, err));
    SL_TRY(put_per_image(c, v, "counts.dat", OFF(n), false, false, err));
    SL_TRY(put(v, "boxes.dat", c->boxes, c->nobj * 4, 4, err));
    SL_TRY(put(v, "labels.dat", c->labels, c->nobj, 4, err));
    SL_TRY(put_names(c, v, err));
    if (p->polygons || p->masks) {
        /* per image counted from its first polygon and vertex, as the arrays are */
        SL_TRY(put(v, "polygon_data.dat", c->polys, c->npoly, 12, err));
        SL_TRY(put(v, "vertices.dat", c->verts, c->nvert, 8, err));
        SL_TRY(put_per_image(c, v, "polygon_offset.dat", OFF(pfirst), true, false, err));
        SL_TRY(put_per_image(c, v, "polygons_count.dat", OFF(pn), true, false, err));
        SL_TRY(put_per_image(c, v, "vertices_offset.dat", OFF(vfirst), true, false, err));
        SL_TRY(put_per_image(c, v, "vertices_count.dat", OFF(vn), true, false, err));
    }
    if (p->masks) {
        int32_t *idx = sl__malloc((size_t)(c->nrle > 0 ? c->nrle : 1) * 4, err);
        if (!idx) return SL_ENOMEM;
        for (int64_t r = 0; r < c->nrle; r++) idx[r] = c->rles[r].mask;
        sl_status st = put(v, "masks_rles_idx.dat", idx, c->nrle, 4, err);
        free(idx);
        SL_TRY(st);
        SL_TRY(put_rles(c, v, err));
        SL_TRY(put_per_image(c, v, "masks_offset.dat", OFF(rfirst), true, false, err));
        SL_TRY(put_per_image(c, v, "mask_count.dat", OFF(rn), true, false, err));
        SL_TRY(put_per_image(c, v, "heights.dat", OFF(h), false, true, err));
        SL_TRY(put_per_image(c, v, "widths.dat", OFF(w), false, true, err));
    }
    if (p->ids) {
        int32_t *ids = sl__malloc((size_t)(c->n > 0 ? c->n : 1) * 4, err);
        if (!ids) return SL_ENOMEM;
        for (int64_t i = 0; i < c->n; i++) ids[i] = c->img[i].id;
        sl_status st = put(v, "original_ids.dat", ids, c->n, 4, err);
        free(ids);
        SL_TRY(st);
    }
    return SL_OK;
}

sl_status sl__coco_save(const sl__coco *c, const char *dir, const sl__coco_parts *p, sl_err *err) {
    struct stat sb;
    if (strlen(dir) > 4000)
        return sl_err_set(err, SL_EINVAL,
                          "readers.coco: save_preprocessed_annotations_dir is %zu characters long, "
                          "more than 4000",
                          strlen(dir));
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK) != 0)
        return sl_err_set(err, SL_EINVAL,
                          "readers.coco: save_preprocessed_annotations_dir %s is no folder this "
                          "process can write to",
                          dir);
    saver v;
    memset(&v, 0, sizeof v);
    v.dir = dir;
    sl_status st = build_set(c, &v, p, err);
    if (!st) st = saver_commit(&v, err);
    saver_free(&v);
    return st;
}

/* ---- reading ---- */

/* dir/name's n elements of elem bytes into *out (NULL, n = 0 for a missing file unless need) */
static sl_status get(const char *dir, const char *name, bool need, size_t elem, void **out,
                     int64_t *n, sl_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *out = NULL;
    *n = 0;
    int fd;
    uint64_t size;
    sl_status st = sl__file_open_regular(path, WHAT, &fd, &size, err);
    if (st == SL_ENOENT && !need) return SL_OK;
    if (st) return st;
    uint32_t k = 0;
    if (size < 4)
        st = sl_err_set(err, SL_EFORMAT, WHAT " %s: %llu bytes, too short for its count", path,
                        (unsigned long long)size);
    if (!st) st = sl__file_pread_full(fd, &k, 4, 0, WHAT, path, err);
    if (!st && (size - 4) != (uint64_t)k * elem)
        st = sl_err_set(err, SL_EFORMAT,
                        WHAT " %s: its count says %u entries (%llu bytes), the file holds %llu "
                             "bytes after the count%s",
                        path, k, (unsigned long long)k * elem, (unsigned long long)(size - 4),
                        size - 4 < (uint64_t)k * elem ? " (truncated?)" : "");
    if (!st && !(*out = sl__malloc(k ? (size_t)k * elem : 1, err))) st = SL_ENOMEM;
    if (!st) st = sl__file_pread_full(fd, *out, (size_t)k * elem, 4, WHAT, path, err);
    close(fd);
    if (st) {
        free(*out);
        *out = NULL;
        return st;
    }
    *n = k;
    return SL_OK;
}

/* the whole of dir/name into *buf (NUL-terminated), *size bytes */
static sl_status get_text(const char *dir, const char *name, char **buf, uint64_t *size,
                          sl_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd;
    *buf = NULL;
    SL_TRY(sl__file_open_regular(path, WHAT, &fd, size, err));
    sl_status st = SL_OK;
    if (!(*buf = sl__malloc((size_t)*size + 1, err))) st = SL_ENOMEM;
    if (!st) st = sl__file_pread_full(fd, *buf, (size_t)*size, 0, WHAT, path, err);
    close(fd);
    if (st) {
        free(*buf);
        *buf = NULL;
        return st;
    }
    (*buf)[*size] = '\0';
    return SL_OK;
}

/* the file names, a line each (DALI writes them so; a name may hold spaces here) */
static sl_status load_names(sl__coco *c, const char *dir, sl_err *err) {
    char *buf;
    uint64_t size;
    SL_TRY(get_text(dir, "filenames.dat", &buf, &size, err));
    int64_t k = 0;
    sl_status st = SL_OK;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[--len] = '\0';
        if (!len) continue;
        if (k == c->n) {
            st = sl_err_set(err, SL_EFORMAT,
                            WHAT " %s/filenames.dat: more file names than offsets.dat's %lld "
                                 "images",
                            dir, (long long)c->n);
            break;
        }
        if (!(c->img[k++].file = strdup(line))) {
            st = sl_err_set(err, SL_ENOMEM, "out of memory");
            break;
        }
    }
    if (!st && k != c->n)
        st = sl_err_set(err, SL_EFORMAT,
                        WHAT " %s/filenames.dat: %lld file names for offsets.dat's %lld images",
                        dir, (long long)k, (long long)c->n);
    free(buf);
    return st;
}

/* per-image int32 or int64 values of dir/name into the member at off of every image */
static sl_status load_per_image(sl__coco *c, const char *dir, const char *name, size_t off,
                                bool wide, bool dbl, sl_err *err) {
    void *v;
    int64_t n;
    SL_TRY(get(dir, name, true, wide ? 8 : 4, &v, &n, err));
    if (n != c->n) {
        free(v);
        return sl_err_set(err, SL_EFORMAT, WHAT " %s/%s: %lld entries for %lld images", dir, name,
                          (long long)n, (long long)c->n);
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t x;
        if (wide) {
            memcpy(&x, (char *)v + 8 * i, 8);
        } else {
            int32_t y;
            memcpy(&y, (char *)v + 4 * i, 4);
            x = y;
        }
        char *f = (char *)&c->img[i] + off;
        if (dbl)
            *(double *)f = (double)x;
        else
            *(int64_t *)f = x;
    }
    free(v);
    return SL_OK;
}

/* each image's run [first, first + n) of a member pair within total entries, n >= 0 */
static sl_status check_runs(const sl__coco *c, size_t off_first, size_t off_n, int64_t total,
                            const char *dir, const char *name, sl_err *err) {
    for (int64_t i = 0; i < c->n; i++) {
        int64_t f = *(const int64_t *)((const char *)&c->img[i] + off_first);
        int64_t n = *(const int64_t *)((const char *)&c->img[i] + off_n);
        if (f < 0 || n < 0 || n > total - f)
            return sl_err_set(err, SL_EFORMAT,
                              WHAT " %s: image %lld (%s): entries %lld..%lld of %s, which has "
                                   "%lld",
                              dir, (long long)i, c->img[i].file, (long long)f, (long long)f + n,
                              name, (long long)total);
    }
    return SL_OK;
}

static sl_status load_polygons(sl__coco *c, const char *dir, sl_err *err) {
    void *p;
    SL_TRY(get(dir, "polygon_data.dat", false, 12, &p, &c->npoly, err));
    c->polys = p;
    SL_TRY(get(dir, "vertices.dat", false, 8, &p, &c->nvert, err));
    c->verts = p;
    /* DALI reads an image's polygons as none when the arrays are absent */
    char path[4096];
    snprintf(path, sizeof path, "%s/polygon_offset.dat", dir);
    if (c->npoly == 0 && c->nvert == 0 && access(path, F_OK) != 0) return SL_OK;
    SL_TRY(load_per_image(c, dir, "polygon_offset.dat", OFF(pfirst), true, false, err));
    SL_TRY(load_per_image(c, dir, "polygons_count.dat", OFF(pn), true, false, err));
    SL_TRY(load_per_image(c, dir, "vertices_offset.dat", OFF(vfirst), true, false, err));
    SL_TRY(load_per_image(c, dir, "vertices_count.dat", OFF(vn), true, false, err));
    SL_TRY(check_runs(c, OFF(pfirst), OFF(pn), c->npoly, dir, "polygon_data.dat", err));
    SL_TRY(check_runs(c, OFF(vfirst), OFF(vn), c->nvert, dir, "vertices.dat", err));
    for (int64_t i = 0; i < c->n; i++)
        for (int64_t k = c->img[i].pfirst; k < c->img[i].pfirst + c->img[i].pn; k++) {
            const int32_t *q = c->polys + 3 * k;
            if (q[0] < 0 || q[0] >= c->img[i].n || q[1] < 0 || q[1] > q[2] || q[2] > c->img[i].vn)
                return sl_err_set(err, SL_EFORMAT,
                                  WHAT " %s/polygon_data.dat: polygon %lld [%d, %d, %d] of image "
                                       "%lld (%s) points outside its %lld objects or %lld vertices",
                                  dir, (long long)k, q[0], q[1], q[2], (long long)i, c->img[i].file,
                                  (long long)c->img[i].n, (long long)c->img[i].vn);
        }
    return SL_OK;
}

/* masks_rles.dat: the RLEs, each checked against the image it belongs to (below) */
static sl_status load_rles(sl__coco *c, const char *dir, sl_err *err) {
    char *buf, path[4096];
    uint64_t size;
    snprintf(path, sizeof path, "%s/masks_rles.dat", dir);
    SL_TRY(get_text(dir, "masks_rles.dat", &buf, &size, err));
    sl_status st = SL_OK;
    uint32_t k = 0;
    uint64_t at = 4, total = 0;
    if (size < 4)
        st = sl_err_set(err, SL_EFORMAT, WHAT " %s: too short for its count", path);
    else
        memcpy(&k, buf, 4);
    /* a first pass for the sizes, bounded by the file's */
    for (uint32_t r = 0; !st && r < k; r++) {
        uint64_t d[3];
        if (size - at < 24) {
            st = sl_err_set(err, SL_EFORMAT, WHAT " %s: ends in RLE %u of %u (truncated?)", path, r,
                            k);
            break;
        }
        memcpy(d, buf + at, 24);
        if (d[2] > (size - at - 24) / 4) {
            st = sl_err_set(err, SL_EFORMAT,
                            WHAT " %s: RLE %u says %llu counts, the file ends first (truncated?)",
                            path, r, (unsigned long long)d[2]);
            break;
        }
        at += 24 + d[2] * 4;
        total += d[2];
    }
    if (!st && at != size)
        st = sl_err_set(err, SL_EFORMAT, WHAT " %s: %llu bytes after its %u RLEs", path,
                        (unsigned long long)(size - at), k);
    if (!st) {
        c->rles = sl__calloc(k ? k : 1, sizeof *c->rles, err);
        c->cnts = sl__malloc(total ? (size_t)total * 4 : 1, err);
        if (!c->rles || !c->cnts) st = SL_ENOMEM;
    }
    at = 4;
    for (uint32_t r = 0; !st && r < k; r++) {
        uint64_t d[3];
        memcpy(d, buf + at, 24);
        sl__coco_rle *q = &c->rles[r];
        q->h = d[0] > 65535 ? -1 : (int64_t)d[0]; /* checked against the image's below */
        q->w = d[1] > 65535 ? -1 : (int64_t)d[1];
        q->first = c->ncnt;
        q->m = (int64_t)d[2];
        memcpy(c->cnts + c->ncnt, buf + at + 24, (size_t)d[2] * 4);
        c->ncnt += q->m;
        at += 24 + d[2] * 4;
    }
    if (!st) c->nrle = k;
    free(buf);
    return st;
}

static sl_status load_masks(sl__coco *c, const char *dir, sl_err *err) {
    SL_TRY(load_per_image(c, dir, "heights.dat", OFF(h), false, true, err));
    SL_TRY(load_per_image(c, dir, "widths.dat", OFF(w), false, true, err));
    for (int64_t i = 0; i < c->n; i++)
        if (!(c->img[i].h >= 1 && c->img[i].h <= 65535 && c->img[i].w >= 1 && c->img[i].w <= 65535))
            return sl_err_set(err, SL_EFORMAT,
                              WHAT " %s: image %lld (%s) is %g x %g pixels (heights.dat, "
                                   "widths.dat), not within 1..65535",
                              dir, (long long)i, c->img[i].file, c->img[i].h, c->img[i].w);
    SL_TRY(load_rles(c, dir, err));
    void *v;
    int64_t n;
    SL_TRY(get(dir, "masks_rles_idx.dat", true, 4, &v, &n, err));
    if (n != c->nrle) {
        free(v);
        return sl_err_set(err, SL_EFORMAT,
                          WHAT " %s/masks_rles_idx.dat: %lld entries for %lld RLEs", dir,
                          (long long)n, (long long)c->nrle);
    }
    for (int64_t r = 0; r < n; r++) memcpy(&c->rles[r].mask, (char *)v + 4 * r, 4);
    free(v);
    SL_TRY(load_per_image(c, dir, "masks_offset.dat", OFF(rfirst), true, false, err));
    SL_TRY(load_per_image(c, dir, "mask_count.dat", OFF(rn), true, false, err));
    SL_TRY(check_runs(c, OFF(rfirst), OFF(rn), c->nrle, dir, "masks_rles.dat", err));
    for (int64_t i = 0; i < c->n; i++)
        for (int64_t r = c->img[i].rfirst; r < c->img[i].rfirst + c->img[i].rn; r++) {
            const sl__coco_rle *q = &c->rles[r];
            int64_t sum = 0;
            for (int64_t j = 0; j < q->m; j++) sum += c->cnts[q->first + j];
            if (q->mask < 0 || q->mask >= c->img[i].n || q->h != (int64_t)c->img[i].h ||
                q->w != (int64_t)c->img[i].w || sum != q->h * q->w)
                return sl_err_set(err, SL_EFORMAT,
                                  WHAT " %s/masks_rles.dat: RLE %lld of image %lld (%s): object "
                                       "%d of %lld, %lld x %lld pixels counting %lld, for an image "
                                       "of %g x %g",
                                  dir, (long long)r, (long long)i, c->img[i].file, q->mask,
                                  (long long)c->img[i].n, (long long)q->h, (long long)q->w,
                                  (long long)sum, c->img[i].h, c->img[i].w);
        }
    return SL_OK;
}

sl_status sl__coco_load(const char *dir, const sl__coco_parts *p, sl__coco **out, sl_err *err) {
    *out = NULL;
    sl__coco *c = sl__calloc(1, sizeof *c, err);
    if (!c) return SL_ENOMEM;
    void *v = NULL;
    int64_t n = 0, nb = 0;
    sl_status st = get(dir, "offsets.dat", true, 4, &v, &n, err);
    if (!st && !(c->img = sl__calloc((size_t)(n > 0 ? n : 1), sizeof *c->img, err))) st = SL_ENOMEM;
    if (!st) {
        c->n = n;
        for (int64_t i = 0; i < n; i++) {
            int32_t x;
            memcpy(&x, (char *)v + 4 * i, 4);
            c->img[i].first = x;
        }
    }
    free(v);
    if (!st) st = load_per_image(c, dir, "counts.dat", OFF(n), false, false, err);
    if (!st) st = load_names(c, dir, err);
    if (!st && !(st = get(dir, "labels.dat", true, 4, &v, &c->nobj, err))) c->labels = v;
    if (!st && !(st = get(dir, "boxes.dat", true, 4, &v, &nb, err))) c->boxes = v;
    if (!st && nb != 4 * c->nobj)
        st = sl_err_set(err, SL_EFORMAT,
                        WHAT " %s/boxes.dat: %lld numbers for labels.dat's %lld objects (4 each)",
                        dir, (long long)nb, (long long)c->nobj);
    if (!st) st = check_runs(c, OFF(first), OFF(n), c->nobj, dir, "labels.dat", err);
    if (!st && (p->polygons || p->masks)) st = load_polygons(c, dir, err);
    if (!st && p->masks) st = load_masks(c, dir, err);
    if (!st && p->ids && !(st = get(dir, "original_ids.dat", true, 4, &v, &n, err))) {
        if (n != c->n)
            st = sl_err_set(err, SL_EFORMAT, WHAT " %s/original_ids.dat: %lld ids for %lld images",
                            dir, (long long)n, (long long)c->n);
        for (int64_t i = 0; !st && i < n; i++) memcpy(&c->img[i].id, (char *)v + 4 * i, 4);
        free(v);
    }
    if (st) {
        sl__coco_close(c);
        return st;
    }
    *out = c;
    return SL_OK;
}
