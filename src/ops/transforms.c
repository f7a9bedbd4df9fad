/* SPDX-License-Identifier: Apache-2.0 */
/* transforms.translation, scale, rotation, shear, crop and combine (DALI's fn.transforms.*): the
 * affine matrices warp_affine and coord_transform take, one per sample, (ndim, ndim + 1) float32
 * (2 x 3 in 2D, 3 x 4 in 3D), built in double. The dimensionality follows the arguments' lengths,
 * 1 to 6 as DALI's (rotation: 2D, 3D with `axis`; shear 2D or 3D). Given an input transform, the
 * new one is applied after it (T @ in), or before it with reverse_order (in @ T); combine chains
 * its inputs, the first applied first. Angles are in degrees; `center` makes scale, rotation and
 * shear act about that point. crop maps the box [from_start, from_end] onto [to_start, to_end]
 * (with `absolute`, a start above its end is swapped first). Every argument may be per sample, and
 * per frame (fn.per_frame): then each sample is a sequence of matrices, (F, ndim, ndim + 1) with
 * layout F**, one per frame (operator/sequence.h; an input transform that is a sequence gives one
 * too). Also coord_transform: points
 * (..., D) mapped by M (or MT = [M | T]) and T, out = M x + T, as float32 or `dtype`. */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ORDER_ARG                                                                                  \
    {                                                                                              \
        "reverse_order", SL_ARG_BOOL, "False",                                                     \
            "apply this transform before the input one (in @ T), not after", 0, NULL               \
    }

