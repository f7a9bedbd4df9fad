/* SPDX-License-Identifier: Apache-2.0 */
/* external_source: samples from a source registered with sl_pipeline_add_source.
 * - From pipeline text (the source named bare), two outputs of varying shapes through a cast:
 *   every sample's shape, layout and bytes are what the source made, for 4 batches, and 1 and 3
 *   threads give the same batches; every call saw consistent sl_source_info.
 * - Built op by op through the C API.
 * - A source with `view` (no_copy): the image output's samples are the source's own memory, not
 *   copies, and the labels (for which it gives NULL) are filled; `release` comes once for every
 *   batch, only after the consumer released that batch (its slot set up again) or at the
 *   pipeline's free. With `copy_views` the images are copies of that memory, made without a
 *   call to fill, and release comes before the batch reaches the consumer, after which the
 *   source's memory may change under it without changing the batch.
 * - Errors name the source, batch and sample and keep the source's message: a failing fill, a
 *   failing shape without a message, a dtype that changes within an output, a dtype other than
 *   the op's `dtype`; an unknown source lists the registered ones; bad registrations are refused.
 * - A source's `layout` gives each batch's layout (DALI's feed_input(layout=)): pad's axis_names
 *   reads it per batch; "" takes the op's `layout` argument; a layout other than that, a change
 *   (to "" too) from one given before, or one of the wrong length is an error naming the source
 *   and batch.
 * - The iterator's prepare hook registers one source per shard (2 CPU devices, size 40), and a
 *   checkpoint taken after one step resumes at the second step's samples. */
#include "check.h"

#include "sluice/iterator.h"
#include "sluice/pipeline.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { B = 8, BATCHES = 4 };

static atomic_int bad_info;    /* a call whose sl_source_info did not add up */
static atomic_int image_fills; /* fill calls for output 0 */

typedef struct ramp {
    int32_t label_offset; /* per shard, in the iterator test */
    int fail_sample;      /* fill fails there (-1: never) */
    int flip_sample;      /* shape gives float32 there (-1: never) */
    bool quiet;           /* shape fails without a message */
} ramp;

static void check_info(const sl_source_info *f) {
    if (f->sample != f->iteration * B + f->idx_in_batch || f->idx_in_batch < 0 ||
        f->idx_in_batch >= B || f->output < 0 || f->output > 1)
        atomic_fetch_add(&bad_info, 1);
}

static int64_t img_h(int64_t s) {
    return 1 + s % 5;
}
static int64_t img_w(int64_t s) {
    return 2 + s % 3;
}

static sl_status ramp_shape(void *user, const sl_source_info *f, sl_dtype *dt, int *nd, int64_t *sh,
                            sl_err *err) {
    const ramp *r = user;
    check_info(f);
    if (r->quiet && f->sample == 2) return SL_EIO;
    if (f->output == 0) {
        *dt = f->sample == r->flip_sample ? SL_DTYPE_F32 : SL_DTYPE_U8;
        *nd = 3;
        sh[0] = img_h(f->sample), sh[1] = img_w(f->sample), sh[2] = 1;
    } else {
        *dt = SL_DTYPE_I32;
        *nd = 1;
        sh[0] = 1;
    }
    (void)err;
    return SL_OK;
}

static sl_status ramp_fill(void *user, const sl_source_info *f, void *dst, size_t nbytes,
                           sl_err *err) {
    const ramp *r = user;
    check_info(f);
    if (f->sample == r->fail_sample)
        return sl_err_set(err, SL_EIO, "disk gone at sample %lld", (long long)f->sample);
    if (f->output == 0) {
        atomic_fetch_add(&image_fills, 1);
        if (nbytes != (size_t)(img_h(f->sample) * img_w(f->sample))) atomic_fetch_add(&bad_info, 1);
        uint8_t *d = dst;
        for (size_t k = 0; k < nbytes; k++) d[k] = (uint8_t)(f->sample * 7 + (int64_t)k);
    } else {
        if (nbytes != 4) atomic_fetch_add(&bad_info, 1);
        int32_t v = (int32_t)(f->sample * 3) + r->label_offset;
        memcpy(dst, &v, sizeof v);
    }
    return SL_OK;
}

