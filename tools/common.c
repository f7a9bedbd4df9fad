/* SPDX-License-Identifier: Apache-2.0 */
/* Shared CLI helpers (see common.h). */
#include "common.h"

#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *sl_cli_read_file(const char *path, size_t *size) {
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
        if (len + 1 == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int e = buf && ferror(f) ? (errno ? errno : EIO) : 0; /* a directory: EISDIR */
    fclose(f);
    if (!buf) {
        errno = ENOMEM;
        return NULL;
    }
    if (e) {
        free(buf);
        errno = e;
        return NULL;
    }
    buf[len] = '\0';
    if (size) *size = len;
    return buf;
}

char *sl_cli_read_pipeline(const char *cmd, const char *path) {
    size_t len = 0;
    char *text = sl_cli_read_file(path, &len);
    if (!text) {
        sl_cli_fail(cmd, "%s: %s", path, strerror(errno));
        return NULL;
    }
    const char *nul = memchr(text, '\0', len); /* the parser would stop there, silently */
    if (nul) {
        int line = 1;
        const char *ls = text;
        for (const char *q = text; q < nul; q++)
            if (*q == '\n') line++, ls = q + 1;
        sl_cli_fail(cmd, "%s:%d:%d: error: NUL byte in the pipeline text", path, line,
                    (int)(nul - ls) + 1);
        free(text);
        return NULL;
    }
    return text;
}

int sl_cli_parse_bind(char *arg, sl_pipeline_bind *out) {
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg) return -1;
    *eq = '\0';
    out->name = arg;
    out->value = eq + 1;
    return 0;
}

static const char *npy_descr(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_U8:
        return "|u1";
    case SL_DTYPE_I8:
        return "|i1";
    case SL_DTYPE_U16:
        return "<u2";
    case SL_DTYPE_I16:
        return "<i2";
    case SL_DTYPE_I32:
    case SL_DTYPE_INTERP: /* DALI's code of an interpolation type */
        return "<i4";
    case SL_DTYPE_I64:
        return "<i8";
    case SL_DTYPE_F16:
        return "<f2";
    case SL_DTYPE_BF16:
        return "<V2"; /* numpy has no bfloat16 */
    case SL_DTYPE_F32:
        return "<f4";
    case SL_DTYPE_F64:
        return "<f8";
    case SL_DTYPE_BOOL:
        return "|b1";
    case SL_DTYPE_U32:
        return "<u4";
    case SL_DTYPE_U64:
        return "<u8";
    case SL_DTYPE_COUNT:
        break;
    }
    return "|u1";
}

/* An existing path that is no regular file, or a symbolic link (/dev/stdout to a file): a rename
 * would replace it rather than write where it leads. */
static bool in_place_target(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return false;
    if (S_ISLNK(st.st_mode)) return true;
    return !S_ISREG(st.st_mode);
}

int sl_cli_in_out(int argc, char **argv, const char *cmd, const char *what, int (*usage)(FILE *),
                  const char **in, const char **out) {
    *in = *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout);
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "sluice %s: unknown option '%s'\n", cmd, argv[i]);
            return usage(stderr);
        }
        if (!*in) {
            *in = argv[i];
        } else if (!*out) {
            *out = argv[i];
        } else {
            fprintf(stderr, "sluice %s: %s, not '%s'\n", cmd, what, argv[i]);
            return usage(stderr);
        }
    }
    return *in ? -1 : usage(stderr);
}