static const sl__arg_schema translation_args[] = {
    {"offset", SL_ARG_FLOATS, NULL, "the translation vector",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    ORDER_ARG,
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema scale_args[] = {
    {"scale", SL_ARG_FLOATS, NULL, "the scale factor of each dimension",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"center", SL_ARG_FLOATS, "None", "the point that stays (default: the origin)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"ndim", SL_ARG_INT, "None", "dimensions, when scale is one value for all", 0, NULL},
    ORDER_ARG,
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema rotation_args[] = {
    {"angle", SL_ARG_FLOAT, NULL, "the angle, in degrees",
     SL_ARGF_REQUIRED | SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"axis", SL_ARG_FLOATS, "None", "the axis of a 3D rotation",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"center", SL_ARG_FLOATS, "None", "the point that stays (default: the origin)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    ORDER_ARG,
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema shear_args[] = {
    {"shear", SL_ARG_FLOATS, "None", "shear factors: [sx, sy] in 2D, 6 values in 3D",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"angles", SL_ARG_FLOATS, "None", "shear angles in degrees (factors tan(angle))",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"center", SL_ARG_FLOATS, "None", "the point that stays (default: the origin)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    ORDER_ARG,
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema crop_args[] = {
    {"from_start", SL_ARG_FLOATS, "[0.0]", "the source box's start",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"from_end", SL_ARG_FLOATS, "[1.0]", "the source box's end",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"to_start", SL_ARG_FLOATS, "[0.0]", "the destination box's start",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"to_end", SL_ARG_FLOATS, "[1.0]", "the destination box's end",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"absolute", SL_ARG_BOOL, "False", "swap a start above its end", 0, NULL},
    ORDER_ARG,
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema combine_args[] = {
    ORDER_ARG,
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { T_TRANSLATION, T_SCALE, T_ROTATION, T_SHEAR, T_CROP, T_COMBINE };
static const char *const tnames[] = {"transforms.translation", "transforms.scale",
                                     "transforms.rotation",    "transforms.shear",
                                     "transforms.crop",        "transforms.combine"};

typedef struct tr_state {
    int kind;
    const char *name;
    bool reverse, absolute;
    int ndim_arg;
    /* per argument: literal values or a node */
    int nargs;
    const char *argn[4];
    int node[4];
    int nlit[4];
    double lit[4][16];
    bool given[4];
} tr_state;

static sl_status tr_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err,
                           int kind) {
    (void)init;
    tr_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->kind = kind;
    s->name = tnames[kind];
    s->reverse = sl__args_bool(a, "reverse_order");
    static const char *const argsets[][4] = {{"offset", NULL, NULL, NULL},
                                             {"scale", "center", NULL, NULL},
                                             {"angle", "axis", "center", NULL},
                                             {"shear", "angles", "center", NULL},
                                             {"from_start", "from_end", "to_start", "to_end"},
                                             {NULL, NULL, NULL, NULL}};
    sl_status st = SL_OK;
    for (int k = 0; k < 4 && argsets[kind][k]; k++) {
        const char *n = argsets[kind][k];
        s->argn[k] = n;
        s->nargs = k + 1;
        s->node[k] = sl__args_node(a, n);
        const sl__val *v = sl__args_get(a, n);
        s->given[k] = s->node[k] >= 0 || v->kind != SL_VAL_NONE;
        if (s->node[k] < 0 && v->kind != SL_VAL_NONE) {
            if (!strcmp(n, "angle")) {
                s->nlit[k] = 1;
                s->lit[k][0] = sl__args_float(a, n);
            } else {
                const double *f;
                int m = sl__args_floats(a, n, &f);
                if (m > 16) {
                    st = sl_err_set(err, SL_EINVAL, "%s: %s has %d values", s->name, n, m);
                    break;
                }
                s->nlit[k] = m;
                memcpy(s->lit[k], f, (size_t)m * sizeof *f);
            }
        }
    }
    if (kind == T_SCALE)
        s->ndim_arg =
            sl__args_get(a, "ndim")->kind == SL_VAL_NONE ? 0 : (int)sl__args_int(a, "ndim");
    if (kind == T_CROP) s->absolute = sl__args_bool(a, "absolute");
    if (st == SL_OK && kind == T_SHEAR && s->given[0] == s->given[1])
        st = sl_err_set(err, SL_EINVAL, "transforms.shear: give shear or angles (one of them)");
    if (st == SL_OK && kind == T_SCALE && s->ndim_arg != 0 && (s->ndim_arg < 1 || s->ndim_arg > 6))
        st = sl_err_set(err, SL_EINVAL, "transforms.scale: ndim %d (1 to 6)", s->ndim_arg);
    if (st != SL_OK) {
        free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

#define TR_CREATE(fn, kind)                                                                        \
    static sl_status fn(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {            \
        return tr_create(a, i, o, e, kind);                                                        \
    }
TR_CREATE(translation_create, T_TRANSLATION)
TR_CREATE(scale_create, T_SCALE)
TR_CREATE(rotation_create, T_ROTATION)
TR_CREATE(shear_create, T_SHEAR)
TR_CREATE(crop_create, T_CROP)
TR_CREATE(combine_create, T_COMBINE)

/* values of argument k for sample i (at most 16); their count, -1 when not given */
static int arg_values(const tr_state *s, const sl__op_io *io, int k, int i, double *v) {
    if (!s->given[k]) return -1;
    if (s->node[k] >= 0) {
        int n = sl__argin_values(io, s->node[k], i, v, 16);
        return n > 16 ? 17 : n;
    }
    memcpy(v, s->lit[k], (size_t)s->nlit[k] * sizeof *v);
    return s->nlit[k];
}

#define TMAX 6 /* dimensions of a transform (rotation and shear: 2 or 3) */
typedef double mat4[TMAX + 1][TMAX + 1]; /* homogeneous, (nd + 1) x (nd + 1) used */

static void identity(mat4 m) {
    memset(m, 0, sizeof(mat4));
    for (int k = 0; k <= TMAX; k++) m[k][k] = 1;
}

static void mul(mat4 out, mat4 a, mat4 b, int nd) { /* out = a @ b */
    mat4 r;
    memset(r, 0, sizeof r);
    for (int i = 0; i <= nd; i++)
        for (int j = 0; j <= nd; j++)
            for (int k = 0; k <= nd; k++) r[i][j] += a[i][k] * b[k][j];
    memcpy(out, r, sizeof r);
}

/* m about center c: T(c) m T(-c) */
static void about(mat4 m, const double *c, int nd) {
    mat4 t, u;
    identity(t);
    identity(u);
    for (int k = 0; k < nd; k++) t[k][nd] = c[k], u[k][nd] = -c[k];
    mul(m, t, m, nd);
    mul(m, m, u, nd);
}

/* this op's matrix for sample i (its nd in *ndp) */
static sl_status build(const tr_state *s, const sl__op_io *io, int i, mat4 m, int *ndp,
                       sl_err *err) {
    double v[4][17];
    int n[4];
    for (int k = 0; k < s->nargs; k++) n[k] = arg_values(s, io, k, i, v[k]);
    identity(m);
    int nd = 2;
#define FAIL(...) return sl__op_fail(err, SL_EINVAL, io, i, s->name, __VA_ARGS__)
#define DIMS_OK(cnt, what)                                                                         \
    if ((cnt) < 1 || (cnt) > TMAX) FAIL("%s has %d values (1 to %d dimensions)", what, cnt, TMAX)
    switch (s->kind) {
    case T_TRANSLATION:
        DIMS_OK(n[0], "offset");
        nd = n[0];
        for (int k = 0; k < nd; k++) m[k][nd] = v[0][k];
        break;
    case T_SCALE:
        nd = n[0] == 1 && s->ndim_arg ? s->ndim_arg : n[0];
        DIMS_OK(nd, "scale");
        for (int k = 0; k < nd; k++) m[k][k] = v[0][n[0] == 1 ? 0 : k];
        break;
    case T_ROTATION: {
        if (n[0] != 1) FAIL("angle must be one value per sample");
        double a = v[0][0] * 3.14159265358979323846 / 180;
        if (n[1] < 0) {
            m[0][0] = cos(a), m[0][1] = -sin(a);
            m[1][0] = sin(a), m[1][1] = cos(a);
        } else {
            if (n[1] != 3) FAIL("axis has %d values (3)", n[1]);
            nd = 3;
            double x = v[1][0], y = v[1][1], z = v[1][2], l = sqrt(x * x + y * y + z * z);
            if (!(l > 0)) FAIL("the axis is zero");
            x /= l, y /= l, z /= l;
            double c = cos(a), sn = sin(a), t = 1 - c;
            double r[3][3] = {{t * x * x + c, t * x * y - sn * z, t * x * z + sn * y},
                              {t * x * y + sn * z, t * y * y + c, t * y * z - sn * x},
                              {t * x * z - sn * y, t * y * z + sn * x, t * z * z + c}};
            for (int p = 0; p < 3; p++)
                for (int q = 0; q < 3; q++) m[p][q] = r[p][q];
        }
        break;
    }
    case T_SHEAR: {
        int c = n[0] >= 0 ? n[0] : n[1];
        const double *f = n[0] >= 0 ? v[0] : v[1];
        double sh[6];
        if (c != 2 && c != 6)
            FAIL("%s has %d values (2 in 2D, 6 in 3D)", n[0] >= 0 ? "shear" : "angles", c);
        for (int k = 0; k < c; k++) {
            if (n[0] < 0 && !(fabs(f[k]) < 90))
                FAIL("shear angle %g is not within (-90, 90)", f[k]);
            sh[k] = n[0] >= 0 ? f[k] : tan(f[k] * 3.14159265358979323846 / 180);
        }
        if (c == 2) {
            m[0][1] = sh[0], m[1][0] = sh[1];
        } else {
            nd = 3;
            m[0][1] = sh[0], m[0][2] = sh[1], m[1][0] = sh[2];
            m[1][2] = sh[3], m[2][0] = sh[4], m[2][1] = sh[5];
        }
        break;
    }
    case T_CROP: {
        nd = 1; /* DALI's: one value each (the defaults) is a 1-D box */
        for (int k = 0; k < 4; k++)
            if (n[k] > 1) nd = n[k];
        DIMS_OK(nd, "the box");
        for (int k = 0; k < 4; k++)
            if (n[k] != 1 && n[k] != nd)
                FAIL("%s has %d values for %d dimensions", s->argn[k], n[k], nd);
        for (int d = 0; d < nd; d++) {
            double fs = v[0][n[0] == 1 ? 0 : d], fe = v[1][n[1] == 1 ? 0 : d];
            double ts = v[2][n[2] == 1 ? 0 : d], te = v[3][n[3] == 1 ? 0 : d];
            if (s->absolute) {
                if (fs > fe) {
                    double t = fs;
                    fs = fe;
                    fe = t;
                }
                if (ts > te) {
                    double t = ts;
                    ts = te;
                    te = t;
                }
            }
            if (fe == fs) FAIL("the source box is empty along dimension %d", d);
            double k = (te - ts) / (fe - fs);
            m[d][d] = k;
            m[d][nd] = ts - fs * k;
        }
        break;
    }
    default:
        break;
    }
    if (s->kind == T_SCALE || s->kind == T_ROTATION || s->kind == T_SHEAR) {
        int ci = s->kind == T_SCALE ? 1 : 2;
        if (n[ci] >= 0) {
            if (n[ci] != nd) FAIL("center has %d values for %d dimensions", n[ci], nd);
            about(m, v[ci], nd);
        }
    }
#undef DIMS_OK
#undef FAIL
    *ndp = nd;
    return SL_OK;
}

/* the input transform of sample i (float, (nd, nd + 1)) as a homogeneous matrix */
static sl_status input_matrix(const tr_state *s, const sl__op_io *io, int j, int i, int nd, mat4 m,
                              sl_err *err) {
    const sl_tlist *l = io->in[j];
    const int64_t *sh = sl_tlist_shape(l, i);
    if (l->device.kind != SL_DEVICE_CPU)
        return sl_err_set(err, SL_EINVAL, "%s: input %d must be on the CPU", s->name, j);
    if (l->ndim != 2 || sh[0] != nd || sh[1] != nd + 1)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name, "input %d is not a %d x %d transform", j,
                           nd, nd + 1);
    identity(m);
    for (int p = 0; p < nd; p++)
        for (int q = 0; q <= nd; q++)
            m[p][q] = sl__dtype_conv_load(l->data[i], l->dtype, p * (nd + 1) + q);
    return SL_OK;
}

static sl_status tr_setup(void *state, sl__op_io *io, sl_err *err) {
    tr_state *s = state;
    if (s->kind == T_COMBINE && io->num_inputs < 2)
        return sl_err_set(err, SL_EINVAL, "transforms.combine: give two transforms or more");
    int nd0 = 0;
    mat4 *mats = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof *mats, err);
    if (!mats) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        int nd = 2;
        mat4 m;
        if (s->kind == T_COMBINE) {
            const sl_tlist *l = io->in[0];
            nd = l->ndim == 2 ? (int)sl_tlist_shape(l, i)[0] : 0;
            if (nd < 1 || nd > TMAX)
                st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                 "input 0 is no transform of 1 to %d dimensions", TMAX);
            if (st == SL_OK) st = input_matrix(s, io, 0, i, nd, m, err);
            for (int j = 1; j < io->num_inputs && st == SL_OK; j++) {
                mat4 t;
                st = input_matrix(s, io, j, i, nd, t, err);
                if (st == SL_OK) {
                    if (s->reverse)
                        mul(m, m, t, nd);
                    else
                        mul(m, t, m, nd);
                }
            }
        } else {
            st = build(s, io, i, m, &nd, err);
            if (st == SL_OK && io->num_inputs == 1) {
                mat4 t;
                st = input_matrix(s, io, 0, i, nd, t, err);
                if (st == SL_OK) {
                    if (s->reverse)
                        mul(m, t, m, nd);
                    else
                        mul(m, m, t, nd);
                }
            }
        }
        if (st == SL_OK && i > 0 && nd != nd0)
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "a %dD transform in a batch of %dD ones", nd, nd0);
        nd0 = nd;
        if (st == SL_OK) memcpy(mats[i], m, sizeof(mat4));
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, SL_DTYPE_F32, 2, sl_cpu(), err);
    int64_t *shapes = NULL;
    if (st == SL_OK) {
        shapes = sl__malloc((size_t)(io->batch ? io->batch : 1) * 2 * sizeof *shapes, err);
        if (!shapes) st = SL_ENOMEM;
    }
    for (int i = 0; st == SL_OK && i < io->batch; i++)
        shapes[2 * i] = nd0, shapes[2 * i + 1] = nd0 + 1;
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    for (int i = 0; st == SL_OK && i < io->batch; i++)
        for (int p = 0; p < nd0; p++)
            for (int q = 0; q <= nd0; q++)
                ((float *)out->data[i])[p * (nd0 + 1) + q] = (float)mats[i][p][q];
    free(shapes);
    free(mats);
    if (st == SL_OK) {
        static const int none[1] = {0};
        io->run_index = none;
        io->run_count = 0;
    }
    return st;
}

/* In the transforms above, "after the input" is T @ in; for reverse_order in @ T. combine's
 * inputs: the first applied first, so the result is in_n @ ... @ in_1 (reversed: in_1 @ ...). */

static sl_status tr_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)state, (void)io, (void)i, (void)worker, (void)err;
    return SL_OK; /* setup built every matrix */
}

#define TR_OP(var, nm, al, nin_min, nin_max, schema, create_, doc_)                                \
    const sl__op_def var = {                                                                       \
        .name = nm,                                                                                \
        .aliases = al,                                                                             \
        .doc = doc_,                                                                               \
        .min_inputs = nin_min,                                                                     \
        .max_inputs = nin_max,                                                                     \
        .args = schema,                                                                            \
        .devices = SL_OPDEV_CPU,                                                                   \
        .flags = SL_OPF_SEQUENCE | SL_OPF_ARG_FRAMES,                                              \
        .create = create_,                                                                         \
        .setup = tr_setup,                                                                         \
        .run_cpu = tr_run_cpu,                                                                     \
        .destroy = free,                                                                           \
    }

TR_OP(sl__tr_translation_op, "transforms.translation", "transform_translation", 0, 1,
      translation_args, translation_create,
      "A translation matrix (applied after an input transform, if given).");
TR_OP(sl__tr_scale_op, "transforms.scale", NULL, 0, 1, scale_args, scale_create,
      "A scale matrix, about center (applied after an input transform, if given).");
TR_OP(sl__tr_rotation_op, "transforms.rotation", NULL, 0, 1, rotation_args, rotation_create,
      "A rotation matrix, degrees, about center (3D: about axis).");
TR_OP(sl__tr_shear_op, "transforms.shear", NULL, 0, 1, shear_args, shear_create,
      "A shear matrix, from factors or angles, about center.");
TR_OP(sl__tr_crop_op, "transforms.crop", NULL, 0, 1, crop_args, crop_create,
      "The matrix mapping the box [from_start, from_end] onto [to_start, to_end].");
TR_OP(sl__tr_combine_op, "transforms.combine", NULL, 2, INT_MAX, combine_args, combine_create,
      "Chains affine transforms, the first input applied first.");

/* ---- coord_transform ------------------------------------------------------------------------ */

static const sl__arg_schema ct_args[] = {
    {"M", SL_ARG_FLOATS, "None", "the matrix (row-major; one value: a scaled identity)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"T", SL_ARG_FLOATS, "None", "the translation (one value: the same for every coordinate)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"MT", SL_ARG_FLOATS, "None",
     "matrix and translation together, [M | T] (one value: that value as M, no T)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct ct_state {
    int node[3];
    int nlit[3];
    double *lit[3];
    bool given[3];
    sl_dtype dtype;
    /* per sample of the current batch: rows (output dims) and the (rows, d + 1) matrix */
    int *rows;
    double **mt;
    int cap;
} ct_state;

static const char *const ct_names[3] = {"M", "T", "MT"};

static void ct_destroy(void *state) {
    ct_state *s = state;
    if (!s) return;
    for (int k = 0; k < 3; k++) free(s->lit[k]);
    for (int i = 0; i < s->cap; i++) free(s->mt[i]);
    free(s->mt);
    free(s->rows);
    free(s);
}

static sl_status ct_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    ct_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->dtype = sl__args_dtype(a, "dtype");
    sl_status st = SL_OK;
    for (int k = 0; k < 3 && st == SL_OK; k++) {
        s->node[k] = sl__args_node(a, ct_names[k]);
        s->given[k] = s->node[k] >= 0 || sl__args_get(a, ct_names[k])->kind != SL_VAL_NONE;
        if (s->given[k] && s->node[k] < 0) {
            const double *v;
            s->nlit[k] = sl__args_floats(a, ct_names[k], &v);
            s->lit[k] = sl__malloc((size_t)(s->nlit[k] ? s->nlit[k] : 1) * sizeof *v, err);
            if (!s->lit[k])
                st = SL_ENOMEM;
            else
                memcpy(s->lit[k], v, (size_t)s->nlit[k] * sizeof *v);
        }
    }
    if (st == SL_OK && s->given[2] && (s->given[0] || s->given[1]))
        st = sl_err_set(err, SL_EINVAL, "coord_transform: give MT, or M and T, not both");
    if (st != SL_OK) {
        ct_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* argument k's values for sample i into a malloc'd array; count in *n (-1: not given) */
static sl_status ct_values(ct_state *s, const sl__op_io *io, int k, int i, double **v, int *n,
                           sl_err *err) {
    *v = NULL;
    *n = -1;
    if (!s->given[k]) return SL_OK;
    int m = s->node[k] >= 0 ? sl__argin_values(io, s->node[k], i, NULL, 0) : s->nlit[k];
    if (m < 0)
        return sl__op_fail(err, SL_EINVAL, io, i, "coord_transform", "%s is unreadable",
                           ct_names[k]);
    *v = sl__malloc((size_t)(m ? m : 1) * sizeof **v, err);
    if (!*v) return SL_ENOMEM;
    if (s->node[k] >= 0)
        sl__argin_values(io, s->node[k], i, *v, m);
    else
        memcpy(*v, s->lit[k], (size_t)m * sizeof **v);
    *n = m;
    return SL_OK;
}

static sl_status ct_setup(void *state, sl__op_io *io, sl_err *err) {
    ct_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim < 1)
        return sl_err_set(err, SL_EINVAL,
                          "coord_transform: the input is 0-d (points are (..., D) arrays)");
    if (io->batch > s->cap) {
        int *r = realloc(s->rows, (size_t)io->batch * sizeof *r);
        double **m = r ? realloc(s->mt, (size_t)io->batch * sizeof *m) : NULL;
        if (r) s->rows = r;
        if (!m) return sl_err_set(err, SL_ENOMEM, "coord_transform: out of memory");
        s->mt = m;
        for (int i = s->cap; i < io->batch; i++) s->mt[i] = NULL;
        s->cap = io->batch;
    }
    int64_t *shapes =
        sl__malloc((size_t)(io->batch ? io->batch : 1) * (size_t)in->ndim * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        int64_t d = sh[in->ndim - 1];
        double *v[3] = {NULL, NULL, NULL};
        int n[3];
        for (int k = 0; k < 3 && st == SL_OK; k++) st = ct_values(s, io, k, i, &v[k], &n[k], err);
        int rows = (int)d;
        if (st == SL_OK) {
            if (n[0] == 0 || n[1] == 0 || n[2] == 0) {
                st = SL_EINVAL; /* an empty list is no matrix (nor a translation) */
            } else if (n[2] == 1) {
                rows = (int)d; /* DALI: a scalar MT is that scalar as M, with no T */
            } else if (n[2] >= 0) {
                if (d + 1 < 1 || n[2] % (d + 1))
                    st = SL_EINVAL;
                else
                    rows = (int)(n[2] / (d + 1));
            } else if (n[0] > 1) {
                if (d < 1 || n[0] % d)
                    st = SL_EINVAL;
                else
                    rows = (int)(n[0] / d);
            }
            if (st == SL_OK && n[1] > 1 && n[1] != rows) st = SL_EINVAL;
            if (st == SL_OK && (rows < 0 || rows > 64 || d > 64)) st = SL_EINVAL;
            if (st != SL_OK) { /* the arguments given, with their counts */
                char got[96] = "";
                for (int k = 0; k < 3; k++)
                    if (n[k] >= 0)
                        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s has %d values",
                                 got[0] ? ", " : "", ct_names[k], n[k]);
                st = sl__op_fail(err, SL_EINVAL, io, i, "coord_transform",
                                 "%s: no transform of points of %lld coordinates (M: rows x "
                                 "%lld, T: rows, MT: rows x %lld, or one value)",
                                 got[0] ? got : "none given", (long long)d, (long long)d,
                                 (long long)d + 1);
            }
        }
        double *mt = NULL;
        if (st == SL_OK) {
            mt = realloc(s->mt[i], (size_t)(rows * (d + 1) + 1) * sizeof *mt);
            if (!mt)
                st = sl_err_set(err, SL_ENOMEM, "coord_transform: out of memory");
            else
                s->mt[i] = mt;
        }
        for (int r = 0; st == SL_OK && r < rows; r++)
            for (int64_t c = 0; c <= d; c++) {
                double x;
                if (n[2] == 1)
                    x = c < d && r == c ? v[2][0] : 0;
                else if (n[2] >= 0)
                    x = v[2][r * (d + 1) + c];
                else if (c < d)
                    x = n[0] < 0 ? (r == c) : n[0] == 1 ? (r == c) * v[0][0] : v[0][r * d + c];
                else
                    x = n[1] < 0 ? 0 : v[1][n[1] == 1 ? 0 : r];
                mt[r * (d + 1) + c] = x;
            }
        for (int k = 0; k < 3; k++) free(v[k]);
        s->rows[i] = rows;
        memcpy(shapes + (size_t)i * (size_t)in->ndim, sh, (size_t)in->ndim * sizeof *sh);
        shapes[(size_t)i * (size_t)in->ndim + (size_t)in->ndim - 1] = rows;
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, s->dtype, in->ndim, sl_cpu(), err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st == SL_OK) memcpy(out->layout, in->layout, sizeof out->layout); /* kept, as DALI */
    return st;
}

static sl_status ct_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    ct_state *s = state;
    (void)worker, (void)err;
    const sl_tlist *in = io->in[0];
    const int64_t *sh = sl_tlist_shape(in, i);
    int64_t d = sh[in->ndim - 1], pts = 1;
    for (int k = 0; k < in->ndim - 1; k++) pts *= sh[k];
    int rows = s->rows[i];
    const double *mt = s->mt[i];
    for (int64_t p = 0; p < pts; p++)
        for (int r = 0; r < rows; r++) {
            double acc = mt[r * (d + 1) + d];
            for (int64_t c = 0; c < d; c++)
                acc += mt[r * (d + 1) + c] * sl__dtype_conv_load(in->data[i], in->dtype, p * d + c);
            sl__dtype_conv_store(io->out[0]->data[i], s->dtype, p * rows + r, acc);
        }
    return SL_OK;
}

const sl__op_def sl__coord_transform_op = {
    .name = "coord_transform",
    .doc = "Maps points (..., D) by an affine transform: out = M x + T (or MT = [M | T]).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = ct_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_SEQUENCE | SL_OPF_ARG_FRAMES,
    .create = ct_create,
    .setup = ct_setup,
    .run_cpu = ct_run_cpu,
    .destroy = ct_destroy,
};
