/* SPDX-License-Identifier: Apache-2.0 */
/* The operators themselves on odd inputs and arguments: one op of the CPU operator table (not the
 * readers, which need files, nor the ops that call Python, nor the conditionals' split and merge,
 * which only the builder places), a few arguments from its own schema, and inputs fed through
 * external sources, in a CPU pipeline of one thread run for one or two batches. Bad input must
 * end in an error (sl_pipeline_errmsg); a batch that comes back must be whole: every output has
 * the batch's samples, each with a sane shape and readable bytes, and a layout of one letter per
 * dim or none (else the harness aborts).
 *
 * The input: the op's name and '\n' (a name the table lacks picks an op by its hash, so that
 * saved inputs keep their op when the table grows), then bytes read in order (0 once used up):
 *   batch    iterations 1 + (b & 1); the batches' sample counts ((b >> 1) & 7) % 5 and
 *            ((b >> 4) & 7) % 5
 *   inputs   min_inputs + b % (span + 1), at most 4; then a feed per input (below)
 *   args     b % 6 arguments, each: the schema entry (b % (entries + 1); the last picks a common
 *            argument or a misspelt name), then a mode byte m: m & 0x80 on a per-sample argument
 *            (or with m & 0x40 on any) feeds it from a source (a feed, below); m & 0x40 alone
 *            gives a value of another type; else m's low bits index the type's value table
 *            (index 0 is a sane value), lists taking a length byte and an item byte each
 *   feed     dtype (b % 16: every dtype, uint8 and float32 twice more), ndim ((b & 7) % 5) and the
 *            layout's kind ((b >> 3) & 3: none, the source's `layout` argument, the source's
 *            layout callback, a callback that changes it in batch 2; b & 0x20: the source's
 *            dtype and ndim arguments given, which an empty batch takes) with a byte choosing it;
 *            per dim an extent byte (0..8; >= 0xf0: up to 64) and whether it varies by sample
 *            (a byte per sample then); the fill (0s, raw bytes, small ints, NaN/inf and
 *            extremes, 1s, a ramp) and 8 bytes it draws on. At most 4096 elements a batch.
 * Arguments that size outputs are the ops' to check: the pipeline's max_batch_bytes (2 MiB here)
 * turns an output that would pass it into an error naming the op, so only memory an op takes
 * besides its outputs can grow past libFuzzer's limit -- a finding. FUZZ_VERBOSE=1 prints what
 * was built and each error. */
#include "core/half.h"
#include "fuzz.h"
#include "sluice/ops.h"
#include "sluice/pipeline.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_IN = 4, MAX_ARGIN = 3, MAX_FEEDS = MAX_IN + MAX_ARGIN, ITERS = 2, B = 4, DIMS = 4 };
enum { BUDGET = 4096, MAX_ARGS = 5, MAX_OUT = 8, MAX_OPS = 256 };

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static unsigned u8(rd *r) {
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

/* one external source: a pipeline input or a per-sample argument */
typedef struct feed {
    sl_dtype dtype;
    int ndim;
    int64_t shape[ITERS][B][DIMS];
    int fill;
    uint8_t pool[8];
    int layout_kind; /* 0 none, 1 the op's argument, 2 callback, 3 callback that changes */
    bool declare;    /* the source's dtype and ndim arguments given (an empty batch has them) */
    char layout[SL_LAYOUT_MAX + 1];
    const struct fcase *c;
} feed;

typedef struct fcase {
    int iters, count[ITERS];
    int nfeeds;
    feed feeds[MAX_FEEDS];
} fcase;

/* ---- the ops ----------------------------------------------------------------------------------
 */

static const char *ops[MAX_OPS];
static int nops;

static void list_ops(void) {
    if (nops) return;
    for (int i = 0; i < sl_op_count() && nops < MAX_OPS; i++) {
        sl_op_info o;
        if (sl_op_get(i, &o, NULL) != SL_OK || !(o.devices & SL_OP_CPU) || o.is_reader) continue;
        if (strstr(o.name, "python_function") || !strcmp(o.name, "external_source") ||
            !strcmp(o.name, "_conditional.split") || !strcmp(o.name, "_conditional.merge"))
            continue;
        ops[nops++] = o.name;
    }
}

static const char *pick_op(rd *r) {
    const uint8_t *nl = memchr(r->p, '\n', r->n < 64 ? r->n : 64);
    size_t len = nl ? (size_t)(nl - r->p) : 0;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) h = (h ^ r->p[i]) * 16777619u;
    const char *found = NULL;
    for (int i = 0; i < nops && !found; i++)
        if (strlen(ops[i]) == len && !memcmp(ops[i], r->p, len)) found = ops[i];
    if (nl) r->p += len + 1, r->n -= len + 1;
    return found ? found : ops[h % (uint32_t)nops];
}

