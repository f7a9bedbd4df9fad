/* SPDX-License-Identifier: Apache-2.0 */
/* TFRecord files and tf.train.Example records (tfrecord.h). */
#include "io/tfrecord.h"

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/log.h"
#include "io/mapfile.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CRC-32C: slicing by 8 over tables made once; SSE 4.2's crc32 instruction where the CPU has
 * it, on three streams at once (the instruction takes 3 cycles but can start every cycle), their
 * registers joined by tables that move a register past a block of zero bytes (the CRC is linear:
 * crc(A B) = shift(crc(A), |B|) ^ crc_from_0(B)) ---- */

#define CRC_SHORT 256  /* bytes per stream in a 3-stream block */
#define CRC_LONG  8192 /* the same for long records */

static uint32_t crc_tab[8][256];
static uint32_t shift_short[4][256], shift_long[4][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* the table that moves a CRC register past k zero bytes: XOR of what each bit of it becomes */
static void shift_table(uint32_t t[4][256], size_t k) {
    uint32_t basis[32];
    for (int b = 0; b < 32; b++) {
        uint32_t v = 1u << b;
        for (size_t i = 0; i < k; i++) v = (v >> 8) ^ crc_tab[0][v & 0xff];
        basis[b] = v;
    }
    for (int j = 0; j < 4; j++)
        for (int n = 0; n < 256; n++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++)
                if (n >> i & 1) v ^= basis[8 * j + i];
            t[j][n] = v;
        }
}

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_tab[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
    shift_table(shift_short, CRC_SHORT);
    shift_table(shift_long, CRC_LONG);
}

/* 8 little-endian bytes as one load (sl__get_u64's byte loop is not always made one) */
static inline uint64_t le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static uint32_t crc_soft(uint32_t c, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint64_t w = le64(p) ^ c;
        c = crc_tab[7][w & 0xff] ^ crc_tab[6][(w >> 8) & 0xff] ^ crc_tab[5][(w >> 16) & 0xff] ^
            crc_tab[4][(w >> 24) & 0xff] ^ crc_tab[3][(w >> 32) & 0xff] ^
            crc_tab[2][(w >> 40) & 0xff] ^ crc_tab[1][(w >> 48) & 0xff] ^ crc_tab[0][w >> 56];
        p += 8, n -= 8;
    }
    while (n--) c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
    return c;
}

