/* SPDX-License-Identifier: Apache-2.0 */
/* Batches the caller gives back (sl_iter_config.caller_releases, sl_iter_release): the caller may
 * hold sl_iter_max_held batches, all still intact; one more is refused with SL_ESTATE before
 * anything is taken; batches come back in any order; every batch, over two epochs on two devices,
 * has the bytes and keys of an iterator that releases its own; a checkpoint taken while batches
 * are held resumes exactly; DROP's discarded batch is not counted as held. Also the pipeline's
 * own limit (sl_pipeline_max_held). DLPack exports keep their batch: given back while exported,
 * its memory stays intact through the rest of the epoch, counted as held, until the exports'
 * deleters run (from another thread: `make test-tsan` runs this); then its slot is free again. A
 * deleter may run after the iterator is freed. Any number of binds reaches the pipelines.
 * sl_pipeline_stop / sl_iter_stop end the threads and keep held batches intact;
 * sl_pipeline_wait / sl_iter_wait time out while a batch is not ready and return once it is.
 * The data: the 256-record Caffe2 fixture, decoded. */
#include "check.h"

#include "sluice/iterator.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef SLUICE_HAVE_DLPACK
#include <dlpack/dlpack.h>
#endif

#define NDEV    2
#define GLOBAL  32
#define B       (GLOBAL / NDEV)
#define IMG     (28 * 28)
#define EPOCHS  2
#define MAXSTEP 64

static const char *text = "def pipe(data_path, num_shards, shard_id):\n"
                          "    jpegs, labels = fn.readers.caffe2(path=data_path, "
                          "num_shards=num_shards, shard_id=shard_id, random_shuffle=True, "
                          "initial_fill=64)\n"
                          "    images = fn.decoders.image(jpegs, output_type=types.GRAY)\n"
                          "    return images, labels\n";

/* what one step delivered: every device's images and keys */
typedef struct {
    unsigned char img[NDEV][B * IMG];
    char key[NDEV][B][32];
} step;

static step *ref; /* [EPOCHS][MAXSTEP] */
static int nref[EPOCHS];
static int64_t ref_len[EPOCHS];

static sl_status make(int caller_releases, int policy, int batch, const void *resume,
                      size_t resume_size, sl_iter **it, sl_err *e) {
    sl_iter_config c;
    sl_iter_config_init(&c);
    c.text = text;
    sl_pipeline_bind bind = {"data_path", fixture("caffe2-fmnist-256")};
    c.binds = &bind;
    c.nbinds = 1;
    CHECK_OK(sl_iter_parse_devices(policy < 0 ? "cpu:2" : "cpu", &c, e), e);
    c.batch_size = batch;
    c.num_threads = 2;
    c.seed = 7;
    c.prefetch_cpu = 2;
    c.last_batch_policy = policy;
    c.caller_releases = caller_releases;
    c.resume_bytes = resume;
    c.resume_size = resume_size;
    return sl_iter_create(&c, it, e);
}

static void record(const sl_iter_batch *b, step *s) {
    for (int d = 0; d < NDEV; d++) {
        sl_tensor t;
        sl_err e;
        CHECK_OK(sl_iter_shard(b, 0, d, &t, &e), &e);
        if (check_failures) return;
        CHECK_EQ_INT(t.shape[0], B);
        CHECK_EQ_INT(sl_tensor_nbytes(&t), B * IMG);
        memcpy(s->img[d], t.data, B * IMG);
        for (int i = 0; i < B; i++) snprintf(s->key[d][i], 32, "%s", sl_iter_key(b, d, i));
    }
}

/* the batch has step s's bytes and keys */
static bool same(const sl_iter_batch *b, const step *s) {
    step *now = calloc(1, sizeof *now); /* zeroed: keys are compared past their NUL */
    record(b, now);
    bool eq = memcmp(now, s, sizeof *now) == 0;
    free(now);
    return eq;
}