/* ---- feeds ------------------------------------------------------------------------------------
 */

static const sl_dtype dtypes[16] = {SL_DTYPE_U8,  SL_DTYPE_I8,     SL_DTYPE_U16,  SL_DTYPE_I16,
                                    SL_DTYPE_I32, SL_DTYPE_I64,    SL_DTYPE_F16,  SL_DTYPE_BF16,
                                    SL_DTYPE_F32, SL_DTYPE_F64,    SL_DTYPE_BOOL, SL_DTYPE_U32,
                                    SL_DTYPE_U64, SL_DTYPE_INTERP, SL_DTYPE_U8,   SL_DTYPE_F32};

static const char *const layouts[DIMS + 1][6] = {
    {"", "", "", "", "", ""},
    {"C", "F", "W", "t", "X", "H"},
    {"HW", "FC", "tc", "WC", "ft", "NC"},
    {"HWC", "CHW", "FHW", "DHW", "FHC", "HWD"},
    {"FHWC", "DHWC", "FCHW", "NHWC", "CDHW", "HWCF"},
};

static void read_feed(rd *r, feed *f, const fcase *c) {
    unsigned b = u8(r);
    f->dtype = dtypes[b % 16];
    b = u8(r);
    f->ndim = (int)((b & 7) % 5);
    f->layout_kind = (int)((b >> 3) & 3);
    f->declare = (b >> 5) & 1;
    unsigned lb = u8(r);
    if (lb >= 0xf0 && f->ndim) { /* letters of the fuzzer's choosing */
        for (int d = 0; d < f->ndim; d++) f->layout[d] = "HWCDFNXt"[u8(r) % 8];
        f->layout[f->ndim] = '\0';
    } else {
        snprintf(f->layout, sizeof f->layout, "%s", layouts[f->ndim][lb % 6]);
    }
    int64_t base[DIMS];
    int vary[DIMS];
    for (int d = 0; d < f->ndim; d++) {
        b = u8(r);
        base[d] = b >= 0xf0 ? 16 + (b - 0xf0) * 3 : b % 9;
        vary[d] = (b >> 7) & 1 && b < 0xf0;
    }
    for (int it = 0; it < ITERS; it++)
        for (int s = 0; s < B; s++)
            for (int d = 0; d < f->ndim; d++)
                f->shape[it][s][d] = vary[d] && s < c->count[it] ? u8(r) % 9 : base[d];
    /* at most BUDGET elements in a batch: halve the largest extent until it fits */
    for (int it = 0; it < ITERS; it++) {
        for (;;) {
            int64_t total = 0, *big = NULL;
            for (int s = 0; s < B; s++) {
                int64_t n = 1;
                for (int d = 0; d < f->ndim; d++) {
                    n *= f->shape[it][s][d];
                    if (!big || f->shape[it][s][d] > *big) big = &f->shape[it][s][d];
                }
                total += n;
            }
            if (total <= BUDGET || !big) break;
            *big /= 2;
        }
    }
    f->fill = (int)(u8(r) % 6);
    for (int k = 0; k < 8; k++) f->pool[k] = (uint8_t)u8(r);
    f->c = c;
    if (getenv("FUZZ_VERBOSE")) {
        fprintf(stderr, "  feed: %s, layout \"%s\" (kind %d), fill %d, shapes",
                sl_dtype_name(f->dtype), f->layout, f->layout_kind, f->fill);
        for (int s = 0; s < c->count[0]; s++) {
            fprintf(stderr, " (");
            for (int d = 0; d < f->ndim; d++)
                fprintf(stderr, "%s%lld", d ? ", " : "", (long long)f->shape[0][s][d]);
            fprintf(stderr, ")");
        }
        fprintf(stderr, "\n");
    }
}

