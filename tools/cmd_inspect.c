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
 * reported -- the child's error or signal -- instead of taking the tool down. The walk is the
 * library's sl_dataset_inspect (sluice/dataset.h); this file prints it. */
#include "cli.h"

#include "common.h"

#include "sluice/dataset.h"

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

/* The verified walk's outcome */
typedef struct verified {
    const char *format;
    long long records, bytes;
} verified;

/* sl_dataset_inspect with every record read, in a child process: its error comes back through a
 * pipe, its signal (a fault in a damaged store) is reported as damage. */
static sl_status verify_store(const char *path, verified *rp, sl_err *e) {
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
        sl_err ce = {0};
        sl_dataset_info *in;
        sl_status st = sl_dataset_inspect(path, SL_DATASET_VERIFY, &in, &ce);
        char msg[sizeof ce.msg + 64];
        int len = st ? snprintf(msg, sizeof msg, "E%d %s", (int)st, ce.msg)
                     : snprintf(msg, sizeof msg, "K%lld %lld %s %llu", in->records, in->bytes_read,
                                in->format ? in->format : "?", (unsigned long long)in->checksum);
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
            static const char *const formats[] = {"caffe2", "caffe",      "lmdb", "idx",
                                                  "folder", "webdataset", "npy",  "tfrecord"};
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

static void print_json(const char *path, const sl_dataset_info *rp) {
    printf("{\"format\": \"%s\", \"path\": ", rp->format);
    sl_cli_json_str(stdout, path);
    printf(", \"records\": %lld, \"labels\": {", rp->records);
    int k = 0;
    for (int l = 0; l < rp->num_labels; l++)
        if (rp->label_counts[l]) printf("%s\"%d\": %lld", k++ ? ", " : "", l, rp->label_counts[l]);
    printf("}");
    if (rp->num_classes) {
        printf(", \"classes\": [");
        for (int c = 0; c < rp->num_classes; c++) {
            if (c) printf(", ");
            sl_cli_json_str(stdout, rp->classes[c]);
        }
        printf("]");
    }
    if (rp->num_features) {
        printf(", \"features\": [");
        for (int j = 0; j < rp->num_features; j++) {
            printf("%s{\"name\": ", j ? ", " : "");
            sl_cli_json_str(stdout, rp->features[j].name);
            printf(", \"kind\": \"%s\", \"values\": %lld}", rp->features[j].kind,
                   rp->features[j].values);
        }
        printf("]");
    }
    printf(", \"labels_out_of_range\": %lld, \"unlabelled\": %lld, \"first\": [", rp->out_of_range,
           rp->unlabelled);
    for (int i = 0; i < rp->num_first; i++) {
        const sl_dataset_record *r = &rp->first[i];
        printf("%s{\"key\": ", i ? ", " : "");
        sl_cli_json_str(stdout, r->key);
        printf(", \"bytes\": %zu, \"image\": \"%s\", \"height\": %d, \"width\": %d, "
               "\"channels\": %d}",
               r->bytes, r->image ? r->image : "unknown", r->height, r->width, r->channels);
    }
    printf("]}\n");
}

static void print_text(const char *path, const sl_dataset_info *rp) {
    printf("path:     %s\nformat:   %s\nrecords:  %lld\nlabels:  ", path, rp->format, rp->records);
    int k = 0;
    for (int l = 0; l < rp->num_labels; l++)
        if (rp->label_counts[l]) {
            const char *cn = l < rp->num_classes ? rp->classes[l] : NULL;
            if (cn)
                printf(" %d(%s):%lld", l, cn, rp->label_counts[l]);
            else
                printf(" %d:%lld", l, rp->label_counts[l]);
            k++;
        }
    if (!k) printf(" (none)");
    if (rp->out_of_range) printf(" (out of range: %lld)", rp->out_of_range);
    if (rp->unlabelled) printf(" (unlabelled: %lld)", rp->unlabelled);
    if (rp->num_features) printf("\nfeatures (first record):");
    for (int j = 0; j < rp->num_features; j++)
        printf("\n  %-30s %s of %lld", rp->features[j].name, rp->features[j].kind,
               rp->features[j].values);
    printf("\nfirst records:\n");
    for (int i = 0; i < rp->num_first; i++) {
        const sl_dataset_record *r = &rp->first[i];
        printf("  %-20s %8zu bytes  %-5s %dx%dx%d\n", r->key, r->bytes, r->image ? r->image : "?",
               r->height, r->width, r->channels);
    }
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
    sl_err e = {0};
    if (verify) {
        verified v = {0};
        if (verify_store(path, &v, &e)) return sl_cli_fail("inspect", "%s", e.msg);
        if (json) {
            printf("{\"path\": ");
            sl_cli_json_str(stdout, path);
            printf(
                ", \"verified\": true, \"format\": \"%s\", \"records\": %lld, \"bytes\": %lld}\n",
                v.format, v.records, v.bytes);
        } else {
            printf("%s: verified: %s, %lld records, %lld bytes read\n", path, v.format, v.records,
                   v.bytes);
        }
        return 0;
    }
    sl_dataset_info *rp;
    if (sl_dataset_inspect(path, 0, &rp, &e)) return sl_cli_fail("inspect", "%s", e.msg);
    if (json)
        print_json(path, rp);
    else
        print_text(path, rp);
    sl_dataset_info_free(rp);
    return 0;
}