static void reference(void) {
    sl_iter *it;
    sl_err e;
    CHECK_OK(make(0, -1, GLOBAL, NULL, 0, &it, &e), &e);
    if (check_failures) return;
    CHECK_EQ_INT(sl_iter_max_held(it), 2); /* the prefetch depth */
    for (int ep = 0; ep < EPOCHS; ep++, sl_iter_reset(it)) {
        ref_len[ep] = sl_iter_len(it);
        const sl_iter_batch *b;
        sl_status st;
        while ((st = sl_iter_next(it, &b)) == SL_OK && nref[ep] < MAXSTEP)
            record(b, &ref[ep * MAXSTEP + nref[ep]++]);
        CHECK_EQ_INT(st, SL_EOF);
        CHECK_EQ_INT(nref[ep], ref_len[ep]);
    }
    CHECK_EQ_INT(nref[0], 256 / GLOBAL);
    /* the keys really differ from step to step (the comparisons below mean something) */
    CHECK(strcmp(ref[0].key[0][0], ref[1].key[0][0]) != 0);
    sl_iter_free(it);
}

static void test_hold_and_release(void) {
    sl_iter *it;
    sl_err e;
    CHECK_OK(make(1, -1, GLOBAL, NULL, 0, &it, &e), &e);
    if (check_failures) return;
    CHECK_EQ_INT(sl_iter_max_held(it), 3);
    CHECK_EQ_INT(sl_iter_len(it), ref_len[0]);
    sl_iter_release(it, NULL); /* a no-op */

    /* max_held without releasing (the first is the prepared one); all stay intact */
    const sl_iter_batch *h[3], *b;
    for (int k = 0; k < 3; k++) CHECK_OK(sl_iter_next(it, &h[k]), NULL);
    if (check_failures) return;
    for (int k = 0; k < 3; k++) CHECK_MSG(same(h[k], &ref[k]), "held batch %d", k);
    /* one more: refused, and nothing taken */
    CHECK_EQ_INT(sl_iter_next(it, &b), SL_ESTATE);
    CHECK(b == NULL);
    CHECK_MSG(strstr(sl_iter_errmsg(it), "3 batches are held: release one (sl_iter_release)"), "%s",
              sl_iter_errmsg(it));
    CHECK_EQ_INT(sl_iter_step(it), 3);
    CHECK_EQ_INT(sl_iter_next(it, &b), SL_ESTATE); /* still */
    /* give the middle one back: the next batch is step 3, and the other two are untouched */
    sl_iter_release(it, h[1]);
    sl_iter_release(it, h[1]); /* twice: ignored (a warning), does not free another slot */
    CHECK_OK(sl_iter_next(it, &h[1]), sl_iter_errmsg(it));
    CHECK(same(h[1], &ref[3]));
    CHECK(same(h[0], &ref[0]) && same(h[2], &ref[2]));
    CHECK_EQ_INT(sl_iter_next(it, &b), SL_ESTATE);
    /* back in reverse order of taking */
    sl_iter_release(it, h[1]);
    sl_iter_release(it, h[2]);
    sl_iter_release(it, h[0]);

    /* the rest of the epoch and the next: hold three, give back the oldest, then the newest, ...
     * (held batches carry over the epoch's end) */
    int s = 4, ep = 0, nh = 0, qs[3];
    const sl_iter_batch *q[3];
    for (;;) {
        sl_status st = sl_iter_next(it, &b);
        if (st == SL_EOF) {
            CHECK_EQ_INT(s, nref[ep]);
            if (++ep == EPOCHS) break;
            sl_iter_reset(it);
            CHECK_EQ_INT(sl_iter_len(it), ref_len[ep]);
            s = 0;
            continue;
        }
        CHECK_OK(st, sl_iter_errmsg(it));
        if (check_failures) break;
        CHECK_MSG(s < nref[ep] && same(b, &ref[ep * MAXSTEP + s]), "epoch %d step %d", ep, s);
        qs[nh] = ep * MAXSTEP + s++;
        q[nh++] = b;
        if (nh == 3) { /* every one held is still what it was */
            for (int k = 0; k < 3; k++) CHECK_MSG(same(q[k], &ref[qs[k]]), "held step %d", qs[k]);
            int drop = s % 2 ? 0 : 2;
            sl_iter_release(it, q[drop]);
            for (int k = drop; k < 2; k++) q[k] = q[k + 1], qs[k] = qs[k + 1];
            nh = 2;
        }
    }
    CHECK_EQ_INT(sl_iter_epoch(it), EPOCHS - 1);
    sl_iter_free(it); /* with batches still held */
}

