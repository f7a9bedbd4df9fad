/* SPDX-License-Identifier: Apache-2.0 */
/* sluice inspect PATH [--json]: what a record store holds: its format (caffe2 / caffe LMDB, IDX
 * file, image folder, WebDataset tar, TFRecord file -- with the features of its first Example --,
 * NumPy file or folder of them: told apart by what the path
 * holds, else "unrecognised format" saying what was looked for), the record count, the label
 * histogram (with class names where the store has them), and the first records' key, encoded
 * size, image format and dimensions. --json prints one JSON object
 * {"format", "path", "records", "labels": {"0": n0, ...}, "classes": [...], "first": [...]}.
 * sluice inspect --verify PATH: the same walk in a child process that also reads every byte of
 * every record, so that damage the checks at open cannot see (or a fault inside a library) is
 * reported -- the child's error or signal -- instead of taking the tool down. */
#include "cli.h"

#include "common.h"
#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/folder.h"
#include "io/idx.h"
#include "io/jpegenc.h"
#include "io/lmdb.h"
#include "io/npy.h"
#include "io/wds.h"
#include "io/tfrecord.h"
#include "core/bytes.h"
#include "core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIRST        5
#define MAX_LABEL    100000
#define FEATURES_MAX 64

typedef struct rec_info {
    char key[128];
    size_t bytes;
    sl__image_info img;
    bool raw;
} rec_info;

typedef struct report {
    bool verify;     /* read every byte of every record */
    uint64_t sum;    /* of those bytes (so the reads are not optimised away) */
    long long bytes; /* read by verify */
    const char *format;
    long long records;
    long long *hist; /* MAX_LABEL + 1 bins; the last one counts labels out of range */
    long long unlabelled;
    int nfirst;
    rec_info first[FIRST];
    char **classes; /* labels.txt beside data.mdb (sluice convert --from folder), or NULL */
    int nclasses;
    int nfeat; /* TFRecord: the first Example's features */
    struct {
        char name[128];
        const char *kind;
        long long values;
    } feat[FEATURES_MAX];
} report;

static const char *class_of(const report *rp, int l) {
    return l < rp->nclasses ? rp->classes[l] : NULL;
}

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
        if (rp->verify) {
            for (size_t k = 0; k < n; k++) rp->sum += v[k];
            char kb[8];
            sl__lmdb_key(db, i, kb, sizeof kb);
            rp->bytes += (long long)n;
        }
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
    for (int c = 0; c < sl__folder_classes(f); c++) { /* the class sub-folders */
        const char *name = sl__folder_class_name(f, c);
        char **v = name ? realloc(rp->classes, (size_t)(rp->nclasses + 1) * sizeof *v) : NULL;
        if (!v || !(v[rp->nclasses] = strdup(name))) {
            if (v) rp->classes = v;
            break;
        }
        rp->classes = v;
        rp->nclasses++;
    }
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

/* A WebDataset tar: samples grouped by key; the image member (jpg, jpeg, png, ...) and the "cls"
 * member (the label, as text) of each. */
static sl_status inspect_wds(const char *path, report *rp, sl_err *e) {
    sl__wds *w;
    SL_TRY(sl__wds_open(1, &path, &w, e));
    rp->format = "webdataset";
    rp->records = sl__wds_count(w);
    for (long long i = 0; i < rp->records; i++) {
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
                rp->unlabelled++;
        } else {
            rp->unlabelled++;
        }
        if (rp->verify && sl__wds_find(w, i, "jpg;jpeg;png;bmp;webp;tif;tiff", false, &p, &n)) {
            for (size_t k = 0; k < n; k++) rp->sum += p[k];
            rp->bytes += (long long)n;
        }
        if (i < FIRST) {
            rec_info *ri = &rp->first[rp->nfirst++];
            snprintf(ri->key, sizeof ri->key, "%s", sl__wds_key(w, i));
            if (sl__wds_find(w, i, "jpg;jpeg;png;bmp;webp;tif;tiff", false, &p, &n))
                image_of(ri, p, n);
            else
                ri->img.format = "none";
        }
    }
    sl__wds_close(w);
    return SL_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One .npy file's header into ri (key: its name); the file is read whole when verifying. */
