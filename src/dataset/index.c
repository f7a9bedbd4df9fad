/* SPDX-License-Identifier: Apache-2.0 */
/* sl_tfrecord_index (sluice/dataset.h): the index of a TFRecord file, as DALI's tfrecord2idx
 * writes it (a line "offset length" per record, the length counting the record's whole frame),
 * from the reader's own framing walk; every record's length and data CRCs are checked on the way,
 * so a corrupt file is refused, naming the offset of its first bad record. sl_wds_index: the index
 * of a WebDataset tar file, as DALI's wds2idx writes it, from readers.webdataset's own walk. */
#include "sluice/dataset.h"

#include "core/log.h"
#include "io/tfrecord.h"
#include "io/wds.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sl_status sl_tfrecord_index(const char *path, sl_tfrecord_entry **entries, int64_t *count,
                            sl_err *err) {
    *entries = NULL;
    *count = 0;
    sl__tfrec *t;
    sl_status st = sl__tfrec_open(1, &path, NULL, &t, err);
    if (st) return st;
    int64_t n = sl__tfrec_count(t);
    for (int64_t i = 0; i < n && !st; i++) {
        const uint8_t *d;
        uint64_t len;
        st = sl__tfrec_read(t, i, &d, &len, err);
    }
    sl_tfrecord_entry *e = st ? NULL : malloc((size_t)(n ? n : 1) * sizeof *e);
    if (!st && !e) st = sl_err_set(err, SL_ENOMEM, "out of memory indexing %s", path);
    for (int64_t i = 0; i < n && !st; i++) {
        e[i].offset = sl__tfrec_offset(t, i);
        e[i].size = (int64_t)sl__tfrec_size(t, i);
    }
    sl__tfrec_close(t);
    if (st) {
        free(e);
        return st;
    }
    *entries = e;
    *count = n;
    return SL_OK;
}

typedef struct text {
    char *p;
    size_t n, cap;
} text;

/* Appends printf's output to t; false when memory ran out. */
static bool append(text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return false;
        if (t->p && (size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return true;
        }
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->n + (size_t)k + 1) cap *= 2;
        char *g = realloc(t->p, cap);
        if (!g) return false;
        t->p = g, t->cap = cap;
    }
}

sl_status sl_wds_index(const char *path, char **out, size_t *len, int64_t *samples, sl_err *err) {
    *out = NULL;
    *len = 0;
    *samples = 0;
    sl__wds *w;
    SL_TRY(sl__wds_open(1, &path, NULL, &w, err));
    int64_t n = sl__wds_count(w);
    text t = {0};
    sl_status st = append(&t, "v1.2 %lld\n", (long long)n) ? SL_OK : SL_ENOMEM;
    for (int64_t i = 0; i < n && !st; i++) {
        for (int32_t k = 0; k < sl__wds_members(w, i) && !st; k++) {
            const char *name, *ext;
            size_t off, size;
            sl__wds_member(w, i, k, &name, &ext, &off, &size);
            if (strpbrk(name, " \t\n\r\v\f"))
                st = sl_err_set(err, SL_EINVAL,
                                "%s: member \"%s\" has a blank in its name, which the index "
                                "format (fields separated by blanks) cannot hold",
                                path, name);
            else if (!append(&t, "%s%s %zu %zu %s", k ? " " : "", ext, off, size, name))
                st = SL_ENOMEM;
        }
        if (!st && !append(&t, "\n")) st = SL_ENOMEM;
    }
    sl__wds_close(w);
    if (st == SL_ENOMEM) sl_err_set(err, SL_ENOMEM, "out of memory indexing %s", path);
    if (st) {
        free(t.p);
        return st;
    }
    *out = t.p;
    *len = t.n;
    *samples = n;
    return SL_OK;
}