/* a checkpoint while the caller holds batches: the resumed run continues with the next step */
static void test_checkpoint(void) {
    sl_iter *it;
    sl_err e;
    CHECK_OK(make(1, -1, GLOBAL, NULL, 0, &it, &e), &e);
    if (check_failures) return;
    const sl_iter_batch *h[3];
    for (int k = 0; k < 3; k++) CHECK_OK(sl_iter_next(it, &h[k]), sl_iter_errmsg(it));
    sl_iter_release(it, h[0]);
    CHECK_OK(sl_iter_next(it, &h[0]), sl_iter_errmsg(it));
    /* 4 taken, 3 held */
    void *ck;
    size_t n;
    CHECK_OK(sl_iter_save(it, NULL, 0, &ck, &n), NULL);
    sl_iter_free(it);
    CHECK_OK(make(1, -1, GLOBAL, ck, n, &it, &e), &e);
    free(ck);
    if (check_failures) return;
    CHECK_EQ_INT(sl_iter_step(it), 4);
    const sl_iter_batch *b;
    int s = 4;
    while (sl_iter_next(it, &b) == SL_OK) {
        CHECK_MSG(s < nref[0] && same(b, &ref[s]), "resumed step %d", s);
        s++;
        sl_iter_release(it, b);
    }
    CHECK_EQ_INT(s, nref[0]);
    sl_iter_free(it);
}

/* DROP on one device, 256 records at batch 24: 10 batches, the 11th taken and discarded; the
 * discarded one is not left held */
static void test_drop(void) {
    sl_iter *it;
    sl_err e;
    CHECK_OK(make(1, SL_LAST_BATCH_DROP, 24, NULL, 0, &it, &e), &e);
    if (check_failures) return;
    CHECK_EQ_INT(sl_iter_len(it), 10);
    const sl_iter_batch *b, *h[3] = {0};
    int n = 0;
    sl_status st;
    while ((st = sl_iter_next(it, &b)) == SL_OK) {
        sl_iter_release(it, h[n % 2]);
        h[n++ % 2] = b;
    }
    CHECK_EQ_INT(st, SL_EOF);
    CHECK_EQ_INT(n, 10);
    sl_iter_reset(it);
    /* two still held from the last epoch: one more may be taken, not two */
    CHECK_OK(sl_iter_next(it, &h[2]), sl_iter_errmsg(it));
    CHECK_EQ_INT(sl_iter_next(it, &b), SL_ESTATE);
    for (int k = 0; k < 3; k++) sl_iter_release(it, h[k]);
    for (int k = 0; k < 3; k++) CHECK_OK(sl_iter_next(it, &h[k]), sl_iter_errmsg(it));
    sl_iter_free(it);
}

#ifdef SLUICE_HAVE_DLPACK
static void *delete_all(void *arg) { /* a framework's thread dropping its arrays */
    DLManagedTensor **m = arg;
    for (int k = 0; m[k]; k++) m[k]->deleter(m[k]);
    return NULL;
}

static void delete_in_thread(DLManagedTensor **m) {
    pthread_t th;
    CHECK(pthread_create(&th, NULL, delete_all, m) == 0);
    pthread_join(th, NULL);
}

/* what export m of step s's device d holds is still that step's images */
static bool export_intact(const DLManagedTensor *m, int s, int d) {
    return memcmp(m->dl_tensor.data, ref[s].img[d], B * IMG) == 0;
}

