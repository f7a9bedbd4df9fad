/* SPDX-License-Identifier: Apache-2.0 */
/* sl_dataset_writer (sluice/dataset.h): records into an LMDB of Caffe2 TensorProtos or Caffe
 * Datums, or into a TFRecord file of tf.train.Example records in TensorFlow's image-classification
 * layout (image/encoded bytes, image/class/label int64), with the library's own encoders and LMDB
 * writer (src/io/).
 *
 * A store appears at its path only when it is finished: the writer fills a temporary beside it
 * (PATH.tmp-PID, in the same folder, so on the same file system) and sl_dataset_writer_close
 * syncs it to the disk and renames it into place -- the LMDB's folder in one rename, or, where the
 * folder is there already, its labels.txt and then its data.mdb; a TFRecord file with its class
 * names in the order finish() gives -- and syncs the folder that holds it. A writer that fails, is
 * discarded or is killed leaves no store at the path: readers take every record of an LMDB they can
 * open and have no way to tell a cut one from a whole one. */
#include "sluice/dataset.h"

#include "core/log.h"

#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/lmdb.h"
#include "io/protowire.h"
#include "io/tfrecord.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* LMDB's largest key (mdb_env_get_maxkeysize with the default page size) */
#define KEY_LIMIT 511

struct sl_dataset_writer {
    sl_dataset_format format;
    sl__lmdb_writer *lmdb;
    FILE *tf;
    char *path;     /* where the store goes */
    char *tmp;      /* where it is written: the LMDB's folder or the TFRecord file */
    bool into_dir;  /* LMDB: path is a folder already, its files are moved in one by one */
    char *labels;   /* class names, one a line, to go beside the store; NULL without */
    size_t nlabels; /* bytes of labels */
    sl__pw_buf rec, frame;
};

/* the message of a failed system call on a file: ENOSPC and EDQUOT in the words users grep for */
static sl_status sys_fail(sl_err *err, const char *file, const char *what, int errnum) {
    const char *why =
        errnum == ENOSPC || errnum == EDQUOT ? "no space left on device" : strerror(errnum);
    return sl_err_set(err, SL_EIO, "%s: %s: %s", file, what, why);
}

/* mkdir -p of path's parent folders (not path itself) */
static int make_parents(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0775) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return 0;
}

/* fsync of a file or a folder by its path */
static int sync_path(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* the folder that holds path ("." for a bare name) */
static void parent_of(const char *path, char *buf, size_t size) {
    snprintf(buf, size, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash)
        snprintf(buf, size, ".");
    else if (slash == buf)
        buf[1] = 0;
    else
        *slash = 0;
}

/* removes the temporary: a folder of plain files (the LMDB's), or a file */
static void remove_tmp(const char *tmp) {
    DIR *d = opendir(tmp);
    if (!d) { /* a file, or a folder that cannot be listed now (out of memory): the LMDB's */
        static const char *const names[] = {"data.mdb", "lock.mdb", "labels.txt"};
        char p[4200];
        for (int i = 0; i < 3; i++) {
            snprintf(p, sizeof p, "%s/%s", tmp, names[i]);
            unlink(p);
        }
        if (rmdir(tmp) != 0) unlink(tmp);
        return;
    }
    struct dirent *de;
    char p[4200];
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", tmp, de->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(tmp);
}

static void writer_free(sl_dataset_writer *w) {
    sl__protowire_buf_free(&w->rec);
    sl__protowire_buf_free(&w->frame);
    free(w->labels);
    free(w->path);
    free(w->tmp);
    free(w);
}

sl_status sl_dataset_format_parse(const char *name, sl_dataset_format *out, sl_err *err) {
    static const char *const names[] = {"caffe2", "caffe", "tfrecord"};
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, names[i])) {
            *out = (sl_dataset_format)i;
            return SL_OK;
        }
    return sl_err_set(err, SL_EINVAL, "a store format is caffe2, caffe or tfrecord, not '%s'",
                      name ? name : "(null)");
}

