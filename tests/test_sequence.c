/* SPDX-License-Identifier: Apache-2.0 */
/* Sequences frame by frame (operator/sequence.c), the way the executor drives it: a batch of
 * sequences unfolded into frames (views: a sequence input's frames, a non-sequence input and a
 * per-sample argument the same for each frame of their sample, a one-frame per-frame argument
 * broadcast), real ops of the table run on the frames, and their outputs folded back into
 * (F, ...) sequences with layout F...; frame counts that do not match and per-frame arguments an
 * op does not take are errors naming the op, the argument, the sample and the counts. Then
 * through a whole pipeline (pipeline text): per_frame, transforms with per-frame arguments. */
#include "operator/op.h"
#include "operator/sequence.h"
#include "ops/registry.h"

#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a list of count samples of float32 with the given shapes (rank nd), data from fill(i, k) */
static void make_f32(sl_tlist *l, int count, int nd, const int64_t *shapes, const char *layout,
                     float (*fill)(int, int64_t)) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, count, SL_DTYPE_F32, nd, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    snprintf(l->layout, sizeof l->layout, "%s", layout);
    for (int i = 0; i < count; i++) {
        int64_t n = (int64_t)(sl_tlist_sample_nbytes(l, i) / 4);
        for (int64_t k = 0; k < n; k++) ((float *)l->data[i])[k] = fill(i, k);
    }
}

static float pixel(int i, int64_t k) {
    return (float)(i * 1000 + k);
}

/* translations by (dx, dy) = (frame + 1, sample) as 2x3 matrices: sample 0 has 3, sample 1 one */
static float shift(int i, int64_t k) {
    int64_t f = k / 6, e = k % 6;
    return e == 0 || e == 4 ? 1.0f : e == 2 ? (float)(f + 1) : e == 5 ? (float)i : 0.0f;
}

static sl__args args_of(const sl__op_def *def, int n, const char *const *names,
                        const sl__val *vals) {
    sl__args a;
    sl_err e;
    memset(&a, 0, sizeof a);
    CHECK_OK(sl__args_build(def, n, names, vals, &a, &e), &e);
    return a;
}

/* runs op def (its args a) on io as the executor does; the status */
static sl_status run(const sl__op_def *def, const sl__args *a, sl__op_io *io, sl__seq *s,
                     sl_err *e) {
    bool expand;
    sl_status st = sl__seq_check(def, a, def->name, io, &expand, e);
    if (st != SL_OK) return st;
    CHECK(expand);
    void *state = NULL;
    sl__op_init init;
    memset(&init, 0, sizeof init);
    init.name = def->name;
    init.device = sl_cpu();
    init.batch_size = 64;
    init.threads = 1;
    st = def->create(a, &init, &state, e);
    if (st == SL_OK) st = sl__seq_expand(s, def, a, def->name, io, e);
    if (st == SL_OK) st = def->setup(state, &s->io, e);
    int n = s->io.run_index ? s->io.run_count : s->io.batch;
    for (int k = 0; st == SL_OK && def->run_cpu && k < n; k++)
        st = def->run_cpu(state, &s->io, s->io.run_index ? s->io.run_index[k] : k, 0, e);
    if (st == SL_OK) st = sl__seq_fold(s, def->name, io, e);
    if (def->destroy) def->destroy(state);
    return st;
}

/* warp_affine: an HWC image per sample with a sequence of matrices (layout F**) becomes a
 * sequence of frames, frame f the image moved by matrix f */
static void test_image_broadcast_into_frames(void) {
    const sl__op_def *def = sl__registry_find("warp_affine");
    CHECK(def && (def->flags & SL_OPF_SEQUENCE));
    sl_tlist img, mats, out;
    int64_t ish[2][3] = {{4, 5, 1}, {3, 3, 1}}, msh[2][3] = {{3, 2, 3}, {1, 2, 3}};
    make_f32(&img, 2, 3, &ish[0][0], "HWC", pixel);
    make_f32(&mats, 2, 3, &msh[0][0], "F**", shift);
    memset(&out, 0, sizeof out);
    const char *names[] = {"interp_type", "fill_value"};
    sl__val vals[2] = {{.kind = SL_VAL_ENUM, .s = "INTERP_NN"}, {.kind = SL_VAL_FLOAT, .f = -1}};
    sl__args a = args_of(def, 2, names, vals);
    sl_tlist *in[2] = {&img, &mats}, *outs[1] = {&out};
    const char *keys[2] = {"a.jpg", "b.jpg"};
    sl__op_io io = {.batch = 2,
                    .num_inputs = 2,
                    .in = in,
                    .num_outputs = 1,
                    .out = outs,
                    .keys = keys,
                    .device = {SL_DEVICE_CPU, 0}};
    sl__seq s;
    memset(&s, 0, sizeof s);
    sl_err e;
    CHECK_OK(run(def, &a, &io, &s, &e), &e);
    /* the frames were views: 4 of them, the image the same pointer for each of its frames */
    CHECK_EQ_INT(s.io.batch, 4);
    CHECK(s.in[0].data[0] == img.data[0] && s.in[0].data[2] == img.data[0]);
    CHECK(s.in[0].data[3] == img.data[1]);
    CHECK(s.in[1].data[1] == (char *)mats.data[0] + 24 && s.in[1].ndim == 2);
    CHECK_STR(s.keys[1], "a.jpg, frame 1");
    CHECK_STR(out.layout, "FHWC");
    CHECK_EQ_INT(out.ndim, 4);
    for (int i = 0; i < 2; i++) {
        const int64_t *sh = sl_tlist_shape(&out, i);
        CHECK_EQ_INT(sh[0], msh[i][0]);
        CHECK(sh[1] == ish[i][0] && sh[2] == ish[i][1] && sh[3] == 1);
        const float *o = out.data[i];
        int64_t H = ish[i][0], W = ish[i][1];
        for (int64_t f = 0; f < sh[0]; f++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++) { /* destination -> source: (x + f + 1, y + i) */
                    int64_t sx = x + f + 1, sy = y + i;
                    float want = sx < W && sy < H ? pixel(i, sy * W + sx) : -1.0f;
                    CHECK_NEAR(o[(f * H + y) * W + x], want, 0);
                }
    }
    sl__seq_free(&s);
    sl__args_free(&a);
    sl_tlist_free(&img), sl_tlist_free(&mats), sl_tlist_free(&out);
}

