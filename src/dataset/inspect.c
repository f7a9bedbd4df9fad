/* SPDX-License-Identifier: Apache-2.0 */
/* sl_dataset_inspect (sluice/dataset.h): what a store holds, told apart by what the path holds --
 * an LMDB (caffe2 or caffe, decided from its first record), an IDX file, an image folder, a
 * WebDataset tar, a TFRecord file (with the features of its first Example), a NumPy file or a
 * folder of them -- else "unrecognised format" saying what was looked for. Every record is walked
 * through the readers' own parsers (src/io/), so a store that inspects cleanly reads cleanly; with
 * SL_DATASET_VERIFY every byte is read as well, so that damage the checks at open cannot see
 * surfaces here (`sluice inspect --verify` runs this in a child process). */
#include "sluice/dataset.h"

#include "core/bytes.h"
#include "core/log.h"
#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/folder.h"
#include "io/idx.h"
#include "io/jpegenc.h"
#include "io/lmdb.h"
#include "io/npy.h"
#include "io/tfrecord.h"
#include "io/wds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The walk's state: the caller's description first, so that a report is an sl_dataset_info. */
typedef struct report {
    sl_dataset_info pub;
    bool verify; /* read every byte of every record */
} report;

static void image_of(sl_dataset_record *r, const uint8_t *p, size_t n) {
    sl__image_info img;
    r->bytes = n;
    if (sl__jpegenc_probe(p, n, &img, NULL) != SL_OK) {
        r->image = "unknown";
        return;
    }
    r->image = img.format;
    r->height = img.height, r->width = img.width, r->channels = img.channels;
}

static void count_label(report *rp, long long label) {
    if (label < 0 || label >= SL_DATASET_MAX_LABEL)
        rp->pub.out_of_range++;
    else
        rp->pub.label_counts[label]++;
}

static sl_status inspect_lmdb(const char *path, report *rp, sl_err *e) {
    sl__lmdb *db;
    SL_TRY(sl__lmdb_open(1, &path, &db, e));
    rp->pub.records = sl__lmdb_count(db);
    rp->pub.format = "lmdb"; /* no record to tell Caffe2 from Caffe by */
    const uint8_t *v;
    size_t n;
    static sl__caffe2_record c2;
    int caffe2 = -1;
    sl_status st = SL_OK;
    for (long long i = 0; i < rp->pub.records && !st; i++) {
        sl__lmdb_value(db, i, &v, &n);
        if (rp->verify) {
            for (size_t k = 0; k < n; k++) rp->pub.checksum += v[k];
            char kb[8];
            sl__lmdb_key(db, i, kb, sizeof kb);
            rp->pub.bytes_read += (long long)n;
        }
        if (caffe2 < 0) { /* decide from the first record: TensorProtos or Datum */
            caffe2 = sl__caffe2_parse(v, n, &c2, NULL) == SL_OK && c2.n >= 1;
            rp->pub.format = caffe2 ? "caffe2" : "caffe";
        }
        sl_dataset_record *ri = i < SL_DATASET_FIRST ? &rp->pub.first[rp->pub.num_first++] : NULL;
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
                ri->bytes = t->nbytes;
                ri->image = "raw";
                ri->height = (int)d[0];
                ri->width = (int)d[1];
                ri->channels = nd == 3 ? (int)d[2] : 1;
            }
            double lab;
            if (c2.n >= 2 && sl__caffe2_values(&c2.t[1], &lab, 1) >= 1)
                count_label(rp, (long long)lab);
            else
                rp->pub.unlabelled++;
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
                    ri->bytes = d.ndata;
                    ri->image = "raw";
                    ri->height = d.height, ri->width = d.width;
                    ri->channels = d.channels;
                }
            }
            if (d.has_label)
                count_label(rp, d.label);
            else
                rp->pub.unlabelled++;
        }
    }
    sl__lmdb_close(db);
    return st;
}

static sl_status inspect_idx(const char *path, report *rp, sl_err *e) {
    sl__idx *x;
    SL_TRY(sl__idx_open(path, &x, e));
    rp->pub.format = "idx";
    rp->pub.records = sl__idx_count(x);
    const int64_t *d = sl__idx_dims(x);
    for (long long i = 0; i < rp->pub.records; i++) {
        size_t n;
        const uint8_t *p = sl__idx_item(x, i, &n);
        if (sl__idx_ndim(x) == 1 && sl__idx_type(x) == SL_IDX_U8) count_label(rp, *p);
        if (i < SL_DATASET_FIRST) {
            sl_dataset_record *ri = &rp->pub.first[rp->pub.num_first++];
            snprintf(ri->key, sizeof ri->key, "%lld", i);
            ri->bytes = n;
            ri->image = sl__idx_ndim(x) >= 3 ? "raw" : "value";
            ri->height = sl__idx_ndim(x) >= 3 ? (int)d[1] : 0;
            ri->width = sl__idx_ndim(x) >= 3 ? (int)d[2] : 0;
            ri->channels = sl__idx_ndim(x) == 4 ? (int)d[3] : 1;
        }
    }
    sl__idx_close(x);
    return SL_OK;
}

