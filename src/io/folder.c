/* SPDX-License-Identifier: Apache-2.0 */
/* Image folders and file lists (see folder.h). */
#include "io/folder.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct entry {
    char *name;
    int32_t label;
} entry;

struct sl__folder {
    char *root;
    entry *e;
    int64_t n, cap;
    int classes;
    char **class_names; /* class-folder mode: the sub-folders' names, in label order */
};

/* DALI's default file_filters: images, and the audio files decoders.audio reads */
static const char *const image_exts[] = {".jpg",  ".jpeg", ".png", ".bmp", ".tif", ".tiff",
                                         ".pnm",  ".ppm",  ".pgm", ".pbm", ".jp2", ".webp",
                                         ".flac", ".ogg",  ".wav", NULL};

static int is_image(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    for (int i = 0; image_exts[i]; i++)
        if (!strcasecmp(dot, image_exts[i])) return 1;
    return 0;
}

static sl_status add(sl__folder *f, const char *name, int32_t label, sl_err *err) {
    if (f->n == f->cap) {
        int64_t cap = f->cap ? f->cap * 2 : 256;
        entry *e = realloc(f->e, (size_t)cap * sizeof *e);
        if (!e) return sl_err_set(err, SL_ENOMEM, "out of memory adding %s", name);
        f->e = e;
        f->cap = cap;
    }
    f->e[f->n].name = strdup(name);
    if (!f->e[f->n].name) return sl_err_set(err, SL_ENOMEM, "out of memory adding %s", name);
    f->e[f->n++].label = label;
    return SL_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* sorted names in dir (sub-folders when dirs, else image files) */
static sl_status list_dir(const char *dir, int dirs, char ***out, int *count, sl_err *err) {
    DIR *d = opendir(dir);
    if (!d)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", dir,
                          strerror(errno));
    char **v = NULL;
    int n = 0, cap = 0;
    struct dirent *de;
    sl_status st = SL_OK;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[4096];
        struct stat sb;
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p) continue;
        if (stat(p, &sb) != 0) continue;
        if (dirs ? !S_ISDIR(sb.st_mode) : !(S_ISREG(sb.st_mode) && is_image(de->d_name))) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                st = sl_err_set(err, SL_ENOMEM, "%s: out of memory listing it", dir);
                break;
            }
            v = nv;
        }
        if (!(v[n] = strdup(de->d_name))) {
            st = sl_err_set(err, SL_ENOMEM, "%s: out of memory listing it", dir);
            break;
        }
        n++;
    }
    closedir(d);
    if (st) {
        for (int i = 0; i < n; i++) free(v[i]);
        free(v);
        *out = NULL;
        *count = 0;
        return st;
    }
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    *count = n;
    return st;
}

static void free_names(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static sl_status scan_root(sl__folder *f, sl_err *err) {
    char **classes = NULL;
    int nc = 0;
    SL_TRY(list_dir(f->root, 1, &classes, &nc, err));
    sl_status st = SL_OK;
    for (int c = 0; c < nc && !st; c++) {
        char sub[4096];
        char **files = NULL;
        int nf = 0;
        snprintf(sub, sizeof sub, "%s/%s", f->root, classes[c]);
        st = list_dir(sub, 0, &files, &nf, err);
        for (int i = 0; i < nf && !st; i++) {
            char rel[4096];
            snprintf(rel, sizeof rel, "%s/%s", classes[c], files[i]);
            st = add(f, rel, c, err);
        }
        free_names(files, nf);
    }
    f->classes = nc;
    f->class_names = classes;
    return st;
}

static sl_status read_list(sl__folder *f, const char *list, sl_err *err) {
    FILE *fp = fopen(list, "r");
    if (!fp)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", list,
                          strerror(errno));
    char line[4096];
    int lineno = 0;
    sl_status st = SL_OK;
    while (!st && fgets(line, sizeof line, fp)) {
        lineno++;
        size_t len = strlen(line);
        while (len && isspace((unsigned char)line[len - 1])) line[--len] = 0;
        if (!len) continue;
        char *sp = strrchr(line, ' ');
        if (!sp) sp = strrchr(line, '\t');
        char *end = NULL;
        long lab = sp ? strtol(sp + 1, &end, 10) : 0;
        if (!sp || end == sp + 1 || *end) {
            st = sl_err_set(err, SL_EFORMAT, "%s:%d: expected \"path label\"", list, lineno);
            break;
        }
        *sp = 0;
        st = add(f, line, (int32_t)lab, err);
        if (lab + 1 > f->classes) f->classes = (int)lab + 1;
    }
    fclose(fp);
    return st;
}

