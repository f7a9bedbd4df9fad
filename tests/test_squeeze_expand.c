/* SPDX-License-Identifier: Apache-2.0 */
/* squeeze and expand_dims: views of the input's bytes (no copy) with dims of extent 1 removed or
 * inserted, and the layout following: HWC with C = 1 squeezed by name to HW; (1, 28, 28) squeezed
 * by index to (28, 28); expand_dims at [0] named "F" making FHWC, and at [0, 3] making
 * (1, H, W, 1, C) without a layout; a dim that is not 1 fails naming the sample; bad arguments
 * (expand_dims's messages carry DALI's sentences). */
#include "check.h"
#include "opharness.h"

#include <stdlib.h>
#include <string.h>

enum { N = 3 };

static void make(sl_tlist *l, const int64_t *shape3, const char *layout) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++)
        for (int d = 0; d < 3; d++) shapes[3 * i + d] = shape3[d] + (d == 0 ? i : 0);
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    snprintf(l->layout, sizeof l->layout, "%s", layout);
}

static sl_status run(oph *h, const char *op, const char *const *argv, sl_tlist *in,
                     const sl_tlist **out, sl_err *e) {
    *out = NULL;
    sl_status st = oph_create(h, op, argv, 1, N, 1, e);
    if (st != SL_OK) return st;
    sl_tlist *ins[1] = {in};
    st = oph_run(h, N, ins, 1, NULL, 0, NULL, 0, e);
    if (st == SL_OK) *out = &h->out[0];
    return st;
}

/* o views in: the same address, the wanted shape (rank nd, sample i's first extent + i) */
static void check_view(const sl_tlist *o, const sl_tlist *in, int nd, const int64_t *want,
                       const char *layout, const char *what) {
    CHECK_MSG(o != NULL, "%s: no output", what);
    if (!o) return;
    CHECK_EQ_INT(o->ndim, nd);
    CHECK_STR(o->layout, layout);
    for (int i = 0; i < N; i++) {
        CHECK_MSG(o->data[i] == in->data[i], "%s: sample %d was copied", what, i);
        for (int d = 0; d < nd; d++) {
            int64_t w = want[d] < 0 ? sl_tlist_shape(in, i)[0] : want[d];
            CHECK_MSG(sl_tlist_shape(o, i)[d] == w, "%s: sample %d dim %d is %lld, want %lld", what,
                      i, d, (long long)sl_tlist_shape(o, i)[d], (long long)w);
        }
    }
}

int main(void) {
    oph h;
    sl_err e;
    const sl_tlist *o;
    sl_tlist gray, mn;
    int64_t g3[3] = {4, 6, 1}, m3[3] = {1, 28, 28};
    make(&gray, g3, "HWC");
    make(&mn, m3, "");

    const char *byname[] = {"axis_names=\"C\"", NULL};
    CHECK_OK(run(&h, "squeeze", byname, &gray, &o, &e), &e);
    int64_t w1[2] = {-1, 6};
    check_view(o, &gray, 2, w1, "HW", "squeeze C");
    oph_destroy(&h);

    const char *e0[] = {"axes=[0]", "new_axis_names=\"F\"", NULL};
    CHECK_OK(run(&h, "expand_dims", e0, &gray, &o, &e), &e);
    int64_t w2[4] = {1, -1, 6, 1};
    check_view(o, &gray, 4, w2, "FHWC", "expand_dims F");
    oph_destroy(&h);
    const char *e03[] = {"axes=[0, 3]", NULL};
    CHECK_OK(run(&h, "expand_dims", e03, &gray, &o, &e), &e);
    int64_t w3[5] = {1, -1, 6, 1, 1};
    check_view(o, &gray, 5, w3, "", "expand_dims 0, 3");
    oph_destroy(&h);

    /* (1 + i, 28, 28): only sample 0 has a leading 1 */
    const char *s0[] = {"axes=[0]", NULL};
    CHECK_FAILS(run(&h, "squeeze", s0, &mn, &o, &e), SL_EINVAL, &e, "dim 0 has extent 2");
    CHECK_MSG(strstr(e.msg, "sample 1") != NULL, "%s", e.msg);
    oph_destroy(&h);
    const char *s2[] = {"axes=[2]", NULL};
    CHECK_FAILS(run(&h, "squeeze", s2, &mn, &o, &e), SL_EINVAL, &e, "extent 28");
    oph_destroy(&h);

    const char *none[] = {NULL};
    CHECK_FAILS(run(&h, "squeeze", none, &gray, &o, &e), SL_EINVAL, &e, "give axes or axis_names");
    const char *both[] = {"axes=[2]", "axis_names=\"C\"", NULL};
    CHECK_FAILS(run(&h, "squeeze", both, &gray, &o, &e), SL_EINVAL, &e, "one of them");
    /* expand_dims's messages: what sluice says, then DALI's own sentence */
    const char *names[] = {"axes=[0]", "new_axis_names=\"FG\"", NULL};
    CHECK_FAILS(run(&h, "expand_dims", names, &gray, &o, &e), SL_EINVAL, &e,
                "expand_dims: new_axis_names \"FG\" for 1 axes: Specified 1 new dimensions, but "
                "layout contains only 2 new dimension names");
    const char *far[] = {"axes=[5]", NULL};
    CHECK_FAILS(run(&h, "expand_dims", far, &gray, &o, &e), SL_EINVAL, &e,
                "expand_dims: axis 5, but the output has 4 dims: Data has not enough dimensions to "
                "add new axes at specified indices.");
    oph_destroy(&h);
    const char *neg[] = {"axes=[0, -1]", NULL};
    CHECK_FAILS(run(&h, "expand_dims", neg, &gray, &o, &e), SL_EINVAL, &e,
                "expand_dims: axes: axis -1: Axis value can't be negative");
    const char *past[] = {"axes=[9]", NULL};
    CHECK_FAILS(run(&h, "expand_dims", past, &gray, &o, &e), SL_EINVAL, &e,
                "Data has not enough dimensions to add new axes at specified indices.");
    const char *nolayout[] = {"axes=[2]", "new_axis_names=\"C\"", NULL};
    CHECK_FAILS(run(&h, "expand_dims", nolayout, &mn, &o, &e), SL_EINVAL, &e,
                "Specifying ``new_axis_names`` requires an input with a proper layout.");
    oph_destroy(&h);
    sl_tlist_free(&gray);
    sl_tlist_free(&mn);
    return check_done();
}
