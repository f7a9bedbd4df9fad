/* SPDX-License-Identifier: Apache-2.0 */
/* sluice inspect PATH [--json]: what a record store holds: its format (caffe2 / caffe LMDB, IDX
 * file, image folder), the record count, the label histogram, and the first records' key, encoded
 * size, image format and dimensions. --json prints one JSON object
 * {"format", "path", "records", "labels": {"0": n0, ...}, "first": [...]}.
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
#include "core/log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIRST     5
#define MAX_LABEL 100000

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
} report;

/* DIR/labels.txt: class c's name on line c + 1 (a missing file is no error) */
static void read_classes(const char *dir, report *rp) {
    char p[4200], line[4096];
    snprintf(p, sizeof p, "%s/labels.txt", dir);
    FILE *f = fopen(p, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char **v = realloc(rp->classes, (size_t)(rp->nclasses + 1) * sizeof *v);
        if (!v) break;
        rp->classes = v;
        if (!(v[rp->nclasses] = strdup(line))) break;
        rp->nclasses++;
    }
    fclose(f);
}

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

static sl_status inspect_store(const char *path, report *rp, sl_err *e) {
    struct stat sb;
    char data[4200];
    snprintf(data, sizeof data, "%s/data.mdb", path);
    bool is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (stat(path, &sb) != 0) return sl_err_set(e, SL_ENOENT, "%s: no such file or folder", path);
    if (is_dir && stat(data, &sb) != 0) return inspect_folder(path, rp, e);
    if (is_dir) read_classes(path, rp);
    if (is_dir || strstr(path, ".mdb")) return inspect_lmdb(path, rp, e);
    return inspect_idx(path, rp, e);
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
            rp->format = strcmp(fmt, "caffe2") == 0   ? "caffe2"
                         : strcmp(fmt, "caffe") == 0  ? "caffe"
                         : strcmp(fmt, "idx") == 0    ? "idx"
                         : strcmp(fmt, "folder") == 0 ? "folder"
                                                      : "?";
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
                   "(caffe2 or caffe LMDB, IDX file, image folder),\nrecord count, label histogram "
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
        printf("\nfirst records:\n");
        for (int i = 0; i < rp.nfirst; i++) {
            rec_info *r = &rp.first[i];
            printf("  %-20s %8zu bytes  %-5s %dx%dx%d\n", r->key, r->bytes,
                   r->img.format ? r->img.format : "?", r->img.height, r->img.width,
                   r->img.channels);
        }
    }
    for (int c = 0; c < rp.nclasses; c++) free(rp.classes[c]);
    free(rp.classes);
    free(rp.hist);
    return 0;
}