static float ones(int i, int64_t k) {
    (void)i;
    return (float)(k % 2 + 1);
}

/* transforms.scale with a per-frame scale of 3 frames and a per-frame center of one frame (the
 * same for every frame): (3, 2, 3) matrices; counts that do not match are errors */
static void test_per_frame_arguments(void) {
    const sl__op_def *def = sl__registry_find("transforms.scale");
    sl_tlist scale, center, out;
    int64_t ssh[2][2] = {{3, 2}, {2, 2}}, csh[2][2] = {{1, 2}, {1, 2}};
    make_f32(&scale, 2, 2, &ssh[0][0], "F*", ones);
    make_f32(&center, 2, 2, &csh[0][0], "F*", pixel);
    memset(&out, 0, sizeof out);
    const char *names[] = {"scale", "center"};
    sl__val vals[2] = {{.kind = SL_VAL_NODE, .node = 0}, {.kind = SL_VAL_NODE, .node = 1}};
    sl__args a = args_of(def, 2, names, vals);
    sl_tlist *arg[2] = {&scale, &center}, *outs[1] = {&out};
    sl__op_io io = {.batch = 2,
                    .num_arg_inputs = 2,
                    .arg_in = arg,
                    .num_outputs = 1,
                    .out = outs,
                    .device = {SL_DEVICE_CPU, 0}};
    sl__seq s;
    memset(&s, 0, sizeof s);
    sl_err e;
    CHECK_OK(run(def, &a, &io, &s, &e), &e);
    CHECK_STR(out.layout, "F**");
    for (int i = 0; i < 2; i++) {
        const int64_t *sh = sl_tlist_shape(&out, i);
        CHECK(sh[0] == ssh[i][0] && sh[1] == 2 && sh[2] == 3);
        for (int f = 0; f < sh[0]; f++) { /* scale (1, 2) about c: [[1, 0, 0], [0, 2, -c_y]] */
            const float *m = (const float *)out.data[i] + 6 * f;
            float cy = pixel(i, 1);
            CHECK(m[0] == 1 && m[1] == 0 && m[2] == 0 && m[3] == 0 && m[4] == 2 && m[5] == -cy);
        }
    }
    /* a per-frame argument of 2 frames beside one of 3 */
    int64_t bad[2][2] = {{2, 2}, {2, 2}};
    sl_tlist_free(&center);
    make_f32(&center, 2, 2, &bad[0][0], "F*", pixel);
    CHECK_FAILS(run(def, &a, &io, &s, &e), SL_EINVAL, &e,
                "transforms.scale: sample 0: argument center has 2 frames, but argument scale has "
                "3");
    sl__seq_free(&s);
    sl__args_free(&a);
    sl_tlist_free(&scale), sl_tlist_free(&center), sl_tlist_free(&out);
}

/* a per-frame argument to an argument or an op that takes none; a sequence input of another
 * length than a per-frame argument */