static sl_status inspect_folder(const char *path, report *rp, sl_err *e) {
    sl__folder *f;
    SL_TRY(sl__folder_open(path, NULL, 0, NULL, 0, NULL, &f, e));
    rp->pub.format = "folder";
    rp->pub.records = sl__folder_count(f);
    for (int c = 0; c < sl__folder_classes(f); c++) { /* the class sub-folders */
        const char *name = sl__folder_class_name(f, c);
        char **v =
            name ? realloc(rp->pub.classes, (size_t)(rp->pub.num_classes + 1) * sizeof *v) : NULL;
        if (!v || !(v[rp->pub.num_classes] = strdup(name))) {
            if (v) rp->pub.classes = v;
            break;
        }
        rp->pub.classes = v;
        rp->pub.num_classes++;
    }
    uint8_t *buf = NULL;
    size_t cap = 0, n;
    sl_status st = SL_OK;
    for (long long i = 0; i < rp->pub.records && !st; i++) {
        count_label(rp, sl__folder_label(f, i));
        if (i < SL_DATASET_FIRST) {
            sl_dataset_record *ri = &rp->pub.first[rp->pub.num_first++];
            snprintf(ri->key, sizeof ri->key, "%s", sl__folder_name(f, i));
            st = sl__folder_read(f, i, &buf, &cap, &n, e);
            if (!st) image_of(ri, buf, n);
        }
    }
    free(buf);
    sl__folder_close(f);
    return st;
}

/* A WebDataset tar: samples grouped by key; the image member (jpg, jpeg, png, ...) and the "cls"
 * member (the label, as text) of each. */
static sl_status inspect_wds(const char *path, report *rp, sl_err *e) {
    sl__wds *w;
    SL_TRY(sl__wds_open(1, &path, NULL, &w, e));
    rp->pub.format = "webdataset";
    rp->pub.records = sl__wds_count(w);
    for (long long i = 0; i < rp->pub.records; i++) {
        const uint8_t *p;
        size_t n;
        if (sl__wds_find(w, i, "cls;label;cls.txt", false, &p, &n) && n > 0 && n < 32) {
            char num[32];
            memcpy(num, p, n);
            num[n] = 0;
            char *end;
            long long l = strtoll(num, &end, 10);
            if (end != num && (*end == 0 || *end == '\n'))
                count_label(rp, l);
            else
                rp->pub.unlabelled++;
        } else {
            rp->pub.unlabelled++;
        }
        if (rp->verify && sl__wds_find(w, i, "jpg;jpeg;png;bmp;webp;tif;tiff", false, &p, &n)) {
            for (size_t k = 0; k < n; k++) rp->pub.checksum += p[k];
            rp->pub.bytes_read += (long long)n;
        }
        if (i < SL_DATASET_FIRST) {
            sl_dataset_record *ri = &rp->pub.first[rp->pub.num_first++];
            snprintf(ri->key, sizeof ri->key, "%s", sl__wds_key(w, i));
            if (sl__wds_find(w, i, "jpg;jpeg;png;bmp;webp;tif;tiff", false, &p, &n))
                image_of(ri, p, n);
            else
                ri->image = "none";
        }
    }
    sl__wds_close(w);
    return SL_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One .npy file's header into ri (key: its name); the file is read whole when verifying. */
static sl_status npy_record(const char *file, const char *key, report *rp, sl_dataset_record *ri,
                            sl_err *e) {
    int fd = open(file, O_RDONLY);
    if (fd < 0) return sl_err_set(e, SL_EIO, "%s: %s", file, strerror(errno));
    struct stat sb;
    sl__npy_header h;
    sl_status st = fstat(fd, &sb) != 0 ? sl_err_set(e, SL_EIO, "%s: %s", file, strerror(errno))
                                       : sl__npy_read_header(fd, (size_t)sb.st_size, &h, e);
    if (st) sl_err_prefix(e, "%s: ", file);
    if (!st && rp->verify) {
        uint8_t buf[1 << 14];
        ssize_t r;
        if (lseek(fd, 0, SEEK_SET) == 0)
            while ((r = read(fd, buf, sizeof buf)) > 0) {
                for (ssize_t k = 0; k < r; k++) rp->pub.checksum += buf[k];
                rp->pub.bytes_read += r;
            }
    }
    close(fd);
    if (!st && ri) {
        snprintf(ri->key, sizeof ri->key, "%s", key);
        ri->bytes = h.nbytes;
        ri->image = "npy";
        ri->height = h.ndim >= 1 ? (int)h.shape[0] : 1;
        ri->width = h.ndim >= 2 ? (int)h.shape[1] : 1;
        ri->channels = h.ndim >= 3 ? (int)h.shape[2] : 1;
    }
    return st;
}

/* A folder of .npy files (readers.numpy): one record each, in name order, unlabelled. */
static sl_status inspect_npy_folder(const char *path, report *rp, sl_err *e) {
    DIR *d = opendir(path);
    if (!d) return sl_err_set(e, SL_EIO, "%s: %s", path, strerror(errno));
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    sl_status st = SL_OK;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".npy")) continue;
        char **v = realloc(names, (n + 1) * sizeof *v);
        if (!v || !(v[n] = strdup(de->d_name))) {
            if (v) names = v;
            st = sl_err_set(e, SL_ENOMEM, "out of memory");
            break;
        }
        names = v;
        n++;
    }
    closedir(d);
    if (!st) qsort(names, n, sizeof *names, cmp_str);
    rp->pub.format = "npy";
    rp->pub.records = (long long)n;
    rp->pub.unlabelled = (long long)n;
    for (size_t i = 0; i < n && !st; i++) {
        char file[8400];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        if (i < SL_DATASET_FIRST || rp->verify)
            st = npy_record(file, names[i], rp,
                            i < SL_DATASET_FIRST ? &rp->pub.first[rp->pub.num_first++] : NULL, e);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

/* What a folder holds: sub-folders, .npy files, other files (names starting with '.' left out). */
static void folder_census(const char *path, int *dirs, int *npys, int *files) {
    *dirs = *npys = *files = 0;
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[8400];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        if (stat(p, &sb) != 0) continue;
        size_t l = strlen(de->d_name);
        if (S_ISDIR(sb.st_mode))
            (*dirs)++;
        else if (l > 4 && !strcmp(de->d_name + l - 4, ".npy"))
            (*npys)++;
        else
            (*files)++;
    }
    closedir(d);
}