static const double specials[] = {NAN,          INFINITY,      -INFINITY, -0.0, 1e30,  -1e30,
                                  DBL_MAX,      5e-324,        0.5,       -1.0, 255.0, 65535.0,
                                  2147483648.0, -2147483649.0, 9.3e18,    1.0};

/* v into dst as dt: integers saturate (a NaN is 0), as a user's conversion would */
static void put_value(void *dst, sl_dtype dt, double v) {
#define SAT(T, lo, hi)                                                                             \
    do {                                                                                           \
        T x = v != v ? 0 : v <= (double)(lo) ? (lo) : v >= (double)(hi) ? (hi) : (T)v;             \
        memcpy(dst, &x, sizeof x);                                                                 \
    } while (0)
    switch (dt) {
    case SL_DTYPE_U8:
        SAT(uint8_t, 0, UINT8_MAX);
        break;
    case SL_DTYPE_BOOL:
        SAT(uint8_t, 0, 1);
        break;
    case SL_DTYPE_I8:
        SAT(int8_t, INT8_MIN, INT8_MAX);
        break;
    case SL_DTYPE_U16:
        SAT(uint16_t, 0, UINT16_MAX);
        break;
    case SL_DTYPE_I16:
        SAT(int16_t, INT16_MIN, INT16_MAX);
        break;
    case SL_DTYPE_I32:
    case SL_DTYPE_INTERP:
        SAT(int32_t, INT32_MIN, INT32_MAX);
        break;
    case SL_DTYPE_U32:
        SAT(uint32_t, 0, UINT32_MAX);
        break;
    case SL_DTYPE_I64:
        SAT(int64_t, INT64_MIN, INT64_MAX);
        break;
    case SL_DTYPE_U64:
        SAT(uint64_t, 0, UINT64_MAX);
        break;
    case SL_DTYPE_F16: {
        uint16_t h = sl__f32_to_f16((float)v);
        memcpy(dst, &h, 2);
        break;
    }
    case SL_DTYPE_BF16: {
        uint16_t h = sl__f32_to_bf16((float)v);
        memcpy(dst, &h, 2);
        break;
    }
    case SL_DTYPE_F32: {
        float x = (float)v;
        memcpy(dst, &x, 4);
        break;
    }
    default:
        memcpy(dst, &v, 8);
        break;
    }
#undef SAT
}

static sl_status feed_shape(void *user, const sl_source_info *info, sl_dtype *dtype, int *ndim,
                            int64_t *shape, sl_err *err) {
    const feed *f = user;
    (void)err;
    int it = info->iteration < ITERS ? (int)info->iteration : ITERS - 1;
    *dtype = f->dtype;
    *ndim = f->ndim;
    for (int d = 0; d < f->ndim; d++) shape[d] = f->shape[it][info->idx_in_batch % B][d];
    return SL_OK;
}

static sl_status feed_fill(void *user, const sl_source_info *info, void *dst, size_t nbytes,
                           sl_err *err) {
    const feed *f = user;
    size_t es = sl_dtype_size(f->dtype);
    (void)err;
    if (f->fill == 1) { /* raw bytes */
        for (size_t k = 0; k < nbytes; k++)
            ((uint8_t *)dst)[k] = (uint8_t)(f->pool[k % 8] + 37 * (k / 8) + info->idx_in_batch);
        return SL_OK;
    }
    for (size_t k = 0; k < nbytes / es; k++) {
        double v = 0;
        switch (f->fill) {
        case 2:
            v = (double)((k * (f->pool[0] | 1u) + f->pool[1]) % (f->pool[2] % 16u + 1u));
            break;
        case 3:
            v = specials[(k + f->pool[(k + info->idx_in_batch) % 8]) % 16];
            break;
        case 4:
            v = 1;
            break;
        case 5:
            v = (double)k;
            break;
        default:
            break;
        }
        put_value((uint8_t *)dst + k * es, f->dtype, v);
    }
    return SL_OK;
}

static sl_status feed_count(void *user, int64_t iteration, int max, int *n, sl_err *err) {
    const feed *f = user;
    (void)err;
    *n = f->c->count[iteration < ITERS ? iteration : ITERS - 1];
    if (*n > max) *n = max;
    return SL_OK;
}