sl_status sl_dataset_writer_create(const char *path, sl_dataset_format format,
                                   sl_dataset_writer **out, sl_err *err) {
    *out = NULL;
    if (format != SL_DATASET_CAFFE2 && format != SL_DATASET_CAFFE && format != SL_DATASET_TFRECORD)
        return sl_err_set(err, SL_EINVAL,
                          "sl_dataset_writer_create: format %d is none of "
                          "SL_DATASET_CAFFE2, _CAFFE, _TFRECORD",
                          (int)format);
    if (!path || !*path) return sl_err_set(err, SL_EINVAL, "sl_dataset_writer_create: no path");
    sl_dataset_writer *w = calloc(1, sizeof *w);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* "out/" is the folder out */
    if (!w || !(w->path = strndup(path, n)) || !(w->tmp = malloc(n + 32))) {
        if (w) writer_free(w);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    w->format = format;
    struct stat sb;
    bool exists = stat(w->path, &sb) == 0;
    sl_status st = SL_OK;
    if (format == SL_DATASET_TFRECORD) {
        if (exists && S_ISDIR(sb.st_mode))
            st = sl_err_set(err, SL_EINVAL, "%s is a folder, not a TFRecord file", w->path);
    } else if (exists && !S_ISDIR(sb.st_mode)) {
        st = sl_err_set(err, SL_EINVAL, "%s exists and is not a folder (an LMDB is one)", w->path);
    } else if (exists) {
        char data[4200];
        snprintf(data, sizeof data, "%s/data.mdb", w->path);
        if (stat(data, &sb) == 0)
            st = sl_err_set(err, SL_EINVAL, "%s already holds an LMDB (data.mdb)", w->path);
        w->into_dir = true;
    }
    /* beside the store, or inside its folder when that is there (it may be a mount point) */
    snprintf(w->tmp, n + 32, w->into_dir ? "%s/tmp-%ld" : "%s.tmp-%ld", w->path, (long)getpid());
    if (!st && make_parents(w->tmp) != 0) st = sys_fail(err, w->path, "mkdir", errno);
    if (!st) remove_tmp(w->tmp); /* one that a killed process of the same id left */
    if (!st && format == SL_DATASET_TFRECORD) {
        if (!(w->tf = fopen(w->tmp, "wb"))) st = sys_fail(err, w->tmp, "create", errno);
    } else if (!st) {
        if (mkdir(w->tmp, 0775) != 0) st = sys_fail(err, w->tmp, "mkdir", errno);
        if (!st) st = sl__lmdb_writer_open(w->tmp, &w->lmdb, err);
        if (st) remove_tmp(w->tmp);
    }
    if (st) {
        writer_free(w);
        return st;
    }
    *out = w;
    return SL_OK;
}

sl_status sl_dataset_writer_set_classes(sl_dataset_writer *w, const char *const *names, int n,
                                        sl_err *err) {
    size_t len = 0;
    for (int c = 0; c < n; c++) {
        if (strchr(names[c], '\n'))
            return sl_err_set(err, SL_EINVAL,
                              "%s: class %d's name has a line break: it cannot go into a labels "
                              "file",
                              w->path, c);
        len += strlen(names[c]) + 1;
    }
    char *text = malloc(len + 1); /* and sprintf's NUL */
    if (!text) return sl_err_set(err, SL_ENOMEM, "out of memory");
    size_t at = 0;
    for (int c = 0; c < n; c++) at += (size_t)sprintf(text + at, "%s\n", names[c]);
    free(w->labels);
    w->labels = text;
    w->nlabels = len;
    return SL_OK;
}

sl_status sl_dataset_writer_add(sl_dataset_writer *w, const char *key, const void *data,
                                size_t size, bool raw, int height, int width, int channels,
                                int32_t label, sl_err *err) {
    const uint8_t *img = data;
    w->rec.len = 0;
    if (w->format == SL_DATASET_TFRECORD) {
        if (raw)
            return sl_err_set(err, SL_EINVAL,
                              "%s: TFRecords store encoded images "
                              "(image/encoded), not raw pixels",
                              w->path);
        w->frame.len = 0;
        sl__tfrec_encode_image(&w->rec, img, size, label);
        sl__tfrec_put(&w->frame, w->rec.data, w->rec.len);
        if (w->rec.oom || w->frame.oom)
            return sl_err_set(err, SL_ENOMEM, "out of memory encoding record %s", key);
        if (fwrite(w->frame.data, 1, w->frame.len, w->tf) != w->frame.len)
            return sys_fail(err, w->tmp, "write", errno);
        return SL_OK;
    }
    if (!key || strlen(key) > KEY_LIMIT)
        return sl_err_set(err, SL_EINVAL, "%s: %s is longer than an LMDB key (%d bytes)", w->path,
                          key ? key : "a NULL key", KEY_LIMIT);
    if (w->format == SL_DATASET_CAFFE2)
        sl__caffe2_encode(&w->rec, img, size, raw, height, width, channels, label);
    else
        sl__caffe_encode(&w->rec, img, size, raw, height, width, channels, label);
    if (w->rec.oom) return sl_err_set(err, SL_ENOMEM, "out of memory encoding record %s", key);
    return sl__lmdb_writer_put(w->lmdb, key, strlen(key), w->rec.data, w->rec.len, err);
}

/* writes the labels file at p (synced) */
static sl_status write_file(const char *p, const char *text, size_t n, sl_err *err) {
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0664);
    if (fd < 0) return sys_fail(err, p, "create", errno);
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fd, text + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int e = k < 0 ? errno : ENOSPC;
            close(fd);
            return sys_fail(err, p, "write", e);
        }
        done += (size_t)k;
    }
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return sys_fail(err, p, "fsync", e);
    }
    if (close(fd) != 0) return sys_fail(err, p, "close", errno);
    return SL_OK;
}

