/* sluice inspect PATH [--json]: what a record store holds: its format (caffe2 / caffe LMDB, IDX
 * file, image folder), the record count, the label histogram, and the first records' key, encoded
 * size, image format and dimensions. --json prints one JSON object
 * {"format", "path", "records", "labels": {"0": n0, ...}, "first": [...]}. */
#include "cli.h"

#include "common.h"
#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/folder.h"
#include "io/idx.h"
#include "io/jpegenc.h"
#include "io/lmdb.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FIRST     5
#define MAX_LABEL 100000

typedef struct rec_info {
    char key[128];
    size_t bytes;
    sl__image_info img;
    bool raw;
} rec_info;

typedef struct report {
    const char *format;
    long long records;
    long long *hist; /* MAX_LABEL + 1 bins; the last one counts labels out of range */
    long long unlabelled;
    int nfirst;
    rec_info first[FIRST];
} report;

static void image_of(rec_info *r, const uint8_t *p, size_t n) {
    r->bytes = n;
    if (sl__jpegenc_probe(p, n, &r->img, NULL) != SL_OK) r->img.format = "unknown";
}

static void count_label(report *rp, long long label) {
    if (label < 0 || label >= MAX_LABEL)
        rp->hist[MAX_LABEL]++;
    else
        rp->hist[label]++;
}

static sl_status inspect_lmdb(const char *path, report *rp, sl_err *e) {
    sl__lmdb *db;
    SL_TRY(sl__lmdb_open(1, &path, &db, e));
    rp->records = sl__lmdb_count(db);
    const uint8_t *v;
    size_t n;
    static sl__caffe2_record c2;
    int caffe2 = -1;
    sl_status st = SL_OK;
    for (long long i = 0; i < rp->records && !st; i++) {
        sl__lmdb_value(db, i, &v, &n);
        if (caffe2 < 0) { /* decide from the first record: TensorProtos or Datum */
            caffe2 = sl__caffe2_parse(v, n, &c2, NULL) == SL_OK && c2.n >= 1;
            rp->format = caffe2 ? "caffe2" : "caffe";
        }
        rec_info *ri = i < FIRST ? &rp->first[rp->nfirst++] : NULL;
        if (ri) sl__lmdb_key(db, i, ri->key, sizeof ri->key);
        if (caffe2) {
            if (sl__caffe2_parse(v, n, &c2, e)) {
                char k[128];
                st = sl_err_prefix(e, "%s at key %s: ", path, sl__lmdb_key(db, i, k, sizeof k));
                break;
            }
            const sl__caffe2_tensor *t = &c2.t[0];
            if (ri && t->data_type == SL_C2_STRING && t->str0) image_of(ri, t->str0, t->nstr0);
            if (ri && t->data_type == SL_C2_BYTE) {
                int64_t d[3] = {0, 0, 1};
                int nd = sl__caffe2_dims(t, d, 3);
                ri->raw = true;
                ri->bytes = t->nbytes;
                ri->img.format = "raw";
                ri->img.height = (int)d[0];
                ri->img.width = (int)d[1];
                ri->img.channels = nd == 3 ? (int)d[2] : 1;
            }
            double lab;
            if (c2.n >= 2 && sl__caffe2_values(&c2.t[1], &lab, 1) >= 1)
                count_label(rp, (long long)lab);
            else
                rp->unlabelled++;
        } else {
            sl__caffe_datum d;
            if (sl__caffe_parse(v, n, &d, e)) {
                char k[128];
                st = sl_err_prefix(e, "%s at key %s: ", path, sl__lmdb_key(db, i, k, sizeof k));
                break;
            }
            if (ri && d.has_data) {
                if (sl__caffe_is_encoded(&d)) {
                    image_of(ri, d.data, d.ndata);
                } else {
                    ri->raw = true;
                    ri->bytes = d.ndata;
                    ri->img.format = "raw";
                    ri->img.height = d.height, ri->img.width = d.width;
                    ri->img.channels = d.channels;
                }
            }
            if (d.has_label)
                count_label(rp, d.label);
            else
                rp->unlabelled++;
        }
    }
    sl__lmdb_close(db);
    return st;
}

static sl_status inspect_idx(const char *path, report *rp, sl_err *e) {
    sl__idx *x;
    SL_TRY(sl__idx_open(path, &x, e));
    rp->format = "idx";
    rp->records = sl__idx_count(x);
    const int64_t *d = sl__idx_dims(x);
    for (long long i = 0; i < rp->records; i++) {
        size_t n;
        const uint8_t *p = sl__idx_item(x, i, &n);
        if (sl__idx_ndim(x) == 1 && sl__idx_type(x) == SL_IDX_U8) count_label(rp, *p);
        if (i < FIRST) {
            rec_info *ri = &rp->first[rp->nfirst++];
            snprintf(ri->key, sizeof ri->key, "%lld", i);
            ri->bytes = n;
            ri->raw = true;
            ri->img.format = sl__idx_ndim(x) >= 3 ? "raw" : "value";
            ri->img.height = sl__idx_ndim(x) >= 3 ? (int)d[1] : 0;
            ri->img.width = sl__idx_ndim(x) >= 3 ? (int)d[2] : 0;
            ri->img.channels = sl__idx_ndim(x) == 4 ? (int)d[3] : 1;
        }
    }
    sl__idx_close(x);
    return SL_OK;
}