static void note_feature(const char *name, size_t nlen, const sl__tfrec_value *v, void *user) {
    report *rp = user;
    if (rp->pub.num_features == SL_DATASET_FEATURES) return;
    const uint8_t *d;
    size_t n;
    int64_t count = v->kind == SL_TFREC_BYTES_LIST   ? sl__tfrec_bytes(v, &d, &n)
                    : v->kind == SL_TFREC_INT64_LIST ? sl__tfrec_int64s(v, NULL, 0)
                    : v->kind == SL_TFREC_FLOAT_LIST ? sl__tfrec_floats(v, NULL, 0)
                                                     : 0;
    snprintf(rp->pub.features[rp->pub.num_features].name, sizeof rp->pub.features[0].name, "%.*s",
             (int)nlen, name);
    rp->pub.features[rp->pub.num_features].kind = sl__tfrec_kind_name(v->kind);
    rp->pub.features[rp->pub.num_features++].values = count;
}

/* a TFRecord file: every record checked; labels from image/class/label, images from
 * image/encoded (TensorFlow's image-classification layout), when the records have them */
static sl_status inspect_tfrec(const char *path, report *rp, sl_err *e) {
    sl__tfrec *t;
    SL_TRY(sl__tfrec_open(1, &path, NULL, &t, e));
    rp->pub.format = "tfrecord";
    rp->pub.records = sl__tfrec_count(t);
    static const char *const names[] = {"image/encoded", "image/class/label"};
    sl_status st = SL_OK;
    for (long long i = 0; i < rp->pub.records && !st; i++) {
        const uint8_t *d;
        uint64_t len;
        sl__tfrec_value v[2];
        st = sl__tfrec_read(t, i, &d, &len, e);
        if (!st && rp->verify) {
            for (uint64_t k = 0; k < len; k++) rp->pub.checksum += d[k];
            rp->pub.bytes_read += (long long)len;
        }
        if (!st && i == 0) st = sl__tfrec_each(d, (size_t)len, note_feature, rp, e);
        if (!st) st = sl__tfrec_parse(d, (size_t)len, 2, names, v, e);
        if (st) { /* the framing's errors name the file and offset already */
            if (!strstr(e->msg, path))
                sl_err_prefix(e, "%s at offset %llu: ", path,
                              (unsigned long long)sl__tfrec_offset(t, i));
            break;
        }
        int64_t label;
        if (sl__tfrec_int64s(&v[1], &label, 1) >= 1)
            count_label(rp, label);
        else
            rp->pub.unlabelled++;
        if (i < SL_DATASET_FIRST) {
            sl_dataset_record *ri = &rp->pub.first[rp->pub.num_first++];
            snprintf(ri->key, sizeof ri->key, "%llu", (unsigned long long)sl__tfrec_offset(t, i));
            const uint8_t *img;
            size_t n;
            if (sl__tfrec_bytes(&v[0], &img, &n) >= 1)
                image_of(ri, img, n);
            else
                ri->image = "none";
        }
    }
    sl__tfrec_close(t);
    return st;
}