sl_status sl__folder_open(const char *root, const char *list, int nfiles, const char *const *files,
                          int nlabels, const int64_t *labels, sl__folder **out, sl_err *err) {
    *out = NULL;
    sl__folder *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    sl_status st = SL_OK;
    if (root) {
        f->root = strdup(root);
    } else if (list) {
        const char *slash = strrchr(list, '/');
        f->root = slash ? strndup(list, (size_t)(slash - list)) : strdup(".");
    } else {
        f->root = strdup("");
    }
    if (!f->root) {
        st = sl_err_set(err, SL_ENOMEM, "out of memory");
    } else if (list) {
        st = read_list(f, list, err);
    } else if (nfiles > 0) {
        if (nlabels && nlabels != nfiles)
            st = sl_err_set(err, SL_EINVAL, "%d files but %d labels", nfiles, nlabels);
        for (int i = 0; i < nfiles && !st; i++) {
            int32_t lab = nlabels ? (int32_t)labels[i] : i;
            st = add(f, files[i], lab, err);
            if (lab + 1 > f->classes) f->classes = lab + 1;
        }
    } else if (root) {
        struct stat sb;
        if (stat(root, &sb) != 0)
            st = sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", root,
                            strerror(errno));
        else if (!S_ISDIR(sb.st_mode))
            st = sl_err_set(err, SL_EINVAL, "%s: not a folder", root);
        else
            st = scan_root(f, err);
    } else {
        st = sl_err_set(err, SL_EINVAL, "give file_root, file_list or files");
    }
    if (!st && f->n == 0)
        st = sl_err_set(err, SL_EINVAL, "%s: no image or audio files found", list ? list : f->root);
    if (st) {
        sl__folder_close(f);
        return st;
    }
    *out = f;
    return SL_OK;
}

/* Every regular file under root/rel (recursively, hidden names skipped) whose name matches filter,
 * added as "rel/name" (label 0). depth: how far down we are (links may loop). */
static sl_status walk(sl__folder *f, const char *rel, const char *filter, int depth, sl_err *err) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%s%s", f->root, rel[0] ? "/" : "", rel);
    if (depth > 32)
        return sl_err_set(err, SL_EINVAL, "%s: folders nested too deep (a link loop?)", dir);
    DIR *d = opendir(dir);
    if (!d)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", dir,
                          strerror(errno));
    sl_status st = SL_OK;
    struct dirent *de;
    while (st == SL_OK && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[4096], sub[4096];
        struct stat sb;
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p) continue;
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >=
            (int)sizeof sub)
            continue;
        if (stat(p, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode))
            st = walk(f, sub, filter, depth + 1, err);
        else if (S_ISREG(sb.st_mode) && fnmatch(filter, de->d_name, 0) == 0)
            st = add(f, sub, 0, err);
    }
    closedir(d);
    return st;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* a file list of paths alone, one per line */
static sl_status read_paths(sl__folder *f, const char *list, sl_err *err) {
    FILE *fp = fopen(list, "r");
    if (!fp)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", list,
                          strerror(errno));
    char line[4096];
    sl_status st = SL_OK;
    while (!st && fgets(line, sizeof line, fp)) {
        size_t len = strlen(line);
        while (len && isspace((unsigned char)line[len - 1])) line[--len] = 0;
        if (len) st = add(f, line, 0, err);
    }
    fclose(fp);
    return st;
}

sl_status sl__folder_open_files(const char *root, const char *list, int nfiles,
                                const char *const *files, const char *filter, sl__folder **out,
                                sl_err *err) {
    *out = NULL;
    sl__folder *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    f->classes = 1;
    sl_status st = SL_OK;
    if (root) {
        f->root = strdup(root);
    } else if (list) {
        const char *slash = strrchr(list, '/');
        f->root = slash ? strndup(list, (size_t)(slash - list)) : strdup(".");
    } else {
        f->root = strdup("");
    }
    if (!f->root) {
        st = sl_err_set(err, SL_ENOMEM, "out of memory");
    } else if (list) {
        st = read_paths(f, list, err);
    } else if (nfiles > 0) {
        for (int i = 0; i < nfiles && !st; i++) st = add(f, files[i], 0, err);
    } else if (root) {
        st = walk(f, "", filter ? filter : "*", 0, err);
        if (!st && f->n) qsort(f->e, (size_t)f->n, sizeof *f->e, cmp_entry);
        if (!st && f->n == 0)
            st = sl_err_set(err, SL_EINVAL, "%s: no files matching '%s' in it or below", root,
                            filter ? filter : "*");
    } else {
        st = sl_err_set(err, SL_EINVAL, "give file_root, file_list or files");
    }
    if (!st && f->n == 0)
        st = sl_err_set(err, SL_EINVAL, "%s: lists no files", list ? list : "files");
    if (st) {
        sl__folder_close(f);
        return st;
    }
    *out = f;
    return SL_OK;
}