/* whether the file at path holds exactly the n bytes of text */
static bool same_text(const char *path, const char *text, size_t n) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat sb;
    bool same = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == n;
    char buf[4096];
    for (size_t off = 0; same && off < n;) {
        ssize_t k = pread(fd, buf, n - off < sizeof buf ? n - off : sizeof buf, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        same = k > 0 && memcmp(buf, text + off, (size_t)k) == 0;
        off += k > 0 ? (size_t)k : 0;
    }
    close(fd);
    return same;
}

static sl_status move(const char *from, const char *to, sl_err *err) {
    if (rename(from, to) != 0) {
        char what[4300];
        snprintf(what, sizeof what, "rename from %s", from);
        return sys_fail(err, to, what, errno);
    }
    return SL_OK;
}

/* the temporary, finished and synced, into place */
static sl_status finish(sl_dataset_writer *w, sl_err *err) {
    char p[4200], q[4200], dir[4200];
    if (w->format == SL_DATASET_TFRECORD) {
        /* The data and its class names (FILE.labels.txt) are two files, and no order of two
         * renames keeps them a pair: renaming the names in first left, on a crash between, the
         * new names beside the old data. So older names that differ are moved aside first (and
         * put back when the data cannot be moved in), then the data goes in, then the new names;
         * a crash leaves the old pair, or data without names (the old ones aside), never a
         * mismatched pair. */
        char aside[4200];
        snprintf(p, sizeof p, "%s.labels.txt.tmp-%ld", w->path, (long)getpid());
        snprintf(q, sizeof q, "%s.labels.txt", w->path);
        snprintf(aside, sizeof aside, "%s.labels.txt.old-%ld", w->path, (long)getpid());
        if (w->labels) {
            sl_status st = write_file(p, w->labels, w->nlabels, err);
            if (st) {
                unlink(p);
                return st;
            }
        }
        struct stat sb;
        bool old = lstat(q, &sb) == 0;
        bool same = old && w->labels && same_text(q, w->labels, w->nlabels);
        sl_status st = SL_OK;
        if (old && !same) st = move(q, aside, err);
        if (!st) {
            st = move(w->tmp, w->path, err);
            if (st && old && !same && rename(aside, q) != 0) /* the old names back */
                sl__log(SL_LOG_WARN, "%s: its class names are left at %s: %s", w->path, aside,
                        strerror(errno));
            else if (!st && old && !same)
                unlink(aside);
        }
        if (!st && w->labels && !same) st = move(p, q, err);
        if (w->labels) unlink(p); /* moved in, or not wanted */
        if (st) return st;
    } else {
        if (w->labels) {
            snprintf(p, sizeof p, "%s/labels.txt", w->tmp);
            SL_TRY(write_file(p, w->labels, w->nlabels, err));
        }
        if (sync_path(w->tmp) != 0) return sys_fail(err, w->tmp, "fsync", errno);
        if (!w->into_dir) {
            SL_TRY(move(w->tmp, w->path, err));
        } else {
            /* labels first: data.mdb makes the store, so it goes last */
            if (w->labels) {
                snprintf(q, sizeof q, "%s/labels.txt", w->path);
                SL_TRY(move(p, q, err));
            }
            snprintf(p, sizeof p, "%s/data.mdb", w->tmp);
            snprintf(q, sizeof q, "%s/data.mdb", w->path);
            struct stat sb;
            if (stat(q, &sb) == 0)
                return sl_err_set(err, SL_EINVAL, "%s already holds an LMDB (data.mdb)", w->path);
            SL_TRY(move(p, q, err));
            remove_tmp(w->tmp);
            if (sync_path(w->path) != 0) return sys_fail(err, w->path, "fsync", errno);
            return SL_OK;
        }
    }
    parent_of(w->path, dir, sizeof dir);
    if (sync_path(dir) != 0) return sys_fail(err, dir, "fsync", errno);
    return SL_OK;
}

sl_status sl_dataset_writer_close(sl_dataset_writer *w, sl_err *err) {
    if (!w) return SL_OK;
    sl_status st = SL_OK;
    if (w->tf) {
        int e = 0;
        if (fflush(w->tf) != 0 || ferror(w->tf)) e = errno ? errno : EIO;
        if (!e && fsync(fileno(w->tf)) != 0) e = errno;
        if (fclose(w->tf) != 0 && !e) e = errno;
        w->tf = NULL;
        if (e) st = sys_fail(err, w->tmp, "write", e);
    } else {
        st = sl__lmdb_writer_close(w->lmdb, err);
        w->lmdb = NULL;
    }
    if (!st) st = finish(w, err);
    if (st) remove_tmp(w->tmp);
    writer_free(w);
    return st;
}

void sl_dataset_writer_discard(sl_dataset_writer *w) {
    if (!w) return;
    if (w->tf) fclose(w->tf);
    sl__lmdb_writer_abort(w->lmdb);
    remove_tmp(w->tmp);
    writer_free(w);
}