static sl_status feed_layout(void *user, int64_t iteration, int output, char *layout, sl_err *err) {
    const feed *f = user;
    (void)output, (void)err;
    snprintf(layout, SL_LAYOUT_MAX + 1, "%s", f->layout_kind == 3 && iteration ? "" : f->layout);
    return SL_OK;
}

/* adds the source of feed k and its external_source op; *node = its output */
static sl_status add_feed(sl_pipeline *p, feed *f, int k, int *node) {
    char name[16], quoted[32];
    snprintf(name, sizeof name, "feed%d", k);
    sl_source src;
    memset(&src, 0, sizeof src);
    src.shape = feed_shape;
    src.fill = feed_fill;
    src.count = feed_count;
    src.user = f;
    if (f->layout_kind >= 2) src.layout = feed_layout;
    sl_status st = sl_pipeline_add_source(p, name, &src);
    if (st != SL_OK) return st;
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "external_source");
    if (!op) return SL_EINVAL;
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    sl_pipeline_op_arg(op, "source", quoted);
    if (f->layout_kind == 1) {
        snprintf(quoted, sizeof quoted, "\"%s\"", f->layout);
        sl_pipeline_op_arg(op, "layout", quoted);
    }
    if (f->declare) {
        snprintf(quoted, sizeof quoted, "types.%s", sl_dtype_name(f->dtype));
        sl_pipeline_op_arg(op, "dtype", quoted);
        snprintf(quoted, sizeof quoted, "%d", f->ndim);
        sl_pipeline_op_arg(op, "ndim", quoted);
    }
    return sl_pipeline_op_end(op, node, 1, NULL);
}

/* ---- argument values, by the schema's type ----------------------------------------------------
 */

static const char *const ints[] = {"1",
                                   "0",
                                   "2",
                                   "3",
                                   "-1",
                                   "4",
                                   "8",
                                   "16",
                                   "255",
                                   "256",
                                   "-2",
                                   "7",
                                   "65536",
                                   "2147483647",
                                   "-2147483648",
                                   "9223372036854775807",
                                   "-9223372036854775808",
                                   "2147483648",
                                   "100",
                                   "1000000",
                                   "5",
                                   "-100",
                                   "4294967296",
                                   "6",
                                   "1099511627776",
                                   "-3",
                                   "31",
                                   "64",
                                   "10",
                                   "12",
                                   "-65536",
                                   "33"};
static const char *const floats[] = {
    "1.0",   "0.5",   "0.0",      "2.0",    "-1.0",    "0.25",   "3.0",
    "100.0", "255.0", "-0.0",     "1e-300", "1e300",   "-1e300", "1.7976931348623157e308",
    "1e9",   "-1e9",  "0.001",    "45.0",   "10.0",    "-0.5",   "1e-8",
    "90.0",  "1.5",   "4.9e-324", "3.4e38", "-3.4e39", "7.0",    "0.999",
    "1e20",  "-45.0", "2",        "-7"};
static const char *const strs[] = {"\"HWC\"",    "\"\"",
                                   "\"CHW\"",    "\"HW\"",
                                   "\"W\"",      "\"C\"",
                                   "\"xy\"",     "\"xyz\"",
                                   "\"FHWC\"",   "\"DHWC\"",
                                   "\"HH\"",     "\"ABCDEFGHIJ\"",
                                   "\"pad\"",    "\"trim_to_shape\"",
                                   "\"error\"",  "\"F\"",
                                   "\"WH\"",     "\"yx\"",
                                   "\"linear\"", "\"x\"",
                                   "\"NHWC\"",   "\"CF\"",
                                   "\"hann\"",   "\"reflect\"",
                                   "\"\\\\\"",   "\"HWCHWCHWCHWC\"",
                                   "\"D\"",      "\"FCHW\"",
                                   "\"z\"",      "\"t\"",
                                   "\"HWD\"",    "\"constant\""};
static const char *const dtype_names[] = {
    "types.FLOAT",    "types.UINT8",       "types.INT32",  "types.INT64",
    "types.FLOAT16",  "types.FLOAT64",     "types.BOOL",   "types.INT8",
    "types.UINT16",   "types.INT16",       "types.UINT32", "types.UINT64",
    "types.BFLOAT16", "types.INTERP_TYPE", "types.STRING", "types.NOPE"};