static void test_exports(void) {
    sl_iter *it;
    sl_err e;
    CHECK_OK(make(1, -1, GLOBAL, NULL, 0, &it, &e), &e);
    if (check_failures) return;
    const sl_iter_batch *b0, *b;
    CHECK_OK(sl_iter_next(it, &b0), sl_iter_errmsg(it));
    DLManagedTensor *m[4] = {0};
    void *mv;
    for (int d = 0; d < NDEV; d++) {
        CHECK_OK(sl_iter_dlpack(b0, 0, d, 0, &mv, &e), &e);
        m[d] = mv;
    }
    CHECK_OK(sl_iter_dlpack(b0, 0, 1, SL_DLPACK_STACKED, &mv, &e), &e);
    m[2] = mv;
    if (check_failures) return;
    CHECK_EQ_INT(sl_iter_exports(it), 3);
    /* (1, B, 28, 28, 1): device 1's slice of a stacked batch, compact */
    CHECK_EQ_INT(m[2]->dl_tensor.ndim, 5);
    CHECK_EQ_INT(m[2]->dl_tensor.shape[0], 1);
    CHECK_EQ_INT(m[2]->dl_tensor.shape[1], B);
    CHECK_EQ_INT(m[2]->dl_tensor.strides[0], B * IMG);
    CHECK_EQ_INT(m[2]->dl_tensor.strides[1], IMG);
    CHECK(m[2]->dl_tensor.data == m[1]->dl_tensor.data);
    CHECK_EQ_INT(sl_iter_dlpack(b0, 0, 0, 4, &mv, &e), SL_EINVAL);
    CHECK(mv == NULL && strstr(e.msg, "flags 0x4"));
    /* given back while exported: still held, the bytes stay through the rest of the epoch */
    sl_iter_release(it, b0);
    CHECK_EQ_INT(sl_iter_held(it), 1);
    sl_iter_release(it, b0); /* twice: ignored */
    int s = 1;
    sl_status st;
    while ((st = sl_iter_next(it, &b)) == SL_OK) {
        CHECK_MSG(same(b, &ref[s]), "step %d with step 0 exported", s);
        s++;
        sl_iter_release(it, b);
        CHECK_EQ_INT(sl_iter_held(it), 1);
    }
    CHECK_EQ_INT(st, SL_EOF);
    CHECK_EQ_INT(s, nref[0]);
    for (int d = 0; d < NDEV; d++) CHECK_MSG(export_intact(m[d], 0, d), "device %d", d);
    delete_in_thread(m);
    CHECK_EQ_INT(sl_iter_exports(it), 0);
    CHECK_EQ_INT(sl_iter_held(it), 0);

    /* every slot given back but exported: the next batch is refused, naming why */
    sl_iter_reset(it);
    DLManagedTensor *all[4] = {0};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(sl_iter_next(it, &b), sl_iter_errmsg(it));
        CHECK_OK(sl_iter_dlpack(b, 1, 0, 0, &mv, &e), &e);
        all[k] = mv;
        sl_iter_release(it, b);
    }
    CHECK_EQ_INT(sl_iter_next(it, &b), SL_ESTATE);
    CHECK_MSG(strstr(sl_iter_errmsg(it), "3 of them only by DLPack exports"), "%s",
              sl_iter_errmsg(it));
    delete_in_thread(all);
    CHECK_OK(sl_iter_next(it, &b), sl_iter_errmsg(it));
    sl_iter_free(it);

    /* without caller_releases: rotation passes over an exported batch, which stays intact */
    CHECK_OK(make(0, -1, GLOBAL, NULL, 0, &it, &e), &e);
    if (check_failures) return;
    CHECK_OK(sl_iter_next(it, &b0), sl_iter_errmsg(it));
    DLManagedTensor *one[2] = {0};
    CHECK_OK(sl_iter_dlpack(b0, 0, 1, 0, &mv, &e), &e);
    one[0] = mv;
    for (s = 1; (st = sl_iter_next(it, &b)) == SL_OK; s++)
        CHECK_MSG(same(b, &ref[s]), "step %d (rotating) with step 0 exported", s);
    CHECK_EQ_INT(st, SL_EOF);
    CHECK(export_intact(one[0], 0, 1));
    delete_in_thread(one);
    CHECK_EQ_INT(sl_iter_exports(it), 0);
    /* a consumer may drop its array after the iterator is gone (ASan: no use after free) */
    sl_iter_reset(it);
    CHECK_OK(sl_iter_next(it, &b), sl_iter_errmsg(it));
    CHECK_OK(sl_iter_dlpack(b, 0, 0, 0, &mv, &e), &e);
    one[0] = mv;
    sl_iter_free(it);
    delete_in_thread(one);
}
#endif

/* binds: however many there are, every one reaches the pipeline (the last one here is the data
 * path); a bad list is refused, naming why */
