/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal .npy reader: parses the header dict ('descr', 'fortran_order', 'shape'). */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_descr(const char *d, sl_dtype *t) {
    static const struct {
        const char *s;
        sl_dtype t;
    } map[] = {{"|u1", SL_DTYPE_U8},   {"|i1", SL_DTYPE_I8},  {"<u2", SL_DTYPE_U16},
               {"<i2", SL_DTYPE_I16},  {"<i4", SL_DTYPE_I32}, {"<i8", SL_DTYPE_I64},
               {"<f2", SL_DTYPE_F16},  {"<f4", SL_DTYPE_F32}, {"<f8", SL_DTYPE_F64},
               {"|b1", SL_DTYPE_BOOL}, {"<u4", SL_DTYPE_U32}, {"<u8", SL_DTYPE_U64}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strncmp(d, map[i].s, 3) == 0) {
            *t = map[i].t;
            return 0;
        }
    return -1;
}

sl_status npy_load(const char *path, sl_tensor *out, sl_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return sl_err_set(err, SL_EIO, "%s: cannot open", path);
    unsigned char magic[10];
    sl_status st = SL_EFORMAT;
    char *hdr = NULL;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) goto bad;
    size_t hlen;
    if (magic[6] == 1) {
        unsigned char l[2];
        if (fread(l, 1, 2, f) != 2) goto bad;
        hlen = l[0] | (size_t)l[1] << 8;
    } else {
        unsigned char l[4];
        if (fread(l, 1, 4, f) != 4) goto bad;
        hlen = l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24;
    }
    hdr = calloc(1, hlen + 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) goto bad;
    const char *d = strstr(hdr, "'descr':");
    const char *fo = strstr(hdr, "'fortran_order':");
    const char *sh = strstr(hdr, "'shape':");
    if (!d || !fo || !sh) goto bad;
    d = strchr(d + 8, '\'');
    sl_dtype t;
    if (!d || parse_descr(d + 1, &t) != 0) goto bad;
    if (strstr(fo, "True") && strstr(fo, "True") < sh) goto bad;
    sh = strchr(sh, '(');
    if (!sh) goto bad;
    int64_t shape[SL_MAX_DIMS];
    int nd = 0;
    const char *p = sh + 1;
    while (*p && *p != ')') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (nd == SL_MAX_DIMS) goto bad;
        shape[nd++] = v;
        p = end;
    }
    st = sl_tensor_alloc(out, t, sl_cpu(), nd, shape, NULL, err);
    if (st != SL_OK) goto done;
    if (fread(out->data, 1, sl_tensor_nbytes(out), f) != sl_tensor_nbytes(out)) {
        sl_tensor_free(out);
        st = SL_EFORMAT;
        goto bad;
    }
    st = SL_OK;
    goto done;
bad:
    sl_err_set(err, SL_EFORMAT, "%s: not a .npy file this reader understands", path);
done:
    free(hdr);
    fclose(f);
    return st;
}