/* another type's value, for an argument of any type */
static const char *const others[] = {"None",  "\"x\"",         "[]",     "[1, 2]",     "True", "1",
                                     "2.5",   "types.FLOAT",   "[[1]]",  "[\"a\", 1]", "RGB",  "-1",
                                     "1e300", "[-1e300, 3.0]", "9.3e18", "[None]"};

/* writes value text for a into buf (lists of up to 9 items) */
static void arg_text(rd *r, const sl_op_arg_info *a, unsigned m, char *buf, size_t size) {
    if (m & 0x40) {
        snprintf(buf, size, "%s", others[(m & 0x3f) % 16]);
        return;
    }
    unsigned i = m & 0x1f;
    const char *t = a->type;
    if (!strcmp(t, "bool")) {
        snprintf(buf, size, "%s", i % 3 == 2 ? "2" : i % 2 ? "False" : "True");
    } else if (!strcmp(t, "int")) {
        snprintf(buf, size, "%s", ints[i]);
    } else if (!strcmp(t, "float")) {
        snprintf(buf, size, "%s", floats[i]);
    } else if (!strcmp(t, "str")) {
        snprintf(buf, size, "%s", strs[i]);
    } else if (!strcmp(t, "dtype")) {
        snprintf(buf, size, "%s", dtype_names[i % 16]);
    } else if (!strcmp(t, "enum") && a->choices) {
        /* a choice (bare, as types.RGB is; or quoted), else a name that is none of them */
        unsigned nc = 1;
        for (const char *q = a->choices; *q; q++) nc += *q == '|';
        const char *c = a->choices;
        for (unsigned k = 0; k < (i >> 1) % (nc + 1) && c; k++)
            c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
        if (!c)
            snprintf(buf, size, "not_a_choice");
        else
            snprintf(buf, size, i & 1 ? "\"%.*s\"" : "%.*s", (int)strcspn(c, "|"), c);
    } else if (!strcmp(t, "ints") || !strcmp(t, "floats") || !strcmp(t, "strs")) {
        const char *const *tab = t[0] == 'i' ? ints : t[0] == 'f' ? floats : strs;
        unsigned len = u8(r) % 10;
        if (i == 31) { /* a scalar for a list */
            snprintf(buf, size, "%s", tab[len]);
            return;
        }
        size_t n = (size_t)snprintf(buf, size, "[");
        for (unsigned k = 0; k < len && n < size; k++)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", k ? ", " : "", tab[u8(r) % 32]);
        if (n < size) snprintf(buf + n, size - n, "]");
    } else {
        snprintf(buf, size, "None");
    }
}

static const char *const common[] = {"seed", "preserve", "bytes_per_sample_hint", "nam", "device"};
static const char *const common_vals[] = {"0",       "True", "[0]",     "1",
                                          "\"cpu\"", "-5",   "\"gpu\"", "9223372036854775807"};

/* ---- one case ---------------------------------------------------------------------------------
 */

static bool verbose;

static void check_batch(const sl_batch *b, int nout, const char *opname) {
    int n = sl_batch_size(b);
    for (int o = 0; o < nout; o++) {
        const sl_tlist *l = sl_batch_output(b, o);
        if (!l || l->count != n || l->ndim < 0 || l->ndim > SL_MAX_DIMS ||
            (unsigned)l->dtype >= SL_DTYPE_COUNT) {
            fprintf(stderr, "fuzz_ops: %s: output %d is not a batch of %d samples\n", opname, o, n);
            abort();
        }
        size_t lay = strnlen(l->layout, sizeof l->layout);
        if (lay == sizeof l->layout || (lay && lay != (size_t)l->ndim)) {
            fprintf(stderr, "fuzz_ops: %s: output %d has layout \"%.*s\" for %d dims\n", opname, o,
                    (int)lay, l->layout, l->ndim);
            abort();
        }
        for (int i = 0; i < n; i++) {
            const int64_t *sh = sl_tlist_shape(l, i);
            for (int d = 0; d < l->ndim; d++)
                if (sh[d] < 0) {
                    fprintf(stderr, "fuzz_ops: %s: output %d sample %d extent %lld\n", opname, o, i,
                            (long long)sh[d]);
                    abort();
                }
            size_t nb = sl_tlist_sample_nbytes(l, i);
            if (nb == SIZE_MAX || (nb && !l->data[i])) {
                fprintf(stderr, "fuzz_ops: %s: output %d sample %d has no bytes\n", opname, o, i);
                abort();
            }
            volatile uint8_t sum = 0; /* every byte read: the sanitizers see where it lies */
            for (size_t k = 0; k < nb; k++) sum ^= ((const uint8_t *)l->data[i])[k];
            (void)sum;
        }
    }
}