static void test_binds(void) {
    enum { N = 120 };
    static sl_pipeline_bind binds[N];
    static char names[N][16];
    for (int i = 0; i < N - 1; i++) {
        snprintf(names[i], sizeof names[i], "x%d", i);
        binds[i] = (sl_pipeline_bind){names[i], "1"};
    }
    binds[N - 1] = (sl_pipeline_bind){"data_path", fixture("caffe2-fmnist-256")};
    sl_iter_config c;
    sl_iter_config_init(&c);
    c.text = text;
    c.binds = binds;
    c.nbinds = N;
    c.batch_size = 16;
    c.num_threads = 1;
    sl_iter *it;
    sl_err e;
    CHECK_OK(sl_iter_create(&c, &it, &e), &e);
    if (check_failures) return;
    const sl_iter_batch *b;
    CHECK_OK(sl_iter_next(it, &b), sl_iter_errmsg(it));
    sl_iter_free(it);
    c.nbinds = -1;
    CHECK_EQ_INT(sl_iter_create(&c, &it, &e), SL_EINVAL);
    CHECK_MSG(strstr(e.msg, "-1 binds"), "%s", e.msg);
    c.nbinds = 2;
    c.binds = NULL;
    CHECK_EQ_INT(sl_iter_create(&c, &it, &e), SL_EINVAL);
    CHECK_MSG(strstr(e.msg, "no array"), "%s", e.msg);
    c.binds = binds;
    binds[1].name = NULL;
    CHECK_EQ_INT(sl_iter_create(&c, &it, &e), SL_EINVAL);
    CHECK_MSG(strstr(e.msg, "bind 1 has no name"), "%s", e.msg);
    binds[1].name = names[1];
}

/* the pipeline's limit: its slots, 2 * prefetch_cpu + 1, one more with a read stage */
static void test_pipeline_limit(void) {
    const char *texts[2] = {"def pipe(data_path):\n"
                            "    jpegs, labels = fn.readers.caffe2(path=data_path)\n"
                            "    return jpegs, labels\n",
                            text};
    for (int t = 0; t < 2; t++) {
        sl_pipeline_config cfg;
        sl_pipeline_config_init(&cfg);
        cfg.batch_size = 8;
        cfg.num_threads = 1;
        cfg.prefetch_cpu = 2;
        sl_pipeline_bind binds[3] = {
            {"data_path", fixture("caffe2-fmnist-256")}, {"num_shards", "1"}, {"shard_id", "0"}};
        sl_err e;
        sl_pipeline *p = check_pipeline(&cfg, texts[t], "t.py", 3, binds, &e);
        CHECK_MSG(p, "%s", e.msg);
        if (!p) return;
        int max = sl_pipeline_max_held(p);
        CHECK_EQ_INT(max, t == 0 ? 5 : 6); /* the decoder gives the reader a stage */
        sl_batch *held[8];
        for (int k = 0; k < max; k++) CHECK_OK(sl_pipeline_next(p, &held[k]), NULL);
        sl_batch *b;
        CHECK_EQ_INT(sl_pipeline_next(p, &b), SL_ESTATE);
        CHECK(strstr(sl_pipeline_errmsg(p), "batches are held"));
        sl_pipeline_release(p, held[0]);
        CHECK_OK(sl_pipeline_next(p, &held[0]), NULL);
        CHECK_EQ_INT(sl_batch_index(held[0]), max);
        for (int k = 0; k < max; k++) sl_pipeline_release(p, held[k]);
        sl_pipeline_free(p);
    }
}

/* ---- stop and wait ------------------------------------------------------------------------- */

static int threads_now(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* The thread count once it is down to `want`, or after 2 s: a joined thread can stay listed in
 * /proc a moment after pthread_join returns (the kernel reaps it just after). */
static int threads_settled(int want) {
    int n = threads_now();
    for (int k = 0; k < 200 && n > want; k++) {
        struct timespec ms10 = {0, 10 * 1000 * 1000};
        nanosleep(&ms10, NULL);
        n = threads_now();
    }
    return n;
}

/* a source whose batch `gate_at` waits until the gate opens */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int64_t gate_at;
} gated;

static sl_status gated_shape(void *user, const sl_source_info *info, sl_dtype *dtype, int *ndim,
                             int64_t *shape, sl_err *err) {
    (void)err;
    gated *g = user;
    if (info->iteration >= g->gate_at && info->idx_in_batch == 0) {
        pthread_mutex_lock(&g->mu);
        while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
        pthread_mutex_unlock(&g->mu);
    }
    *dtype = SL_DTYPE_I32;
    *ndim = 1;
    shape[0] = 1;
    return SL_OK;
}