int sl_cli_out_open(sl_cli_out *o, const char *cmd, const char *path, bool append) {
    memset(o, 0, sizeof *o);
    if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path)
        return sl_cli_fail(cmd, "%s: path too long", path);
    if (in_place_target(path)) { /* a device, a FIFO, a link (/dev/stdout): in place */
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return sl_cli_fail(cmd, "%s: %s", path, strerror(EISDIR));
        if (!(o->f = fopen(path, append ? "a" : "w")))
            return sl_cli_fail(cmd, "%s: %s", path, strerror(errno));
        return 0;
    }
    snprintf(o->tmp, sizeof o->tmp, "%s.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        o->tmp[0] = '\0';
        return sl_cli_fail(cmd, "%s: cannot create a file there: %s", path, strerror(e));
    }
    (void)fchmod(fd, 0644);
    if (!(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        return sl_cli_fail(cmd, "%s: %s", path, strerror(e));
    }
    if (append) { /* the new file starts with the old one's bytes */
        FILE *in = fopen(path, "rb");
        if (!in && errno != ENOENT) {
            int e = errno;
            sl_cli_out_discard(o);
            return sl_cli_fail(cmd, "%s: %s", path, strerror(e));
        }
        char buf[1 << 16];
        size_t n;
        while (in && (n = fread(buf, 1, sizeof buf, in)) > 0)
            if (fwrite(buf, 1, n, o->f) != n) break;
        int bad = in && ferror(in);
        int e = errno;
        if (in) fclose(in);
        if (bad) {
            sl_cli_out_discard(o);
            return sl_cli_fail(cmd, "%s: %s", path, strerror(e));
        }
        if (sl_cli_out_failed(o, cmd)) {
            sl_cli_out_discard(o);
            return 1;
        }
    }
    return 0;
}

int sl_cli_out_failed(sl_cli_out *o, const char *cmd) {
    if (!o->f || !ferror(o->f)) return 0;
    if (!o->err) {
        o->err = errno ? errno : EIO;
        sl_cli_fail(cmd, "%s: %s", o->tmp[0] ? o->tmp : o->path, strerror(o->err));
    }
    return 1;
}

void sl_cli_out_discard(sl_cli_out *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) unlink(o->tmp);
    o->tmp[0] = '\0';
}

/* Syncs the folder that holds path, so that a rename into it lasts; 0 or -1 with errno set. */
static int sync_parent(const char *path) {
    char dir[sizeof((sl_cli_out *)0)->path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd), e = errno;
    close(fd);
    errno = e;
    return r;
}

int sl_cli_out_close(sl_cli_out *o, const char *cmd) {
    if (!o->f) return 0;
    if (sl_cli_out_failed(o, cmd)) {
        sl_cli_out_discard(o);
        return 1;
    }
    const char *name = o->tmp[0] ? o->tmp : o->path;
    int e = 0;
    errno = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = errno ? errno : EIO;
    else if (o->tmp[0] && fsync(fileno(o->f)) != 0)
        e = errno;
    if (fclose(o->f) != 0 && !e) e = errno ? errno : EIO;
    o->f = NULL;
    if (e) {
        sl_cli_fail(cmd, "%s: %s", name, strerror(e));
        if (o->tmp[0]) unlink(o->tmp);
        o->tmp[0] = '\0';
        return 1;
    }
    if (o->tmp[0] && rename(o->tmp, o->path) != 0) {
        e = errno;
        sl_cli_fail(cmd, "%s: renaming %s over it: %s", o->path, o->tmp, strerror(e));
        unlink(o->tmp);
        o->tmp[0] = '\0';
        return 1;
    }
    if (o->tmp[0] && sync_parent(o->path) != 0) { /* the rename lasts */
        o->tmp[0] = '\0';
        return sl_cli_fail(cmd, "%s: syncing its folder: %s", o->path, strerror(errno));
    }
    o->tmp[0] = '\0';
    return 0;
}

int sl_cli_probe(const char *cmd, const char *opt, const char *path, bool in_place) {
    struct stat st;
    if (in_place && in_place_target(path)) {
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return sl_cli_fail(cmd, "%s %s: %s", opt, path, strerror(EISDIR));
        if (access(path, W_OK) != 0)
            return sl_cli_fail(cmd, "%s %s: %s", opt, path, strerror(errno));
        return 0;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) return sl_cli_fail(cmd, "%s %s: %s", opt, path, strerror(EISDIR));
        if (!in_place) return sl_cli_fail(cmd, "%s %s: not a regular file", opt, path);
        if (access(path, W_OK) != 0)
            return sl_cli_fail(cmd, "%s %s: %s", opt, path, strerror(errno));
        return 0;
    }
    char tmp[4112];
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
        return sl_cli_fail(cmd, "%s %s: path too long", opt, path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return sl_cli_fail(cmd, "%s %s: cannot create a file there: %s", opt, path,
                           strerror(errno));
    close(fd);
    unlink(tmp);
    return 0;
}