static sl_status inspect_folder(const char *path, report *rp, sl_err *e) {
    sl__folder *f;
    SL_TRY(sl__folder_open(path, NULL, 0, NULL, 0, NULL, &f, e));
    rp->format = "folder";
    rp->records = sl__folder_count(f);
    uint8_t *buf = NULL;
    size_t cap = 0, n;
    sl_status st = SL_OK;
    for (long long i = 0; i < rp->records && !st; i++) {
        count_label(rp, sl__folder_label(f, i));
        if (i < FIRST) {
            rec_info *ri = &rp->first[rp->nfirst++];
            snprintf(ri->key, sizeof ri->key, "%s", sl__folder_name(f, i));
            st = sl__folder_read(f, i, &buf, &cap, &n, e);
            if (!st) image_of(ri, buf, n);
        }
    }
    free(buf);
    sl__folder_close(f);
    return st;
}

int sl_cli_inspect(int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: sluice inspect PATH [--json]\nShows a record store's format (caffe2 or "
                   "caffe LMDB, IDX file, image folder),\nrecord count, label histogram and first "
                   "records.\n");
            return 0;
        } else if (!path && argv[i][0] != '-') {
            path = argv[i];
        } else {
            fprintf(stderr, "usage: sluice inspect PATH [--json]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: sluice inspect PATH [--json]\n");
        return 2;
    }
    report rp;
    memset(&rp, 0, sizeof rp);
    rp.hist = calloc(MAX_LABEL + 1, sizeof *rp.hist);
    if (!rp.hist) return sl_cli_fail("inspect", "out of memory");
    sl_err e = {0};
    sl_status st;
    struct stat sb;
    char data[4200];
    snprintf(data, sizeof data, "%s/data.mdb", path);
    bool is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (stat(path, &sb) != 0)
        st = sl_err_set(&e, SL_ENOENT, "%s: no such file or folder", path);
    else if (is_dir && stat(data, &sb) != 0)
        st = inspect_folder(path, &rp, &e);
    else if (is_dir || strstr(path, ".mdb"))
        st = inspect_lmdb(path, &rp, &e);
    else
        st = inspect_idx(path, &rp, &e);
    if (st) {
        free(rp.hist);
        return sl_cli_fail("inspect", "%s", e.msg);
    }
    if (json) {
        printf("{\"format\": \"%s\", \"path\": ", rp.format);
        sl_cli_json_str(stdout, path);
        printf(", \"records\": %lld, \"labels\": {", rp.records);
        int k = 0;
        for (int l = 0; l < MAX_LABEL; l++)
            if (rp.hist[l]) printf("%s\"%d\": %lld", k++ ? ", " : "", l, rp.hist[l]);
        printf("}, \"labels_out_of_range\": %lld, \"unlabelled\": %lld, \"first\": [",
               rp.hist[MAX_LABEL], rp.unlabelled);
        for (int i = 0; i < rp.nfirst; i++) {
            rec_info *r = &rp.first[i];
            printf("%s{\"key\": ", i ? ", " : "");
            sl_cli_json_str(stdout, r->key);
            printf(", \"bytes\": %zu, \"image\": \"%s\", \"height\": %d, \"width\": %d, "
                   "\"channels\": %d}",
                   r->bytes, r->img.format ? r->img.format : "unknown", r->img.height, r->img.width,
                   r->img.channels);
        }
        printf("]}\n");
    } else {
        printf("path:     %s\nformat:   %s\nrecords:  %lld\nlabels:  ", path, rp.format,
               rp.records);
        int k = 0;
        for (int l = 0; l < MAX_LABEL; l++)
            if (rp.hist[l]) printf(" %d:%lld", l, rp.hist[l]), k++;
        if (!k) printf(" (none)");
        if (rp.hist[MAX_LABEL]) printf(" (out of range: %lld)", rp.hist[MAX_LABEL]);
        if (rp.unlabelled) printf(" (unlabelled: %lld)", rp.unlabelled);
        printf("\nfirst records:\n");
        for (int i = 0; i < rp.nfirst; i++) {
            rec_info *r = &rp.first[i];
            printf("  %-20s %8zu bytes  %-5s %dx%dx%d\n", r->key, r->bytes,
                   r->img.format ? r->img.format : "?", r->img.height, r->img.width,
                   r->img.channels);
        }
    }
    free(rp.hist);
    return 0;
}