static sl_status gated_fill(void *user, const sl_source_info *info, void *dst, size_t nbytes,
                            sl_err *err) {
    (void)user, (void)err, (void)nbytes;
    int32_t v = (int32_t)info->sample;
    memcpy(dst, &v, sizeof v);
    return SL_OK;
}

static void test_stop_and_wait(void) {
    int base = threads_now();
    gated g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 2};
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = 4;
    cfg.num_threads = 2;
    sl_pipeline *p = NULL;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&cfg, &p, &e), &e);
    if (check_failures) return;
    sl_source src = {gated_shape, gated_fill, &g, NULL, NULL, NULL, NULL, false};
    CHECK_OK(sl_pipeline_add_source(p, "gated", &src), NULL);
    CHECK_OK(sl_pipeline_parse(p,
                               "def pipe():\n"
                               "    return fn.external_source(source=gated)\n",
                               "gated.py", 0, NULL, &e),
             &e);
    CHECK_OK(sl_pipeline_build(p), sl_pipeline_errmsg(p));
    if (check_failures) return;
    CHECK(threads_now() > base);
    sl_batch *b[3];
    for (int k = 0; k < 2; k++) {
        CHECK_OK(sl_pipeline_wait(p, -1), NULL);
        CHECK_OK(sl_pipeline_next(p, &b[k]), sl_pipeline_errmsg(p));
    }
    if (check_failures) return;
    /* batch 2 waits for the gate: the wait gives up, several times, and takes nothing */
    for (int k = 0; k < 3; k++) CHECK_EQ_INT(sl_pipeline_wait(p, 20), SL_ETIMEOUT);
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    CHECK_OK(sl_pipeline_wait(p, -1), NULL);
    CHECK_OK(sl_pipeline_next(p, &b[2]), sl_pipeline_errmsg(p));
    if (check_failures) return;
    CHECK_EQ_INT(sl_batch_index(b[2]), 2);
    /* stopped: the threads are gone, the batches held keep their samples */
    sl_pipeline_stop(p);
    CHECK_EQ_INT(threads_settled(base), base);
    for (int k = 0; k < 3; k++) {
        const sl_tlist *l = sl_batch_output(b[k], 0);
        for (int i = 0; i < 4; i++) CHECK_EQ_INT(*(const int32_t *)l->data[i], k * 4 + i);
    }
    CHECK_OK(sl_pipeline_wait(p, -1), NULL); /* next has its error to give at once */
    sl_batch *more;
    CHECK_EQ_INT(sl_pipeline_next(p, &more), SL_ESTATE);
    CHECK(strstr(sl_pipeline_errmsg(p), "stopped"));
    sl_pipeline_stop(p); /* again: nothing */
    for (int k = 0; k < 3; k++) sl_pipeline_release(p, b[k]);
    sl_pipeline_free(p);

    /* the iterator: the same over its pipelines */
    sl_iter *it;
    CHECK_OK(make(1, -1, GLOBAL, NULL, 0, &it, &e), &e);
    if (check_failures) return;
    const sl_iter_batch *h;
    CHECK_OK(sl_iter_wait(it, -1), NULL);
    CHECK_OK(sl_iter_next(it, &h), sl_iter_errmsg(it));
    CHECK_OK(sl_iter_wait(it, -1), NULL);
    CHECK_OK(sl_iter_next(it, &h), sl_iter_errmsg(it));
    if (check_failures) return;
    sl_iter_stop(it);
    CHECK_EQ_INT(threads_settled(base), base);
    CHECK(same(h, &ref[1]));
    const sl_iter_batch *none;
    CHECK_OK(sl_iter_wait(it, 1000), NULL);
    CHECK(sl_iter_next(it, &none) < 0 && none == NULL);
    sl_iter_release(it, h);
    sl_iter_free(it);
}

int main(void) {
    ref = calloc(EPOCHS * MAXSTEP, sizeof *ref);
    reference();
    if (!check_failures) test_hold_and_release();
    if (!check_failures) test_checkpoint();
    if (!check_failures) test_binds();
#ifdef SLUICE_HAVE_DLPACK
    if (!check_failures) test_exports();
#endif
    test_drop();
    test_pipeline_limit();
    if (!check_failures) test_stop_and_wait();
    free(ref);
    return check_done();
}