static void run_case(rd *r) {
    static fcase c;
    memset(&c, 0, sizeof c);
    const char *opname = pick_op(r);
    if (verbose) fprintf(stderr, "op %s\n", opname);
    sl_op_info info;
    if (sl_op_find(opname, &info, NULL) != SL_OK) return;
    unsigned b = u8(r);
    c.iters = 1 + (int)(b & 1);
    c.count[0] = (int)(((b >> 1) & 7) % 5);
    c.count[1] = (int)(((b >> 4) & 7) % 5);
    int maxin = info.max_inputs < info.min_inputs + 2 ? info.max_inputs : info.min_inputs + 2;
    if (maxin > MAX_IN) maxin = MAX_IN;
    int nin = info.min_inputs + (int)(u8(r) % (unsigned)(maxin - info.min_inputs + 1));
    if (nin > MAX_IN) nin = MAX_IN;
    for (int k = 0; k < nin; k++) read_feed(r, &c.feeds[c.nfeeds++], &c);

    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = B;
    cfg.num_threads = 1;
    cfg.prefetch_cpu = cfg.prefetch_gpu = 1;
    cfg.seed = 1234;
    cfg.max_batch_bytes = (size_t)2 << 20;
    sl_pipeline *p;
    sl_err err;
    if (sl_pipeline_create(&cfg, &p, &err) != SL_OK) return;
    int in_nodes[MAX_IN], outs[MAX_OUT], nout = 0;
    sl_status st = SL_OK;
    for (int k = 0; k < nin && st == SL_OK; k++) st = add_feed(p, &c.feeds[k], k, &in_nodes[k]);
    sl_pipeline_op *op = st == SL_OK ? sl_pipeline_op_begin(p, opname) : NULL;
    if (op) {
        for (int k = 0; k < nin; k++) sl_pipeline_op_input(op, in_nodes[k]);
        sl_pipeline_op_device(op, "cpu");
        int nargs = (int)(u8(r) % (MAX_ARGS + 1));
        for (int a = 0; a < nargs; a++) {
            unsigned which = u8(r) % (unsigned)(info.num_args + 1), m = u8(r);
            char buf[512];
            if ((int)which == info.num_args) {
                sl_pipeline_op_arg(op, common[m % 5], common_vals[(m >> 3) % 8]);
                continue;
            }
            sl_op_arg_info ai;
            if (sl_op_get_arg(opname, (int)which, &ai, NULL) != SL_OK) continue;
            if ((m & 0x80) && (ai.per_sample || (m & 0x40)) && c.nfeeds < MAX_FEEDS) {
                feed *f = &c.feeds[c.nfeeds];
                read_feed(r, f, &c);
                int node;
                if (add_feed(p, f, c.nfeeds++, &node) == SL_OK)
                    sl_pipeline_op_arg_node(op, ai.name, node);
                continue;
            }
            arg_text(r, &ai, m, buf, sizeof buf);
            if (verbose) fprintf(stderr, "  %s=%s\n", ai.name, buf);
            sl_pipeline_op_arg(op, ai.name, buf);
        }
        st = sl_pipeline_op_end(op, outs, MAX_OUT, &nout);
    } else {
        st = SL_EINVAL;
    }
    if (nout > MAX_OUT) nout = MAX_OUT;
    if (st == SL_OK) st = sl_pipeline_set_outputs(p, nout, outs, NULL);
    if (st == SL_OK) st = sl_pipeline_build(p);
    for (int it = 0; it < c.iters && st == SL_OK; it++) {
        sl_batch *bt;
        st = sl_pipeline_next(p, &bt);
        if (st != SL_OK) break;
        check_batch(bt, nout, opname);
        sl_pipeline_release(p, bt);
    }
    if (verbose)
        fprintf(stderr, "%s (%d inputs): %s\n", opname, nin,
                st == SL_OK ? "ran" : sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    list_ops();
    verbose = getenv("FUZZ_VERBOSE") != NULL;
    rd r = {data, size};
    run_case(&r);
    return 0;
}