static sl_status npy_record(const char *file, const char *key, report *rp, rec_info *ri,
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
                for (ssize_t k = 0; k < r; k++) rp->sum += buf[k];
                rp->bytes += r;
            }
    }
    close(fd);
    if (!st && ri) {
        snprintf(ri->key, sizeof ri->key, "%s", key);
        ri->bytes = h.nbytes;
        ri->raw = true;
        ri->img.format = "npy";
        ri->img.height = h.ndim >= 1 ? (int)h.shape[0] : 1;
        ri->img.width = h.ndim >= 2 ? (int)h.shape[1] : 1;
        ri->img.channels = h.ndim >= 3 ? (int)h.shape[2] : 1;
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
    rp->format = "npy";
    rp->records = (long long)n;
    rp->unlabelled = (long long)n;
    for (size_t i = 0; i < n && !st; i++) {
        char file[8400];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        if (i < FIRST || rp->verify)
            st = npy_record(file, names[i], rp, i < FIRST ? &rp->first[rp->nfirst++] : NULL, e);
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
    if (rp->nfeat == FEATURES_MAX) return;
    const uint8_t *d;
    size_t n;
    int64_t count = v->kind == SL_TFREC_BYTES_LIST   ? sl__tfrec_bytes(v, &d, &n)
                    : v->kind == SL_TFREC_INT64_LIST ? sl__tfrec_int64s(v, NULL, 0)
                    : v->kind == SL_TFREC_FLOAT_LIST ? sl__tfrec_floats(v, NULL, 0)
                                                     : 0;
    snprintf(rp->feat[rp->nfeat].name, sizeof rp->feat[0].name, "%.*s", (int)nlen, name);
    rp->feat[rp->nfeat].kind = sl__tfrec_kind_name(v->kind);
    rp->feat[rp->nfeat++].values = count;
}

/* a TFRecord file: every record checked; labels from image/class/label, images from
 * image/encoded (TensorFlow's image-classification layout), when the records have them */
static sl_status inspect_tfrec(const char *path, report *rp, sl_err *e) {
    sl__tfrec *t;
    SL_TRY(sl__tfrec_open(1, &path, NULL, &t, e));
    rp->format = "tfrecord";
    rp->records = sl__tfrec_count(t);
    static const char *const names[] = {"image/encoded", "image/class/label"};
    sl_status st = SL_OK;
    for (long long i = 0; i < rp->records && !st; i++) {
        const uint8_t *d;
        uint64_t len;
        sl__tfrec_value v[2];
        st = sl__tfrec_read(t, i, &d, &len, e);
        if (!st && rp->verify) {
            for (uint64_t k = 0; k < len; k++) rp->sum += d[k];
            rp->bytes += (long long)len;
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
            rp->unlabelled++;
        if (i < FIRST) {
            rec_info *ri = &rp->first[rp->nfirst++];
            snprintf(ri->key, sizeof ri->key, "%llu", (unsigned long long)sl__tfrec_offset(t, i));
            const uint8_t *img;
            size_t n;
            if (sl__tfrec_bytes(&v[0], &img, &n) >= 1)
                image_of(ri, img, n);
            else
                ri->img.format = "none";
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
            rp->nclasses = sl_cli_read_classes(path, &rp->classes);
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
        rp->format = "npy";
        rp->records = 1;
        rp->unlabelled = 1;
        const char *base = strrchr(path, '/');
        return npy_record(path, base ? base + 1 : path, rp, &rp->first[rp->nfirst++], e);
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

/* inspect_store with every record read, in a child process: its error comes back through a pipe,
 * its signal (a fault in a damaged store) is reported as damage. */
static sl_status verify_store(const char *path, report *rp, sl_err *e) {
    int fds[2];
    if (pipe(fds) != 0) return sl_err_set(e, SL_EIO, "%s: pipe: %s", path, strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return sl_err_set(e, SL_EIO, "%s: fork: %s", path, strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        rp->verify = true;
        sl_err ce = {0};
        sl_status st = inspect_store(path, rp, &ce);
        char msg[sizeof ce.msg + 64];
        int len = st ? snprintf(msg, sizeof msg, "E%d %s", (int)st, ce.msg)
                     : snprintf(msg, sizeof msg, "K%lld %lld %s %llu", rp->records, rp->bytes,
                                rp->format ? rp->format : "?", (unsigned long long)rp->sum);
        if (len > (int)sizeof msg - 1) len = (int)sizeof msg - 1;
        ssize_t w = write(fds[1], msg, (size_t)len);
        (void)w;
        _exit(st ? 1 : 0);
    }
    close(fds[1]);
    char msg[sizeof e->msg + 64];
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fds[0], msg + got, sizeof msg - 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
        if (got == sizeof msg - 1) break;
    }
    msg[got] = 0;
    close(fds[0]);
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) return sl_err_set(e, SL_EIO, "%s: waitpid: %s", path, strerror(errno));
    if (WIFSIGNALED(ws))
        return sl_err_set(e, SL_EFORMAT, "%s: damaged store: reading it raised signal %d (%s)",
                          path, WTERMSIG(ws), strsignal(WTERMSIG(ws)));
    int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    if (code == 0 && msg[0] == 'K') {
        long long recs = 0, bytes = 0;
        char fmt[32] = "?";
        if (sscanf(msg + 1, "%lld %lld %31s", &recs, &bytes, fmt) >= 2) {
            rp->records = recs, rp->bytes = bytes;
            static const char *const formats[] = {"caffe2",     "caffe", "idx",     "folder",
                                                  "webdataset", "npy",   "tfrecord"};
            rp->format = "?";
            for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++)
                if (!strcmp(fmt, formats[k])) rp->format = formats[k];
            return SL_OK;
        }
    }
    if (code != 0 && msg[0] == 'E') {
        char *sp = strchr(msg, ' ');
        return sl_err_set(e, (sl_status)atoi(msg + 1), "%s", sp ? sp + 1 : msg);
    }
    return sl_err_set(e, SL_EFORMAT, "%s: damaged store: the verifying process exited with %d",
                      path, code);
}

int sl_cli_inspect(int argc, char **argv) {
    const char *path = NULL;
    bool json = false, verify = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--verify")) {
            verify = true;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: sluice inspect PATH [--json] [--verify]\nShows a record store's format "
                   "(caffe2 or caffe LMDB, IDX file, image folder,\nWebDataset tar, TFRecord file, "
                   "NumPy file or "
                   "folder of them),\nrecord count, label histogram "
                   "and first records.\n--verify reads every record in a child process and "
                   "reports damage\n(an error or the child's signal) instead of crashing.\n");
            return 0;
        } else if (!path && argv[i][0] != '-') {
            path = argv[i];
        } else {
            fprintf(stderr, "usage: sluice inspect PATH [--json] [--verify]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: sluice inspect PATH [--json] [--verify]\n");
        return 2;
    }
    report rp;
    memset(&rp, 0, sizeof rp);
    rp.hist = calloc(MAX_LABEL + 1, sizeof *rp.hist);
    if (!rp.hist) return sl_cli_fail("inspect", "out of memory");
    sl_err e = {0};
    sl_status st = verify ? verify_store(path, &rp, &e) : inspect_store(path, &rp, &e);
    if (st) {
        free(rp.hist);
        sl_cli_free_classes(rp.classes, rp.nclasses);
        return sl_cli_fail("inspect", "%s", e.msg);
    }
    if (verify) {
        if (json) {
            printf("{\"path\": ");
            sl_cli_json_str(stdout, path);
            printf(
                ", \"verified\": true, \"format\": \"%s\", \"records\": %lld, \"bytes\": %lld}\n",
                rp.format, rp.records, rp.bytes);
        } else {
            printf("%s: verified: %s, %lld records, %lld bytes read\n", path, rp.format, rp.records,
                   rp.bytes);
        }
    } else if (json) {
        printf("{\"format\": \"%s\", \"path\": ", rp.format);
        sl_cli_json_str(stdout, path);
        printf(", \"records\": %lld, \"labels\": {", rp.records);
        int k = 0;
        for (int l = 0; l < MAX_LABEL; l++)
            if (rp.hist[l]) printf("%s\"%d\": %lld", k++ ? ", " : "", l, rp.hist[l]);
        printf("}");
        if (rp.nclasses) {
            printf(", \"classes\": [");
            for (int c = 0; c < rp.nclasses; c++) {
                if (c) printf(", ");
                sl_cli_json_str(stdout, rp.classes[c]);
            }
            printf("]");
        }
        if (rp.nfeat) {
            printf(", \"features\": [");
            for (int j = 0; j < rp.nfeat; j++) {
                printf("%s{\"name\": ", j ? ", " : "");
                sl_cli_json_str(stdout, rp.feat[j].name);
                printf(", \"kind\": \"%s\", \"values\": %lld}", rp.feat[j].kind, rp.feat[j].values);
            }
            printf("]");
        }
        printf(", \"labels_out_of_range\": %lld, \"unlabelled\": %lld, \"first\": [",
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
            if (rp.hist[l]) {
                const char *cn = class_of(&rp, l);
                if (cn)
                    printf(" %d(%s):%lld", l, cn, rp.hist[l]);
                else
                    printf(" %d:%lld", l, rp.hist[l]);
                k++;
            }
        if (!k) printf(" (none)");
        if (rp.hist[MAX_LABEL]) printf(" (out of range: %lld)", rp.hist[MAX_LABEL]);
        if (rp.unlabelled) printf(" (unlabelled: %lld)", rp.unlabelled);
        if (rp.nfeat) printf("\nfeatures (first record):");
        for (int j = 0; j < rp.nfeat; j++)
            printf("\n  %-30s %s of %lld", rp.feat[j].name, rp.feat[j].kind, rp.feat[j].values);
        printf("\nfirst records:\n");
        for (int i = 0; i < rp.nfirst; i++) {
            rec_info *r = &rp.first[i];
            printf("  %-20s %8zu bytes  %-5s %dx%dx%d\n", r->key, r->bytes,
                   r->img.format ? r->img.format : "?", r->img.height, r->img.width,
                   r->img.channels);
        }
    }
    sl_cli_free_classes(rp.classes, rp.nclasses);
    free(rp.hist);
    return 0;
}
