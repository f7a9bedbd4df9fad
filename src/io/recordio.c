/* SPDX-License-Identifier: Apache-2.0 */
#include "io/recordio.h"

#include "core/alloc.h"
#include "core/log.h"
#include "io/mapfile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECIO_MAGIC 0xced7230au

typedef struct rfile {
    char *path;
    const uint8_t *map;
    size_t size;
    uint64_t start; /* its first byte's offset in the stream */
} rfile;

typedef struct rrec {
    uint64_t off; /* in the stream */
    int64_t key;
    int32_t file;
} rrec;

struct sl__recio {
    int nfiles;
    rfile *files;
    rrec *r;
    int64_t n, cap;
};

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int by_offset(const void *a, const void *b) {
    const rrec *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static sl_status add(sl__recio *r, int64_t key, uint64_t off, sl_err *err) {
    if (r->n == r->cap) {
        int64_t cap = r->cap ? 2 * r->cap : 256;
        rrec *g = realloc(r->r, (size_t)cap * sizeof *g);
        if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory reading a RecordIO index");
        r->r = g, r->cap = cap;
    }
    r->r[r->n++] = (rrec){off, key, 0};
    return SL_OK;
}

/* one line "key offset" (blanks or tabs between, decimal): 0 done, 1 blank line, -1 malformed */
static int parse_line(const uint8_t *p, size_t n, int64_t *key, uint64_t *off) {
    uint64_t v[2] = {0, 0};
    int nv = 0;
    size_t i = 0;
    while (i < n) {
        if (p[i] == ' ' || p[i] == '\t' || p[i] == '\r') {
            i++;
            continue;
        }
        if (p[i] < '0' || p[i] > '9' || nv == 2) return -1;
        uint64_t x = 0;
        while (i < n && p[i] >= '0' && p[i] <= '9') {
            if (x > (UINT64_MAX - 9) / 10) return -1;
            x = x * 10 + (uint64_t)(p[i++] - '0');
        }
        v[nv++] = x;
    }
    if (nv == 0) return 1;
    if (nv != 2 || v[0] > INT64_MAX) return -1;
    *key = (int64_t)v[0], *off = v[1];
    return 0;
}

static sl_status read_index(sl__recio *r, const char *ipath, uint64_t total, sl_err *err) {
    const uint8_t *map;
    size_t size;
    SL_TRY(sl__mapfile_map(ipath, &map, &size, err));
    sl_status st = SL_OK;
    size_t i = 0;
    for (int line = 1; i < size && st == SL_OK; line++) {
        size_t e = i;
        while (e < size && map[e] != '\n') e++;
        int64_t key = 0;
        uint64_t off = 0;
        int k = parse_line(map + i, e - i, &key, &off);
        if (k < 0)
            st = sl_err_set(err, SL_EFORMAT,
                            "%s:%d: an index line is \"key offset\" (two decimal numbers)", ipath,
                            line);
        else if (k == 0 && (off >= total || total - off < 8))
            st = sl_err_set(err, SL_EFORMAT,
                            "%s:%d: offset %" PRIu64 " is not inside the record files (%" PRIu64
                            " bytes)",
                            ipath, line, off, total);
        else if (k == 0)
            st = add(r, key, off, err);
        i = e + 1;
    }
    sl__mapfile_unmap(map, size);
    return st;
}

sl_status sl__recio_open(int npaths, const char *const *paths, const char *index_path,
                         sl__recio **out, sl_err *err) {
    *out = NULL;
    if (npaths < 1) return sl_err_set(err, SL_EINVAL, "no RecordIO files given");
    sl__recio *r = sl__calloc(1, sizeof *r, err);
    if (!r) return SL_ENOMEM;
    r->files = sl__calloc((size_t)npaths, sizeof *r->files, err);
    sl_status st = r->files ? SL_OK : SL_ENOMEM;
    uint64_t total = 0;
    for (int f = 0; f < npaths && st == SL_OK; f++) {
        r->nfiles = f + 1;
        rfile *rf = &r->files[f];
        rf->start = total;
        rf->path = strdup(paths[f]);
        st = rf->path ? sl__mapfile_map(rf->path, &rf->map, &rf->size, err)
                      : sl_err_set(err, SL_ENOMEM, "out of memory");
        total += rf->size;
    }
    if (st == SL_OK) st = read_index(r, index_path, total, err);
    if (st == SL_OK && r->n == 0)
        st = sl_err_set(err, SL_EINVAL, "%s: the index lists no records", index_path);
    if (st == SL_OK) {
        qsort(r->r, (size_t)r->n, sizeof *r->r, by_offset);
        int f = 0;
        for (int64_t i = 0; i < r->n; i++) {
            while (f + 1 < r->nfiles && r->r[i].off >= r->files[f + 1].start) f++;
            r->r[i].file = f;
        }
    }
    if (st != SL_OK) {
        sl__recio_close(r);
        return st;
    }
    *out = r;
    return SL_OK;
}

void sl__recio_close(sl__recio *r) {
    if (!r) return;
    for (int f = 0; f < r->nfiles; f++) {
        if (r->files[f].map) sl__mapfile_unmap(r->files[f].map, r->files[f].size);
        free(r->files[f].path);
    }
    free(r->files);
    free(r->r);
    free(r);
}

int64_t sl__recio_count(const sl__recio *r) {
    return r->n;
}
const char *sl__recio_path(const sl__recio *r, int64_t i) {
    return r->files[r->r[i].file].path;
}
uint64_t sl__recio_offset(const sl__recio *r, int64_t i) {
    return r->r[i].off - r->files[r->r[i].file].start;
}
int64_t sl__recio_key(const sl__recio *r, int64_t i) {
    return r->r[i].key;
}

sl_status sl__recio_read(const sl__recio *r, int64_t i, const uint8_t **data, uint64_t *len,
                         sl_err *err) {
    const rfile *f = &r->files[r->r[i].file];
    uint64_t off = sl__recio_offset(r, i);
    if (off > f->size || f->size - off < 8)
        return sl_err_set(err, SL_EFORMAT, "%s at offset %" PRIu64 ": no record header there",
                          f->path, off);
    const uint8_t *p = f->map + off;
    if (le32(p) != RECIO_MAGIC)
        return sl_err_set(err, SL_EFORMAT,
                          "%s at offset %" PRIu64 ": not a RecordIO record (magic %08x, want "
                          "ced7230a)",
                          f->path, off, le32(p));
    uint32_t lrec = le32(p + 4), cflag = lrec >> 29, n = lrec & ((1u << 29) - 1);
    if (cflag != 0)
        return sl_err_set(err, SL_ENOTSUP,
                          "%s at offset %" PRIu64 ": a record split in parts (flag %u) is not "
                          "supported",
                          f->path, off, cflag);
    if (n > f->size - off - 8)
        return sl_err_set(err, SL_EFORMAT,
                          "%s at offset %" PRIu64 ": the record's %u bytes run past the file's end",
                          f->path, off, n);
    *data = p + 8;
    *len = n;
    return SL_OK;
}

int sl__recio_image(const uint8_t *payload, uint64_t len, float *labels, int cap, int *nlabels,
                    const uint8_t **image, uint64_t *image_len) {
    if (len < 24) return -1;
    uint32_t flag = le32(payload);
    uint64_t head = 24 + (uint64_t)flag * 4;
    if (len < head) return -1;
    int n = flag ? (int)flag : 1;
    for (int k = 0; k < n && k < cap; k++) {
        uint32_t bits = le32(flag ? payload + 24 + 4 * (size_t)k : payload + 4);
        float v;
        memcpy(&v, &bits, sizeof v);
        labels[k] = v;
    }
    *nlabels = n;
    *image = payload + head;
    *image_len = len - head;
    return 0;
}