int64_t sl__folder_count(const sl__folder *f) {
    return f->n;
}
const char *sl__folder_name(const sl__folder *f, int64_t i) {
    return f->e[i].name;
}
int32_t sl__folder_label(const sl__folder *f, int64_t i) {
    return f->e[i].label;
}
const char *sl__folder_root(const sl__folder *f) {
    return f->root;
}
int sl__folder_classes(const sl__folder *f) {
    return f->classes;
}

const char *sl__folder_class_name(const sl__folder *f, int c) {
    return f->class_names && c >= 0 && c < f->classes ? f->class_names[c] : NULL;
}

void sl__folder_shuffle(sl__folder *f, uint64_t seed) {
    sl__rng_philox r;
    sl__rng_philox_init(&r, seed, 0);
    for (int64_t i = f->n - 1; i > 0; i--) {
        int64_t j = (int64_t)sl__rng_philox_below(&r, (uint64_t)i + 1);
        entry t = f->e[i];
        f->e[i] = f->e[j];
        f->e[j] = t;
    }
}

/* File i's path: its name, under the root unless absolute. */
void sl__folder_path(const sl__folder *f, int64_t i, char *p, size_t size) {
    const char *name = f->e[i].name;
    if (name[0] == '/' || !f->root[0])
        snprintf(p, size, "%s", name);
    else
        snprintf(p, size, "%s/%s", f->root, name);
}

sl_status sl__folder_size(const sl__folder *f, int64_t i, size_t *size, sl_err *err) {
    char p[8192];
    sl__folder_path(f, i, p, sizeof p);
    struct stat sb;
    if (stat(p, &sb) != 0) return sl_err_set(err, SL_EIO, "%s: %s", p, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return sl_err_set(err, SL_EIO, "%s: not a regular file", p);
    *size = (size_t)sb.st_size;
    return SL_OK;
}

sl_status sl__folder_read_into(const sl__folder *f, int64_t i, uint8_t *dst, size_t size,
                               sl_err *err) {
    char p[8192];
    sl__folder_path(f, i, p, sizeof p);
    int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO: refused, not waited on */
    if (fd < 0) return sl_err_set(err, SL_EIO, "%s: %s", p, strerror(errno));
    struct stat fsb;
    sl_status st = SL_OK;
    if (fstat(fd, &fsb) != 0)
        st = sl_err_set(err, SL_EIO, "%s: %s", p, strerror(errno));
    else if (!S_ISREG(fsb.st_mode))
        st = sl_err_set(err, SL_EIO, "%s: not a regular file", p);
    size_t n = 0;
    while (n < size && st == SL_OK) {
        ssize_t got = read(fd, dst + n, size - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            st = sl_err_set(err, SL_EIO, "%s: read error: %s", p, strerror(errno));
        else if (got == 0)
            st = sl_err_set(err, SL_EIO, "%s: short read: %zu of %zu bytes (the file shrank)", p, n,
                            size);
        else
            n += (size_t)got;
    }
    struct stat sb;
    if (st == SL_OK && fstat(fd, &sb) == 0 && (size_t)sb.st_size != size)
        st = sl_err_set(err, SL_EIO,
                        "%s: the file changed size while being read (%zu -> %lld bytes)", p, size,
                        (long long)sb.st_size);
    close(fd);
    return st;
}

sl_status sl__folder_read(const sl__folder *f, int64_t i, uint8_t **buf, size_t *cap, size_t *size,
                          sl_err *err) {
    size_t n;
    SL_TRY(sl__folder_size(f, i, &n, err));
    if (n > *cap || !*buf) {
        uint8_t *nb = realloc(*buf, n ? n : 1);
        if (!nb) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", f->e[i].name);
        *buf = nb;
        *cap = n ? n : 1;
    }
    SL_TRY(sl__folder_read_into(f, i, *buf, n, err));
    *size = n;
    return SL_OK;
}

void sl__folder_close(sl__folder *f) {
    if (!f) return;
    for (int64_t i = 0; i < f->n; i++) free(f->e[i].name);
    free(f->e);
    if (f->class_names) free_names(f->class_names, f->classes);
    free(f->root);
    free(f);
}
