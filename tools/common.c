/* SPDX-License-Identifier: Apache-2.0 */
/* Shared CLI helpers (see common.h). */
#include "common.h"

#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *sl_cli_read_file(const char *path, size_t *size) {
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
    fclose(f);
    if (!buf) {
        errno = ENOMEM;
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
    case SL_DTYPE_COUNT:
        break;
    }
    return "|u1";
}

int sl_cli_write_npy(const char *path, const sl_tensor *t) {
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
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    unsigned hlen = (unsigned)(hl + pad + 1);
    magic[8] = (unsigned char)(hlen & 0xff);
    magic[9] = (unsigned char)(hlen >> 8);
    fwrite(magic, 1, 10, f);
    fwrite(hdr, 1, (size_t)hl, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    /* contiguous host data (the pipeline's outputs are) */
    size_t nb = sl_tensor_nbytes(t);
    int rc = fwrite(t->data, 1, nb, f) == nb ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    return rc;
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