static void test_refusals(void) {
    sl_tlist x, out;
    int64_t sh[1][2] = {{2, 6}};
    make_f32(&x, 1, 2, &sh[0][0], "F*", shift);
    memset(&out, 0, sizeof out);
    sl_tlist *arg[1] = {&x}, *outs[1] = {&out};
    sl__op_io io = {.batch = 1,
                    .num_arg_inputs = 1,
                    .arg_in = arg,
                    .num_outputs = 1,
                    .out = outs,
                    .device = {SL_DEVICE_CPU, 0}};
    sl_err e;
    bool expand;
    const sl__op_def *wa = sl__registry_find("warp_affine");
    const char *names[] = {"size"};
    sl__val vals[1] = {{.kind = SL_VAL_NODE, .node = 0}};
    sl__args a = args_of(wa, 1, names, vals);
    CHECK_FAILS(sl__seq_check(wa, &a, "warp1", &io, &expand, &e), SL_EINVAL, &e,
                "warp1: argument size is given per frame (layout \"F*\", fn.per_frame), but it "
                "takes one value per sample, not per frame");
    sl__args_free(&a);
    const sl__op_def *sl = sl__registry_find("slice");
    CHECK(!(sl->flags & SL_OPF_SEQUENCE));
    const char *cn[] = {"rel_start"};
    a = args_of(sl, 1, cn, vals);
    CHECK_FAILS(sl__seq_check(sl, &a, "slice1", &io, &expand, &e), SL_EINVAL, &e,
                "slice1: argument rel_start is given per frame (layout \"F*\", fn.per_frame), but "
                "slice takes no per-frame arguments");
    sl__args_free(&a);
    /* rotate: a sequence of 3 frames, an angle of 2 */
    const sl__op_def *rot = sl__registry_find("rotate");
    sl_tlist seq, ang;
    int64_t qsh[1][4] = {{3, 2, 2, 1}}, ash[1][1] = {{2}};
    make_f32(&seq, 1, 4, &qsh[0][0], "FHWC", pixel);
    make_f32(&ang, 1, 1, &ash[0][0], "F", pixel);
    const char *rn[] = {"angle"};
    a = args_of(rot, 1, rn, vals);
    sl_tlist *in[1] = {&seq}, *rarg[1] = {&ang};
    const char *keys[1] = {"clip.mp4"};
    sl__op_io rio = {.batch = 1,
                     .num_inputs = 1,
                     .in = in,
                     .num_arg_inputs = 1,
                     .arg_in = rarg,
                     .num_outputs = 1,
                     .out = outs,
                     .keys = keys,
                     .device = {SL_DEVICE_CPU, 0}};
    sl__seq s;
    memset(&s, 0, sizeof s);
    CHECK_FAILS(run(rot, &a, &rio, &s, &e), SL_EINVAL, &e,
                "rotate: record clip.mp4: argument angle has 2 frames, but input 0 has 3");
    /* with one frame it is every frame's */
    sl_tlist_free(&ang);
    ash[0][0] = 1;
    make_f32(&ang, 1, 1, &ash[0][0], "F", pixel);
    CHECK_OK(run(rot, &a, &rio, &s, &e), &e);
    CHECK_EQ_INT(sl_tlist_shape(&out, 0)[0], 3);
    /* as DALI: a per-frame angle needs a sequence input (an HWC image has no frames) */
    memcpy(seq.layout, "HWCD", 5);
    CHECK_FAILS(sl__seq_check(rot, &a, "rot", &rio, &expand, &e), SL_EINVAL, &e,
                "rot: argument angle is given per frame, but input 0 has no frames: Tensor input "
                "for argument angle is specified per frame (got F layout). In that case, samples "
                "in the input 0 must contain frames too. Got layout `HWCD` that does not contain "
                "frames.");
    sl__args_free(&a);
    /* transforms.* take the frame count from the argument: their input is repeated per frame */
    const sl__op_def *ts = sl__registry_find("transforms.scale");
    CHECK((ts->flags & SL_OPF_ARG_FRAMES) && !(rot->flags & SL_OPF_ARG_FRAMES));
    const char *sn[] = {"scale"};
    a = args_of(ts, 1, sn, vals);
    CHECK_OK(sl__seq_check(ts, &a, "ts", &rio, &expand, &e), &e);
    CHECK(expand);
    sl__seq_free(&s);
    sl__args_free(&a);
    sl_tlist_free(&x), sl_tlist_free(&out), sl_tlist_free(&seq), sl_tlist_free(&ang);
}

/* the whole pipeline: per_frame and transforms.rotation with a per-frame angle */
static void test_pipeline(void) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = 3;
    c.num_threads = 2;
    sl_err e;
    sl_pipeline *p = check_pipeline(&c,
                                    "def pipe():\n"
                                    "    a = fn.random.uniform(range=[-90.0, 90.0], shape=[4])\n"
                                    "    return a, fn.transforms.rotation(angle=fn.per_frame(a))\n",
                                    "seq.py", 0, NULL, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    for (int batch = 0; p && batch < 2; batch++) {
        sl_batch *b = NULL;
        CHECK_OK(sl_pipeline_next(p, &b), NULL);
        if (!b) break;
        const sl_tlist *a = sl_batch_output(b, 0), *m = sl_batch_output(b, 1);
        CHECK_STR(m->layout, "F**");
        for (int i = 0; i < 3; i++) {
            const int64_t *sh = sl_tlist_shape(m, i);
            CHECK(sh[0] == 4 && sh[1] == 2 && sh[2] == 3);
            for (int f = 0; f < 4; f++) {
                double r = ((const float *)a->data[i])[f] * 3.14159265358979323846 / 180;
                const float *x = (const float *)m->data[i] + 6 * f;
                CHECK_NEAR(x[0], cos(r), 1e-6);
                CHECK_NEAR(x[1], -sin(r), 1e-6);
                CHECK_NEAR(x[3], sin(r), 1e-6);
            }
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
}

int main(void) {
    test_image_broadcast_into_frames();
    test_per_frame_arguments();
    test_refusals();
    test_pipeline();
    return check_done();
}