#define LOOKED_FOR                                                                                 \
    "looked for an LMDB (a folder holding data.mdb, or a .mdb file), an IDX file (bytes 00 00, "   \
    "an item type and a rank; plain or gzip), a WebDataset tar (a ustar header), a TFRecord "      \
    "file (a record length and its CRC-32C), a NumPy .npy "                                        \
    "file or a folder of them, and an image folder (one sub-folder of images per class)"

static sl_status inspect_store(const char *path, report *rp, sl_err *e) {
    struct stat sb;
    char data[4200];
    snprintf(data, sizeof data, "%s/data.mdb", path);
    if (stat(path, &sb) != 0) return sl_err_set(e, SL_ENOENT, "%s: no such file or folder", path);
    if (S_ISDIR(sb.st_mode)) {
        if (stat(data, &sb) == 0) {
            rp->pub.num_classes = sl_dataset_read_classes(path, &rp->pub.classes);
            return inspect_lmdb(path, rp, e);
        }
        int dirs, npys, files;
        folder_census(path, &dirs, &npys, &files);
        if (npys > 0 && dirs == 0) return inspect_npy_folder(path, rp, e);
        if (dirs > 0) return inspect_folder(path, rp, e);
        return sl_err_set(e, SL_EFORMAT,
                          "%s: unrecognised format: a folder of %d file(s), with no data.mdb, no "
                          ".npy files and no sub-folders; " LOOKED_FOR,
                          path, files);
    }
    if (strstr(path, ".mdb")) return inspect_lmdb(path, rp, e);
    uint8_t head[512];
    memset(head, 0, sizeof head);
    FILE *f = fopen(path, "rb");
    if (!f) return sl_err_set(e, SL_EIO, "%s: %s", path, strerror(errno));
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got >= 6 && !memcmp(head, "\x93NUMPY", 6)) {
        rp->pub.format = "npy";
        rp->pub.records = 1;
        rp->pub.unlabelled = 1;
        const char *base = strrchr(path, '/');
        return npy_record(path, base ? base + 1 : path, rp, &rp->pub.first[rp->pub.num_first++], e);
    }
    if (got >= 262 && !memcmp(head + 257, "ustar", 5)) return inspect_wds(path, rp, e);
    if (got >= 12 && sl__get_u32(head + 8) == sl__tfrec_mask(sl__tfrec_crc32c(0, head, 8)))
        return inspect_tfrec(path, rp, e);
    bool gz = got >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    bool idx = got >= 4 && head[0] == 0 && head[1] == 0 &&
               (head[2] == SL_IDX_U8 || head[2] == SL_IDX_I8 ||
                (head[2] >= SL_IDX_I16 && head[2] <= SL_IDX_F64)) &&
               head[3] >= 1;
    if (idx || gz) return inspect_idx(path, rp, e);
    return sl_err_set(
        e, SL_EFORMAT,
        "%s: unrecognised format (a file of %lld bytes starting %02x %02x %02x %02x); " LOOKED_FOR,
        path, (long long)sb.st_size, head[0], head[1], head[2], head[3]);
}

sl_status sl_dataset_inspect(const char *path, int flags, sl_dataset_info **out, sl_err *err) {
    *out = NULL;
    if (!path) return sl_err_set(err, SL_EINVAL, "sl_dataset_inspect: path is NULL");
    if (flags & ~SL_DATASET_VERIFY)
        return sl_err_set(err, SL_EINVAL, "sl_dataset_inspect: unknown flags 0x%x", flags);
    report *rp = calloc(1, sizeof *rp);
    long long *counts = calloc(SL_DATASET_MAX_LABEL, sizeof *counts);
    if (!rp || !counts) {
        free(rp);
        free(counts);
        return sl_err_set(err, SL_ENOMEM, "out of memory inspecting %s", path);
    }
    rp->pub.label_counts = counts;
    rp->verify = (flags & SL_DATASET_VERIFY) != 0;
    sl_status st = inspect_store(path, rp, err);
    if (st) {
        sl_dataset_info_free(&rp->pub);
        return st;
    }
    for (int l = SL_DATASET_MAX_LABEL; l > 0; l--)
        if (counts[l - 1]) {
            rp->pub.num_labels = l;
            break;
        }
    *out = &rp->pub;
    return SL_OK;
}

void sl_dataset_info_free(sl_dataset_info *info) {
    if (!info) return;
    sl_dataset_free_classes(info->classes, info->num_classes);
    free(info->label_counts);
    free((report *)info);
}