static uint32_t shift(uint32_t t[4][256], uint32_t c) {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* blocks of 3 x k bytes on three streams while they last */
__attribute__((target("sse4.2"))) static uint64_t
crc_hw3(uint64_t c0, const uint8_t **pp, size_t *np, size_t k, uint32_t t[4][256]) {
    const uint8_t *p = *pp;
    size_t n = *np;
    while (n >= 3 * k) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < k; i += 8) {
            c0 = __builtin_ia32_crc32di(c0, le64(p + i));
            c1 = __builtin_ia32_crc32di(c1, le64(p + k + i));
            c2 = __builtin_ia32_crc32di(c2, le64(p + 2 * k + i));
        }
        c0 = shift(t, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shift(t, (uint32_t)c0) ^ (uint32_t)c2;
        p += 3 * k, n -= 3 * k;
    }
    *pp = p, *np = n;
    return c0;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n) {
    uint64_t c64 = c;
    if (n >= 3 * CRC_SHORT) {
        pthread_once(&crc_once, crc_init);
        c64 = crc_hw3(c64, &p, &n, CRC_LONG, shift_long);
        c64 = crc_hw3(c64, &p, &n, CRC_SHORT, shift_short);
    }
    while (n >= 8) {
        c64 = __builtin_ia32_crc32di(c64, le64(p));
        p += 8, n -= 8;
    }
    c = (uint32_t)c64;
    while (n--) c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#define SL__CRC_HW 1
#endif

uint32_t sl__tfrec_crc32c(uint32_t crc, const void *data, size_t len) {
#ifdef SL__CRC_HW
    if (__builtin_cpu_supports("sse4.2")) return ~crc_hw(~crc, data, len);
#endif
    return sl__tfrec_crc32c_portable(crc, data, len);
}

uint32_t sl__tfrec_crc32c_portable(uint32_t crc, const void *data, size_t len) {
    pthread_once(&crc_once, crc_init);
    return ~crc_soft(~crc, data, len);
}

/* ---- framing ---- */

sl_status sl__tfrec_frame(const uint8_t *file, size_t size, uint64_t off, const char *path,
                          bool check_data, const uint8_t **data, uint64_t *len, uint64_t *next,
                          sl_err *err) {
    if (off > size || size - off < 12)
        return sl_err_set(err, SL_EFORMAT,
                          "%s at offset %" PRIu64 ": truncated record (%zu bytes left, a record "
                          "header takes 12)",
                          path, off, off > size ? (size_t)0 : size - (size_t)off);
    const uint8_t *h = file + off;
    uint64_t n = sl__get_u64(h);
    uint32_t want = sl__get_u32(h + 8), got = sl__tfrec_mask(sl__tfrec_crc32c(0, h, 8));
    if (want != got)
        return sl_err_set(err, SL_EFORMAT,
                          "%s at offset %" PRIu64
                          ": bad length CRC (stored 0x%08x, computed 0x%08x "
                          "for length %" PRIu64 "): not a TFRecord file, or a corrupt one",
                          path, off, want, got, n);
    uint64_t left = size - off - 12;
    if (n > left || left - n < 4)
        return sl_err_set(err, SL_EFORMAT,
                          "%s at offset %" PRIu64 ": truncated record (length %" PRIu64
                          " and its CRC need %" PRIu64 " bytes, %" PRIu64 " left)",
                          path, off, n, n + 4 > n ? n + 4 : n, left);
    if (check_data) {
        want = sl__get_u32(h + 12 + n);
        got = sl__tfrec_mask(sl__tfrec_crc32c(0, h + 12, (size_t)n));
        if (want != got)
            return sl_err_set(err, SL_EFORMAT,
                              "%s at offset %" PRIu64 ": bad data CRC (stored 0x%08x, computed "
                              "0x%08x over %" PRIu64 " bytes)",
                              path, off, want, got, n);
    }
    if (data) *data = h + 12;
    if (len) *len = n;
    if (next) *next = off + 16 + n;
    return SL_OK;
}

void sl__tfrec_put(sl__pw_buf *b, const void *data, size_t len) {
    uint8_t h[12], t[4];
    sl__put_u64(h, (uint64_t)len);
    sl__put_u32(h + 8, sl__tfrec_mask(sl__tfrec_crc32c(0, h, 8)));
    sl__put_u32(t, sl__tfrec_mask(sl__tfrec_crc32c(0, data, len)));
    sl__protowire_put_raw(b, h, sizeof h);
    sl__protowire_put_raw(b, data, len);
    sl__protowire_put_raw(b, t, sizeof t);
}

/* ---- files ---- */

typedef struct tfile {
    char *path;
    const uint8_t *map;
    size_t size;
} tfile;

typedef struct rec {
    uint64_t off; /* the frame's offset */
    uint64_t len; /* the frame's length (16 + data) */
    int32_t file;
} rec;

struct sl__tfrec {
    int nfiles;
    tfile *files;
    rec *r;
    int64_t n, cap;
};

void sl__tfrec_close(sl__tfrec *t) {
    if (!t) return;
    for (int f = 0; f < t->nfiles; f++) {
        sl__mapfile_unmap(t->files[f].map, t->files[f].size);
        free(t->files[f].path);
    }
    free(t->files);
    free(t->r);
    free(t);
}

static sl_status add_rec(sl__tfrec *t, int f, uint64_t off, uint64_t len, sl_err *err) {
    if (t->n == t->cap) {
        int64_t cap = t->cap ? t->cap * 2 : 1024;
        rec *g = realloc(t->r, (size_t)cap * sizeof *g);
        if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory (%lld records)", (long long)cap);
        t->r = g, t->cap = cap;
    }
    t->r[t->n++] = (rec){off, len, f};
    return SL_OK;
}

/* walks the length fields (their CRCs checked; the data's when read) */
static sl_status scan_file(sl__tfrec *t, int f, sl_err *err) {
    const tfile *tf = &t->files[f];
    for (uint64_t off = 0, next; off < tf->size; off = next) {
        SL_TRY(sl__tfrec_frame(tf->map, tf->size, off, tf->path, false, NULL, NULL, &next, err));
        SL_TRY(add_rec(t, f, off, next - off, err));
    }
    return SL_OK;
}

/* DALI's index file: "offset length" per line (blank lines skipped) */
static sl_status read_index(sl__tfrec *t, int f, const char *ipath, sl_err *err) {
    const uint8_t *map;
    size_t size;
    SL_TRY(sl__mapfile_map(ipath, &map, &size, err));
    const tfile *tf = &t->files[f];
    sl_status st = SL_OK;
    size_t i = 0;
    for (int line = 1; i < size && st == SL_OK; line++) {
        uint64_t v[2] = {0, 0};
        int nv = 0;
        while (i < size && map[i] != '\n') {
            if (map[i] == ' ' || map[i] == '\t' || map[i] == '\r') {
                i++;
                continue;
            }
            if (map[i] < '0' || map[i] > '9' || nv == 2) {
                st = sl_err_set(err, SL_EFORMAT,
                                "%s:%d: an index line is \"offset length\" (two decimal numbers)",
                                ipath, line);
                break;
            }
            uint64_t x = 0;
            while (i < size && map[i] >= '0' && map[i] <= '9') {
                if (x > (UINT64_MAX - 9) / 10) {
                    st = sl_err_set(err, SL_EFORMAT, "%s:%d: number out of range", ipath, line);
                    break;
                }
                x = x * 10 + (uint64_t)(map[i++] - '0');
            }
            v[nv++] = x;
        }
        i++; /* the newline */
        if (st != SL_OK || nv == 0) continue;
        if (nv != 2)
            st = sl_err_set(err, SL_EFORMAT,
                            "%s:%d: an index line is \"offset length\" (two decimal numbers)",
                            ipath, line);
        else if (v[1] < 16 || v[0] > tf->size || v[1] > tf->size - v[0])
            st = sl_err_set(err, SL_EFORMAT,
                            "%s:%d: record at offset %" PRIu64 " of length %" PRIu64
                            " is not inside %s (%zu bytes)",
                            ipath, line, v[0], v[1], tf->path, tf->size);
        else
            st = add_rec(t, f, v[0], v[1], err);
    }
    sl__mapfile_unmap(map, size);
    return st;
}

sl_status sl__tfrec_open(int npaths, const char *const *paths, const char *const *index_paths,
                         sl__tfrec **out, sl_err *err) {
    *out = NULL;
    if (npaths < 1) return sl_err_set(err, SL_EINVAL, "no TFRecord files given");
    sl__tfrec *t = sl__calloc(1, sizeof *t, err);
    if (!t) return SL_ENOMEM;
    t->files = sl__calloc((size_t)npaths, sizeof *t->files, err);
    sl_status st = t->files ? SL_OK : SL_ENOMEM;
    for (int f = 0; f < npaths && st == SL_OK; f++) {
        t->nfiles = f + 1;
        tfile *tf = &t->files[f];
        tf->path = strdup(paths[f]);
        st = tf->path ? sl__mapfile_map(tf->path, &tf->map, &tf->size, err)
                      : sl_err_set(err, SL_ENOMEM, "out of memory");
        int64_t before = t->n;
        if (st == SL_OK)
            st = index_paths ? read_index(t, f, index_paths[f], err) : scan_file(t, f, err);
        if (st == SL_OK && t->n == before)
            st = sl_err_set(err, SL_EINVAL, "%s: no records%s%s", tf->path,
                            index_paths ? " in its index " : "", index_paths ? index_paths[f] : "");
    }
    if (st != SL_OK) {
        sl__tfrec_close(t);
        return st;
    }
    rec *fit = realloc(t->r, (size_t)t->n * sizeof *fit); /* give back the growth's slack */
    if (fit) t->r = fit, t->cap = t->n;
    *out = t;
    return SL_OK;
}

int64_t sl__tfrec_count(const sl__tfrec *t) {
    return t->n;
}
const char *sl__tfrec_path(const sl__tfrec *t, int64_t i) {
    return t->files[t->r[i].file].path;
}
uint64_t sl__tfrec_offset(const sl__tfrec *t, int64_t i) {
    return t->r[i].off;
}
int64_t sl__tfrec_size(const sl__tfrec *t, int64_t i) {
    return (int64_t)t->r[i].len;
}

sl_status sl__tfrec_read(const sl__tfrec *t, int64_t i, const uint8_t **data, uint64_t *len,
                         sl_err *err) {
    const rec *r = &t->r[i];
    const tfile *tf = &t->files[r->file];
    uint64_t next;
    SL_TRY(sl__tfrec_frame(tf->map, tf->size, r->off, tf->path, true, data, len, &next, err));
    if (next - r->off != r->len)
        return sl_err_set(err, SL_EFORMAT,
                          "%s at offset %" PRIu64 ": the record is %" PRIu64
                          " bytes long, its index says %" PRIu64,
                          tf->path, r->off, next - r->off, r->len);
    return SL_OK;
}

/* ---- tf.train.Example ---- */

const char *sl__tfrec_kind_name(int kind) {
    switch (kind) {
    case SL_TFREC_BYTES_LIST:
        return "bytes_list";
    case SL_TFREC_FLOAT_LIST:
        return "float_list";
    case SL_TFREC_INT64_LIST:
        return "int64_list";
    default:
        return "nothing";
    }
}

/* One map entry {key = 1, value = 2: Feature} into its name and value. */
static sl_status entry(const sl__pw_field *fe, const uint8_t **key, size_t *klen,
                       sl__tfrec_value *v, sl_err *err) {
    sl__pw r;
    sl__pw_field f;
    *key = (const uint8_t *)"";
    *klen = 0;
    memset(v, 0, sizeof *v);
    const uint8_t *feat = NULL;
    size_t flen = 0;
    sl__protowire_init(&r, fe->data, fe->len);
    int got;
    while ((got = sl__protowire_next(&r, &f)) > 0) {
        if (f.num == 1 && f.wt == SL_PW_LEN) *key = f.data, *klen = f.len;
        if (f.num == 2 && f.wt == SL_PW_LEN) feat = f.data, flen = f.len;
    }
    if (got < 0) return sl_err_set(err, SL_EFORMAT, "malformed feature map entry");
    if (!feat) return SL_OK; /* an empty Feature: no list */
    sl__protowire_init(&r, feat, flen);
    while ((got = sl__protowire_next(&r, &f)) > 0) /* the oneof: the last one set wins */
        if (f.num >= 1 && f.num <= 3 && f.wt == SL_PW_LEN)
            v->kind = (int)f.num, v->msg = f.data, v->len = f.len;
    if (got < 0) return sl_err_set(err, SL_EFORMAT, "malformed Feature");
    return SL_OK;
}

/* Calls fn for each entry of the Example's feature map. */
static sl_status walk(const uint8_t *ex, size_t len,
                      sl_status (*fn)(const uint8_t *key, size_t klen, const sl__tfrec_value *v,
                                      void *user),
                      void *user, sl_err *err) {
    sl__pw r, rf;
    sl__pw_field f, fe;
    int got;
    sl__protowire_init(&r, ex, len);
    while ((got = sl__protowire_next(&r, &f)) > 0) {
        if (f.num != 1 || f.wt != SL_PW_LEN) continue; /* Example.features */
        sl__protowire_init(&rf, f.data, f.len);
        int gf;
        while ((gf = sl__protowire_next(&rf, &fe)) > 0) {
            if (fe.num != 1 || fe.wt != SL_PW_LEN) continue; /* Features.feature */
            const uint8_t *key;
            size_t klen;
            sl__tfrec_value v;
            SL_TRY(entry(&fe, &key, &klen, &v, err));
            SL_TRY(fn(key, klen, &v, user));
        }
        if (gf < 0) return sl_err_set(err, SL_EFORMAT, "malformed Features message");
    }
    if (got < 0) return sl_err_set(err, SL_EFORMAT, "malformed Example message");
    return SL_OK;
}

typedef struct find_ctx {
    int n;
    const char *const *names;
    sl__tfrec_value *out;
} find_ctx;

static sl_status find_one(const uint8_t *key, size_t klen, const sl__tfrec_value *v, void *user) {
    find_ctx *c = user;
    for (int k = 0; k < c->n; k++)
        if (strlen(c->names[k]) == klen && !memcmp(c->names[k], key, klen)) c->out[k] = *v;
    return SL_OK;
}

sl_status sl__tfrec_parse(const uint8_t *ex, size_t len, int n, const char *const *names,
                          sl__tfrec_value *out, sl_err *err) {
    memset(out, 0, (size_t)n * sizeof *out);
    find_ctx c = {n, names, out};
    return walk(ex, len, find_one, &c, err);
}

typedef struct each_ctx {
    void (*each)(const char *name, size_t nlen, const sl__tfrec_value *v, void *user);
    void *user;
} each_ctx;

static sl_status each_one(const uint8_t *key, size_t klen, const sl__tfrec_value *v, void *user) {
    each_ctx *c = user;
    c->each((const char *)key, klen, v, c->user);
    return SL_OK;
}

sl_status sl__tfrec_each(const uint8_t *ex, size_t len,
                         void (*each)(const char *name, size_t nlen, const sl__tfrec_value *v,
                                      void *user),
                         void *user, sl_err *err) {
    each_ctx c = {each, user};
    return walk(ex, len, each_one, &c, err);
}

/* the values of a numeric list: count, or -1 (up to cap of them into out) */
static int64_t numbers(const sl__tfrec_value *v, int kind, int wire, void *out, int64_t cap) {
    if (v->kind != kind) return -1;
    int64_t total = sl__protowire_repeated(v->msg, v->len, 1, wire, NULL, 0);
    if (total < 0 || !out || cap <= 0) return total;
    uint64_t buf[256], *raw = buf;
    if (total > (int64_t)(sizeof buf / sizeof *buf) && !(raw = malloc((size_t)total * 8)))
        return -1;
    sl__protowire_repeated(v->msg, v->len, 1, wire, raw, total);
    for (int64_t i = 0; i < total && i < cap; i++) {
        if (kind == SL_TFREC_INT64_LIST) {
            ((int64_t *)out)[i] = (int64_t)raw[i];
        } else {
            uint32_t bits = (uint32_t)raw[i];
            memcpy((float *)out + i, &bits, 4);
        }
    }
    if (raw != buf) free(raw);
    return total;
}

int64_t sl__tfrec_int64s(const sl__tfrec_value *v, int64_t *out, int64_t cap) {
    return numbers(v, SL_TFREC_INT64_LIST, SL_PW_VARINT, out, cap);
}
int64_t sl__tfrec_floats(const sl__tfrec_value *v, float *out, int64_t cap) {
    return numbers(v, SL_TFREC_FLOAT_LIST, SL_PW_FIXED32, out, cap);
}

int64_t sl__tfrec_bytes(const sl__tfrec_value *v, const uint8_t **data, size_t *n) {
    if (v->kind != SL_TFREC_BYTES_LIST) return -1;
    sl__pw r;
    sl__pw_field f;
    int64_t count = 0;
    int got;
    sl__protowire_init(&r, v->msg, v->len);
    while ((got = sl__protowire_next(&r, &f)) > 0) {
        if (f.num != 1) continue;
        if (f.wt != SL_PW_LEN) return -1;
        if (count++ == 0) *data = f.data, *n = f.len;
    }
    return got < 0 ? -1 : count;
}

void sl__tfrec_encode_image(sl__pw_buf *b, const void *image, size_t n, int64_t label) {
    sl__pw_buf list = {0}, feat = {0}, ent = {0}, feats = {0};
    /* image/encoded: Feature { bytes_list { value: image } } */
    sl__protowire_put_bytes(&list, 1, image, n);
    sl__protowire_put_bytes(&feat, 1, list.data, list.len);
    sl__protowire_put_bytes(&ent, 1, "image/encoded", 13);
    sl__protowire_put_bytes(&ent, 2, feat.data, feat.len);
    sl__protowire_put_bytes(&feats, 1, ent.data, ent.len);
    /* image/class/label: Feature { int64_list { value: [label] } } (packed, as protobuf writes) */
    list.len = feat.len = ent.len = 0;
    sl__pw_buf packed = {0};
    sl__protowire_put_raw_varint(&packed, (uint64_t)label);
    sl__protowire_put_bytes(&list, 1, packed.data, packed.len);
    sl__protowire_put_bytes(&feat, 3, list.data, list.len);
    sl__protowire_put_bytes(&ent, 1, "image/class/label", 17);
    sl__protowire_put_bytes(&ent, 2, feat.data, feat.len);
    sl__protowire_put_bytes(&feats, 1, ent.data, ent.len);
    sl__protowire_put_bytes(b, 1, feats.data, feats.len);
    b->oom |= list.oom || feat.oom || ent.oom || feats.oom || packed.oom;
    sl__protowire_buf_free(&list);
    sl__protowire_buf_free(&feat);
    sl__protowire_buf_free(&ent);
    sl__protowire_buf_free(&feats);
    sl__protowire_buf_free(&packed);
}