static const char *TEXT = "def pipe():\n"
                          "    images, labels = fn.external_source(source=ramp, num_outputs=2,\n"
                          "                                        layout=[\"HWC\", \"\"])\n"
                          "    floats = fn.cast(images, dtype=types.FLOAT)\n"
                          "    return images, floats, labels\n";

/* the `layout` the next make() registers its source with (NULL: none) */
static sl_status (*make_layout)(void *, int64_t, int, char *, sl_err *);

/* A pipeline with `name` -> r registered, from text; NULL with e set on failure. */
static sl_pipeline *make(const char *text, int threads, const char *name, ramp *r, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = threads;
    sl_pipeline *p = NULL;
    if (sl_pipeline_create(&c, &p, e)) return NULL;
    sl_source src = {ramp_shape, ramp_fill, r, NULL, NULL, NULL, make_layout, false};
    sl_status st = sl_pipeline_add_source(p, name, &src);
    if (st == SL_OK) st = sl_pipeline_parse(p, text, "source.py", 0, NULL, e);
    if (st == SL_OK) st = sl_pipeline_build(p);
    if (st != SL_OK) {
        e->status = st;
        snprintf(e->msg, sizeof e->msg, "%s", sl_pipeline_errmsg(p));
        sl_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* Checks batch b's three outputs sample by sample; appends the image bytes to *sum. */
static void check_batch(sl_batch *b, int64_t iteration, uint64_t *sum) {
    CHECK_EQ_INT(sl_batch_index(b), iteration);
    const sl_tlist *img = sl_batch_output(b, 0), *flt = sl_batch_output(b, 1),
                   *lab = sl_batch_output(b, 2);
    CHECK_EQ_INT(img->count, B);
    CHECK_EQ_INT(img->dtype, SL_DTYPE_U8);
    CHECK_EQ_INT(flt->dtype, SL_DTYPE_F32);
    CHECK_EQ_INT(lab->dtype, SL_DTYPE_I32);
    CHECK_STR(img->layout, "HWC");
    for (int i = 0; i < B; i++) {
        int64_t s = iteration * B + i;
        sl_tensor t, f, l;
        sl_tlist_sample(img, i, &t);
        sl_tlist_sample(flt, i, &f);
        sl_tlist_sample(lab, i, &l);
        CHECK_EQ_INT(t.ndim, 3);
        CHECK_EQ_INT(t.shape[0], img_h(s));
        CHECK_EQ_INT(t.shape[1], img_w(s));
        CHECK_EQ_INT(t.shape[2], 1);
        int wrong = 0;
        for (int64_t k = 0; k < img_h(s) * img_w(s); k++) {
            uint8_t want = (uint8_t)(s * 7 + k);
            wrong += ((uint8_t *)t.data)[k] != want || ((float *)f.data)[k] != (float)want;
            *sum = *sum * 31 + ((uint8_t *)t.data)[k];
        }
        CHECK_MSG(wrong == 0, "sample %lld: %d bytes differ", (long long)s, wrong);
        CHECK_EQ_INT(*(int32_t *)l.data, s * 3);
    }
}

static void test_text(void) {
    uint64_t sums[2] = {0, 0};
    int threads[2] = {1, 3};
    for (int r = 0; r < 2; r++) {
        ramp src = {0, -1, -1, false};
        sl_err e;
        sl_pipeline *p = make(TEXT, threads[r], "ramp", &src, &e);
        CHECK_MSG(p != NULL, "%s", e.msg);
        if (!p) return;
        for (int k = 0; k < BATCHES; k++) {
            sl_batch *b = NULL;
            sl_status st = sl_pipeline_next(p, &b);
            CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
            if (st != SL_OK) break;
            check_batch(b, k, &sums[r]);
            sl_pipeline_release(p, b);
        }
        sl_pipeline_free(p);
    }
    CHECK(sums[0] != 0);
    CHECK(sums[0] == sums[1]);
    CHECK_EQ_INT(atomic_load(&bad_info), 0);
}

static void test_c_api(void) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    sl_pipeline *p = NULL;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    ramp r = {0, -1, -1, false};
    sl_source src = {ramp_shape, ramp_fill, &r, NULL, NULL, NULL, NULL, false};
    CHECK_OK(sl_pipeline_add_source(p, "ramp", &src), NULL);
    int outs[3], n = 0;
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "external_source");
    CHECK(op != NULL);
    sl_pipeline_op_arg(op, "source", "\"ramp\"");
    sl_pipeline_op_arg(op, "num_outputs", "2");
    sl_pipeline_op_arg(op, "layout", "[\"HWC\", \"\"]");
    CHECK_OK(sl_pipeline_op_end(op, outs, 2, &n), NULL);
    CHECK_EQ_INT(n, 2);
    op = sl_pipeline_op_begin(p, "cast");
    sl_pipeline_op_input(op, outs[0]);
    sl_pipeline_op_arg(op, "dtype", "types.FLOAT");
    CHECK_OK(sl_pipeline_op_end(op, &outs[2], 1, NULL), NULL);
    int order[3] = {outs[0], outs[2], outs[1]};
    CHECK_OK(sl_pipeline_set_outputs(p, 3, order, NULL), NULL);
    sl_status st = sl_pipeline_build(p);
    CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
    sl_batch *b = NULL;
    if (st == SL_OK) st = sl_pipeline_next(p, &b);
    CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
    uint64_t sum = 0;
    if (b) {
        check_batch(b, 0, &sum);
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
}

/* ---- a layout per batch ------------------------------------------------------------------- */
/* batches 0-1: "HWC", then none, then "CHW" */
static sl_status feed_layout(void *user, int64_t iteration, int output, char *layout, sl_err *err) {
    static const char *const per[] = {"HWC", "HWC", "", "CHW"};
    (void)user, (void)err;
    if (output != 0 || iteration < 0 || iteration > 3) return SL_EINVAL;
    strcpy(layout, per[iteration]);
    return SL_OK;
}

/* batch k's pad output: sample 0's padded shape and the layout */
static sl_status pad_batch(sl_pipeline *p, int k, int64_t *h, int64_t *w, char *layout) {
    sl_batch *b = NULL;
    sl_status st = sl_pipeline_next(p, &b);
    if (st != SL_OK) return st;
    const sl_tlist *in = sl_batch_output(b, 0), *out = sl_batch_output(b, 1);
    CHECK_STR(in->layout, out->layout);
    strcpy(layout, out->layout);
    *h = out->shapes[0], *w = out->shapes[1];
    CHECK_EQ_INT(sl_batch_index(b), k);
    sl_pipeline_release(p, b);
    return SL_OK;
}

static void test_layouts(void) {
    static const char *text = "def pipe():\n"
                              "    x = fn.external_source(source=ramp)\n"
                              "    return x, fn.pad(x, axis_names='W', align=8)\n";
    static const char *declared = "def pipe():\n"
                                  "    x = fn.external_source(source=ramp, layout='HWC')\n"
                                  "    return x, fn.pad(x, axis_names='W', align=8)\n";
    make_layout = feed_layout;
    ramp r = {0, -1, -1, false};
    sl_err e;
    for (int d = 0; d < 2; d++) {
        sl_pipeline *p = make(d ? declared : text, 2, "ramp", &r, &e);
        CHECK_MSG(p != NULL, "%s", e.msg);
        if (!p) continue;
        int64_t h = 0, w = 0;
        char lay[SL_LAYOUT_MAX + 1];
        CHECK_EQ_INT(pad_batch(p, 0, &h, &w, lay), SL_OK);
        CHECK_STR(lay, "HWC"); /* W (axis 1, 2..4 wide) to 8; H as it was */
        CHECK_EQ_INT(h, img_h(0));
        CHECK_EQ_INT(w, 8);
        CHECK_EQ_INT(pad_batch(p, 1, &h, &w, lay), SL_OK);
        CHECK_STR(lay, "HWC");
        /* none: the op's layout; without one, a change from the layout given before */
        sl_status st = pad_batch(p, 2, &h, &w, lay);
        const char *msg = sl_pipeline_errmsg(p);
        if (!d) {
            CHECK_EQ_INT(st, SL_EINVAL);
            CHECK_MSG(!check_needle_missing(msg, "source 'ramp': batch 2: the layout of the data "
                                                 "fed changed from the previous batch's \"HWC\" "
                                                 "to \"\""),
                      "%s", msg);
        } else {
            CHECK_MSG(st == SL_OK, "%s", msg);
            CHECK_STR(lay, "HWC");
            st = pad_batch(p, 3, &h, &w, lay); /* another than the op's */
            CHECK_EQ_INT(st, SL_EINVAL);
            msg = sl_pipeline_errmsg(p);
            CHECK_MSG(!check_needle_missing(msg, "batch 3: expected data with layout: \"HWC\" "
                                                 "and got: \"CHW\""),
                      "%s", msg);
        }
        sl_pipeline_free(p);
    }
    make_layout = NULL;
}

/* ---- view and release -------------------------------------------------------------------- */
enum { VIEW_ITERS = 64 };
static uint8_t view_mem[VIEW_ITERS][B][32]; /* a sample: at most 5 x 4 bytes */
static atomic_int viewed[VIEW_ITERS], released[VIEW_ITERS], consumed[VIEW_ITERS];
static atomic_int freeing; /* the pipeline is being freed: batches never taken go too */
static atomic_int copying; /* copy_views: release comes once the batch is copied */

static sl_status ramp_view(void *user, const sl_source_info *f, const void **data, sl_err *err) {
    (void)user, (void)err;
    check_info(f);
    if (f->output != 0 || f->iteration >= VIEW_ITERS) return SL_OK; /* *data stays NULL: fill */
    uint8_t *d = view_mem[f->iteration][f->idx_in_batch];
    for (int64_t k = 0; k < img_h(f->sample) * img_w(f->sample); k++)
        d[k] = (uint8_t)(f->sample * 7 + k);
    atomic_store(&viewed[f->iteration], 1);
    *data = d;
    return SL_OK;
}

static void ramp_release(void *user, int64_t iteration) {
    (void)user;
    if (iteration < 0 || iteration >= VIEW_ITERS || atomic_fetch_add(&released[iteration], 1) ||
        !atomic_load(&viewed[iteration]))
        atomic_fetch_add(&bad_info, 1); /* twice, or never viewed */
    else if (!atomic_load(&consumed[iteration]) && !atomic_load(&freeing) && !atomic_load(&copying))
        atomic_fetch_add(&bad_info, 1000); /* still the consumer's */
}

static void test_views(bool copy) {
    for (int k = 0; k < VIEW_ITERS; k++) {
        atomic_store(&viewed[k], 0);
        atomic_store(&released[k], 0);
        atomic_store(&consumed[k], 0);
    }
    atomic_store(&freeing, 0);
    atomic_store(&copying, copy);
    atomic_store(&image_fills, 0);
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = 2;
    sl_pipeline *p = NULL;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    ramp r = {0, -1, -1, false};
    sl_source src = {ramp_shape, ramp_fill, &r, NULL, ramp_view, ramp_release, NULL, copy};
    CHECK_OK(sl_pipeline_add_source(p, "ramp", &src), NULL);
    CHECK_OK(sl_pipeline_parse(p, TEXT, "source.py", 0, NULL, &e), &e);
    sl_status st = sl_pipeline_build(p);
    CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
    uint64_t sum = 0;
    for (int64_t it = 0; it < 12 && st == SL_OK; it++) {
        sl_batch *b = NULL;
        st = sl_pipeline_next(p, &b);
        CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
        if (!b) break;
        check_batch(b, it, &sum);
        const sl_tlist *img = sl_batch_output(b, 0);
        int own = 0;
        for (int i = 0; i < B; i++) own += img->data[i] == (void *)view_mem[it][i];
        CHECK_EQ_INT(own, copy ? 0 : B); /* the source's memory, or a copy of it */
        if (copy) {                      /* released once copied: the source's memory may change */
            CHECK_EQ_INT(atomic_load(&released[it]), 1);
            memset(view_mem[it], 0xEE, sizeof view_mem[it]);
            uint64_t again = 0;
            check_batch(b, it, &again);
        }
        atomic_store(&consumed[it], 1);
        sl_pipeline_release(p, b);
    }
    int before = 0;
    for (int k = 0; k < VIEW_ITERS; k++) before += atomic_load(&released[k]);
    CHECK(before >= 12 - 8); /* all but the last slots' batches, while it ran */
    atomic_store(&freeing, 1);
    sl_pipeline_free(p);
    int asked = 0, done = 0;
    for (int k = 0; k < VIEW_ITERS; k++) {
        asked += atomic_load(&viewed[k]);
        done += atomic_load(&released[k]);
    }
    CHECK(asked >= 12);
    CHECK_EQ_INT(done, asked); /* every batch that gave views heard it was done with them */
    if (copy) CHECK_EQ_INT(atomic_load(&image_fills), 0); /* every image came from its view */
}

/* The first error of a pipeline from text (source `name` -> r): status and message. */
static sl_status run_until_error(const char *text, const char *name, ramp *r, char *msg,
                                 size_t size) {
    sl_err e;
    sl_pipeline *p = make(text, 2, name, r, &e);
    if (!p) {
        snprintf(msg, size, "%s", e.msg);
        return e.status;
    }
    sl_status st = SL_OK;
    for (int k = 0; k < BATCHES && st == SL_OK; k++) {
        sl_batch *b = NULL;
        st = sl_pipeline_next(p, &b);
        if (b) sl_pipeline_release(p, b);
    }
    snprintf(msg, size, "%s", st == SL_OK ? "" : sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
    return st;
}

#define CHECK_ERR(st, want, msg, needle)                                                           \
    do {                                                                                           \
        CHECK_EQ_INT(st, want);                                                                    \
        CHECK_MSG(!check_needle_missing(msg, needle), "message \"%s\" lacks \"%s\"", msg, needle); \
    } while (0)

static void test_errors(void) {
    char msg[SL_ERRMSG_MAX];
    ramp fails = {0, 13, -1, false}; /* batch 1, sample 5 */
    sl_status st = run_until_error(TEXT, "ramp", &fails, msg, sizeof msg);
    CHECK_ERR(st, SL_EIO, msg,
              "external_source: source 'ramp': batch 1 sample 5 output 0: disk gone at sample 13");
    ramp quiet = {0, -1, -1, true};
    st = run_until_error(TEXT, "ramp", &quiet, msg, sizeof msg);
    CHECK_ERR(st, SL_EIO, msg, "batch 0 sample 2 output 0: ");
    CHECK_ERR(st, SL_EIO, msg, sl_status_str(SL_EIO));
    ramp flips = {0, -1, 11, false};
    st = run_until_error(TEXT, "ramp", &flips, msg, sizeof msg);
    CHECK_ERR(st, SL_EINVAL, msg,
              "batch 1 sample 3 output 0: float32 with 3 dimensions, but sample 0 is uint8");
    ramp ok = {0, -1, -1, false};
    st = run_until_error("def pipe():\n"
                         "    images = fn.external_source(source=ramp, dtype=types.FLOAT)\n"
                         "    return images\n",
                         "ramp", &ok, msg, sizeof msg);
    CHECK_ERR(st, SL_EINVAL, msg, "batch 0 sample 0: data type uint8, but dtype=float32");
    st = run_until_error("def pipe():\n"
                         "    images = fn.external_source(source=ramp, layout=\"HW\")\n"
                         "    return images\n",
                         "ramp", &ok, msg, sizeof msg);
    CHECK_ERR(st, SL_EINVAL, msg, "batch 0 sample 0: 3 dimensions, but layout \"HW\"");
    st = run_until_error("def pipe():\n"
                         "    images = fn.external_source(source=\"nope\")\n"
                         "    return images\n",
                         "ramp", &ok, msg, sizeof msg);
    CHECK_ERR(st, SL_ENOENT, msg, "no source named 'nope' (registered: 'ramp')");
    st = run_until_error("def pipe():\n"
                         "    images = fn.external_source(source=nope)\n"
                         "    return images\n",
                         "ramp", &ok, msg, sizeof msg);
    CHECK_ERR(st, SL_EINVAL, msg, "source.py:2");
    CHECK_ERR(st, SL_EINVAL, msg, "name 'nope' is not defined");

    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    sl_pipeline *p = NULL;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    sl_source src = {ramp_shape, ramp_fill, &ok, NULL, NULL, NULL, NULL, false},
              half = {ramp_shape, NULL, &ok, NULL, NULL, NULL, NULL, false};
    CHECK_OK(sl_pipeline_add_source(p, "a", &src), NULL);
    CHECK_EQ_INT(sl_pipeline_add_source(p, "a", &src), SL_EINVAL);
    CHECK(!check_needle_missing(sl_pipeline_errmsg(p), "'a' is already registered"));
    CHECK_EQ_INT(sl_pipeline_add_source(p, "b", &half), SL_EINVAL);
    CHECK_EQ_INT(sl_pipeline_add_source(p, "say \"hi\"", &src), SL_EINVAL);
    CHECK_EQ_INT(sl_pipeline_add_source(p, "", &src), SL_EINVAL);
    sl_pipeline_free(p);
}

static sl_status prepare(sl_pipeline *p, int shard_id, int num_shards, void *user, sl_err *err) {
    ramp *r = (ramp *)user + shard_id;
    (void)num_shards, (void)err;
    sl_source src = {ramp_shape, ramp_fill, r, NULL, NULL, NULL, NULL, false};
    return sl_pipeline_add_source(p, "ramp", &src);
}

static void test_iterator(void) {
    ramp shards[2] = {{0, -1, -1, false}, {1000, -1, -1, false}};
    sl_iter_config c;
    sl_iter_config_init(&c);
    sl_err e;
    c.text = TEXT;
    c.filename = "source.py";
    c.prepare = prepare;
    c.build_user = shards;
    c.batch_size = 2 * B;
    c.size = 40;
    CHECK_OK(sl_iter_parse_devices("cpu:2", &c, &e), &e);
    sl_iter *it = NULL;
    sl_status st = sl_iter_create(&c, &it, &e);
    CHECK_MSG(st == SL_OK, "%s", e.msg);
    if (st != SL_OK) return;
    int steps = 0;
    const sl_iter_batch *b;
    while ((st = sl_iter_next(it, &b)) == SL_OK) {
        for (int dev = 0; dev < 2; dev++) {
            const sl_tlist *lab = sl_iter_shard_list(b, 2, dev);
            for (int i = 0; i < B; i++) {
                int64_t s = (int64_t)steps * B + i;
                CHECK_EQ_INT(*(int32_t *)lab->data[i], s * 3 + 1000 * dev);
            }
        }
        steps++;
    }
    CHECK_EQ_INT(st, SL_EOF);
    CHECK_EQ_INT(steps, sl_iter_len(it));
    CHECK(steps >= 2);
    sl_iter_free(it);

    /* a checkpoint after one step resumes at the second step's samples */
    CHECK_OK(sl_iter_create(&c, &it, &e), &e);
    void *bytes = NULL;
    size_t size = 0;
    CHECK_OK(sl_iter_next(it, &b), NULL);
    CHECK_OK(sl_iter_save(it, NULL, 0, &bytes, &size), NULL);
    sl_iter_free(it);
    c.resume_bytes = bytes;
    c.resume_size = size;
    st = sl_iter_create(&c, &it, &e);
    CHECK_MSG(st == SL_OK, "%s", e.msg);
    if (st == SL_OK && sl_iter_next(it, &b) == SL_OK) {
        const sl_tlist *lab = sl_iter_shard_list(b, 2, 1);
        for (int i = 0; i < B; i++) CHECK_EQ_INT(*(int32_t *)lab->data[i], (B + i) * 3 + 1000);
    } else {
        CHECK_MSG(false, "no batch after resuming: %s", it ? sl_iter_errmsg(it) : e.msg);
    }
    sl_iter_free(it);
    free(bytes);
}

int main(void) {
    test_text();
    test_c_api();
    test_views(false);
    test_views(true);
    test_errors();
    test_layouts();
    test_iterator();
    CHECK_EQ_INT(atomic_load(&bad_info), 0);
    return check_done();
}