int sl_cli_write_npy(const char *cmd, const char *path, const sl_tensor *t) {
    if (t->device.kind != SL_DEVICE_CPU) { /* a GPU output: its bytes through a host copy */
        sl_tensor h;
        sl_err e;
        if (sl_tensor_alloc(&h, t->dtype, sl_cpu(), t->ndim, t->shape, t->layout, &e) != SL_OK)
            return sl_cli_fail(cmd, "%s: %s", path, e.msg);
        int rc = sl_tensor_copy(&h, t, NULL, &e) == SL_OK
                     ? sl_cli_write_npy(cmd, path, &h)
                     : sl_cli_fail(cmd, "%s: copying the output from the GPU: %s", path, e.msg);
        sl_tensor_free(&h);
        return rc;
    }
    char shape[256];
    int n = snprintf(shape, sizeof shape, "(");
    for (int i = 0; i < t->ndim; i++)
        n += snprintf(shape + n, sizeof shape - (size_t)n, "%lld,%s", (long long)t->shape[i],
                      i + 1 < t->ndim ? " " : "");
    snprintf(shape + n, sizeof shape - (size_t)n, ")");
    char hdr[512];
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                      npy_descr(t->dtype), shape);
    int total = 10 + hl + 1;
    int pad = (64 - total % 64) % 64;
    sl_cli_out o;
    if (sl_cli_out_open(&o, cmd, path, false)) return 1;
    unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    unsigned hlen = (unsigned)(hl + pad + 1);
    magic[8] = (unsigned char)(hlen & 0xff);
    magic[9] = (unsigned char)(hlen >> 8);
    fwrite(magic, 1, 10, o.f);
    fwrite(hdr, 1, (size_t)hl, o.f);
    for (int i = 0; i < pad; i++) fputc(' ', o.f);
    fputc('\n', o.f);
    /* contiguous host data (the pipeline's outputs are) */
    fwrite(t->data, 1, sl_tensor_nbytes(t), o.f);
    return sl_cli_out_close(&o, cmd);
}

void sl_cli_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

double sl_cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int sl_cli_opt_int(const char *cmd, const char *opt, const char *v, long long lo, long long hi,
                   long long *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        if (hi >= INT_MAX)
            return sl_cli_fail(cmd, "%s wants a whole number >= %lld, not '%s'", opt, lo, v);
        return sl_cli_fail(cmd, "%s wants a whole number in %lld..%lld, not '%s'", opt, lo, hi, v);
    }
    *out = x;
    return 0;
}

int sl_cli_opt_u64(const char *cmd, const char *opt, const char *v, unsigned long long *out) {
    char *end;
    errno = 0;
    const char *d = v;
    while (isspace((unsigned char)*d)) d++;
    unsigned long long x = strtoull(v, &end, 10);
    if (*d == '-' || end == v || *end || errno)
        return sl_cli_fail(cmd, "%s wants a whole number >= 0, not '%s'", opt, v);
    *out = x;
    return 0;
}

int sl_cli_opt_float(const char *cmd, const char *opt, const char *v, double lo, double hi,
                     double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x) || x < lo || x > hi) {
        if (hi >= DBL_MAX) return sl_cli_fail(cmd, "%s wants a number >= %g, not '%s'", opt, lo, v);
        return sl_cli_fail(cmd, "%s wants a number in %g..%g, not '%s'", opt, lo, hi, v);
    }
    *out = x;
    return 0;
}
