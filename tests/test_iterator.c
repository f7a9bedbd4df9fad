/* SPDX-License-Identifier: Apache-2.0 */
/* The iterator: DALI's len/size table for 60000 and 10000 records on 1..8 devices (and how it
 * changes from epoch to epoch), the FILL/DROP examples of docs/dali.md 2.4, sharded vs
 * stacked layouts against the per-device batches, DLPack export, and checkpoints (resume gives
 * exactly the uninterrupted run's batches; truncated or altered files are refused). The data are
 * small IDX files written here, read through readers.mnist (a real reader op). */
#include "check.h"

#include "sluice/iterator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_DLPACK
#include <dlpack/dlpack.h>
#endif

static void put_be32(FILE *f, uint32_t v) {
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    fwrite(b, 1, 4, f);
}

/* n images of 1x2 pixels: pixel 0 = i % 251, pixel 1 = i / 251 % 251 (identifies the record) */
static void write_idx(const char *dir, int n, char *images, char *labels) {
    sprintf(images, "%s/img-%d", dir, n);
    sprintf(labels, "%s/lab-%d", dir, n);
    FILE *f = fopen(images, "wb");
    put_be32(f, 0x00000803);
    put_be32(f, (uint32_t)n);
    put_be32(f, 1);
    put_be32(f, 2);
    for (int i = 0; i < n; i++) {
        fputc(i % 251, f);
        fputc(i / 251 % 251, f);
    }
    fclose(f);
    f = fopen(labels, "wb");
    put_be32(f, 0x00000801);
    put_be32(f, (uint32_t)n);
    for (int i = 0; i < n; i++) fputc(i % 10, f);
    fclose(f);
}

typedef struct {
    const char *images, *labels;
    int shuffle, pad, stick;
} src;

static sl_status build(sl_pipeline *p, int shard_id, int num_shards, void *user, sl_err *err) {
    src *s = user;
    char v[1200];
    int out[2];
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "readers.mnist");
    if (!op) return sl_err_set(err, SL_EINVAL, "%s", sl_pipeline_errmsg(p));
    snprintf(v, sizeof v, "\"%s\"", s->images);
    sl_pipeline_op_arg(op, "path", v);
    snprintf(v, sizeof v, "\"%s\"", s->labels);
    sl_pipeline_op_arg(op, "labels", v);
    sl_pipeline_op_arg(op, "name", "\"r\"");
    sl_pipeline_op_arg(op, "random_shuffle", s->shuffle ? "True" : "False");
    sl_pipeline_op_arg(op, "pad_last_batch", s->pad ? "True" : "False");
    sl_pipeline_op_arg(op, "stick_to_shard", s->stick ? "True" : "False");
    snprintf(v, sizeof v, "%d", num_shards);
    sl_pipeline_op_arg(op, "num_shards", v);
    snprintf(v, sizeof v, "%d", shard_id);
    sl_pipeline_op_arg(op, "shard_id", v);
    sl_status st = sl_pipeline_op_end(op, out, 2, NULL);
    if (st) return sl_err_set(err, st, "%s", sl_pipeline_errmsg(p));
    const char *names[2] = {"images", "labels"};
    return sl_pipeline_set_outputs(p, 2, out, names);
}

static sl_status make_iter(src *s, int ndev, int batch, int policy, sl_iter **it, sl_err *e) {
    sl_iter_config c;
    sl_iter_config_init(&c);
    c.build = build;
    c.build_user = s;
    c.ndevices = ndev;
    for (int i = 0; i < ndev; i++) c.devices[i] = sl_cpu();
    c.batch_size = batch;
    c.num_threads = 1;
    c.reader_name = "r";
    c.last_batch_policy = policy;
    c.layout = SL_LAYOUT_SHARDED;
    return sl_iter_create(&c, it, e);
}

/* record id of sample s of device d: from the two pixels */
static int record_of(const sl_iter_batch *b, int d, int s) {
    sl_tensor t;
    sl_err e;
    if (sl_iter_shard(b, 0, d, &t, &e) != SL_OK) return -1;
    const uint8_t *px = (const uint8_t *)t.data + (size_t)s * 2;
    return px[0] + 251 * px[1];
}

static void test_dali_table(const char *dir) {
    char img[1024], lab[1024];
    write_idx(dir, 60000, img, lab);
    src s = {img, lab, 0, 0, 0};
    /* devices -> len per epoch for the first 3 epochs and size (docs/dali.md 2.3; later
     * epochs from DALI's own bookkeeping, computed by its Python code) */
    const struct {
        int ndev;
        int64_t len[3], size0;
    } table[] = {{1, {300, 300, 300}, 60000}, {2, {300, 300, 300}, 30000},
                 {3, {304, 303, 303}, 20064}, {4, {300, 300, 300}, 15000},
                 {7, {307, 306, 306}, 8596},  {8, {300, 300, 300}, 7500}};
    for (size_t t = 0; t < sizeof table / sizeof table[0]; t++) {
        sl_iter *it;
        sl_err e;
        CHECK_OK(make_iter(&s, table[t].ndev, 200, -1, &it, &e), &e);
        if (check_failures) return;
        CHECK_EQ_INT(sl_iter_size(it), table[t].size0);
        CHECK_EQ_INT(sl_iter_device_batch(it), 200 / table[t].ndev);
        for (int ep = 0; ep < 3; ep++) {
            CHECK_EQ_INT(sl_iter_len(it), table[t].len[ep]);
            const sl_iter_batch *b;
            int64_t n = 0;
            while (sl_iter_next(it, &b) == SL_OK) n++;
            CHECK_MSG(n == table[t].len[ep], "%d devices, epoch %d: %lld batches, want %lld",
                      table[t].ndev, ep, (long long)n, (long long)table[t].len[ep]);
            sl_iter_reset(it);
        }
        sl_iter_free(it);
    }
    /* validation: 10000 records, one pipeline, batch 200 */
    write_idx(dir, 10000, img, lab);
    sl_iter *it;
    sl_err e;
    CHECK_OK(make_iter(&s, 1, 200, -1, &it, &e), &e);
    CHECK_EQ_INT(sl_iter_len(it), 50);
    CHECK_EQ_INT(sl_iter_size(it), 10000);
    sl_iter_free(it);
}

/* docs/dali.md 2.4: data 1..7 (records 0..6 here), batch 2 */
static void test_last_batch(const char *dir) {
    char img[1024], lab[1024];
    write_idx(dir, 7, img, lab);
    const struct {
        int policy, pad;
        int last[2], next[2];
    } cases[] = {
        {SL_LAST_BATCH_FILL, 1, {6, 6}, {0, 1}},
        {SL_LAST_BATCH_FILL, 0, {6, 0}, {1, 2}},
        {SL_LAST_BATCH_DROP, 1, {4, 5}, {0, 1}},
        {SL_LAST_BATCH_DROP, 0, {4, 5}, {1, 2}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        src s = {img, lab, 0, cases[k].pad, 0};
        sl_iter *it;
        sl_err e;
        CHECK_OK(make_iter(&s, 1, 2, cases[k].policy, &it, &e), &e);
        if (check_failures) return;
        const sl_iter_batch *b;
        int last[2] = {-1, -1}, n = 0;
        while (sl_iter_next(it, &b) == SL_OK) {
            last[0] = record_of(b, 0, 0);
            last[1] = record_of(b, 0, 1);
            n++;
        }
        CHECK_MSG(last[0] == cases[k].last[0] && last[1] == cases[k].last[1],
                  "case %zu: last batch [%d, %d], want [%d, %d]", k, last[0], last[1],
                  cases[k].last[0], cases[k].last[1]);
        CHECK_EQ_INT(n, cases[k].policy == SL_LAST_BATCH_DROP ? 3 : 4);
        sl_iter_reset(it);
        CHECK_OK(sl_iter_next(it, &b), NULL);
        CHECK_MSG(record_of(b, 0, 0) == cases[k].next[0] && record_of(b, 0, 1) == cases[k].next[1],
                  "case %zu: next batch [%d, %d], want [%d, %d]", k, record_of(b, 0, 0),
                  record_of(b, 0, 1), cases[k].next[0], cases[k].next[1]);
        sl_iter_free(it);
    }
}

static void test_layouts(const char *dir) {
    char img[1024], lab[1024];
    write_idx(dir, 1000, img, lab);
    src s = {img, lab, 1, 0, 0};
    sl_iter *it;
    sl_err e;
    CHECK_OK(make_iter(&s, 4, 40, -1, &it, &e), &e);
    if (check_failures) return;
    const sl_iter_batch *b;
    CHECK_OK(sl_iter_next(it, &b), NULL);
    sl_tensor g;
    CHECK_OK(sl_iter_global(b, 0, &g, &e), &e);
    CHECK_EQ_INT(g.ndim, 4);
    CHECK_EQ_INT(g.shape[0], 40); /* sharded: (devices * B, H, W, C) */
    size_t off = 0;
    for (int d = 0; d < 4; d++) {
        sl_tensor sh;
        CHECK_OK(sl_iter_shard(b, 0, d, &sh, &e), &e);
        CHECK_EQ_INT(sh.shape[0], 10);
        CHECK(memcmp((char *)g.data + off, sh.data, sl_tensor_nbytes(&sh)) == 0);
        off += sl_tensor_nbytes(&sh);
    }
    CHECK_EQ_INT(off, sl_tensor_nbytes(&g));
    sl_tensor lg;
    CHECK_OK(sl_iter_global(b, 1, &lg, &e), &e);
    CHECK_EQ_INT(lg.shape[0], 40);
    CHECK_EQ_INT(lg.shape[1], 1);
#ifdef SLUICE_HAVE_DLPACK
    void *mv;
    CHECK_OK(sl_iter_dlpack(b, 0, 2, 0, &mv, &e), &e);
    DLManagedTensor *m = mv;
    sl_tensor sh2;
    sl_iter_shard(b, 0, 2, &sh2, &e);
    CHECK(m->dl_tensor.data == sh2.data); /* zero-copy */
    CHECK_EQ_INT(m->dl_tensor.ndim, 4);
    CHECK_EQ_INT(m->dl_tensor.shape[0], 10);
    CHECK_EQ_INT(m->dl_tensor.dtype.bits, 8);
    CHECK_EQ_INT(m->dl_tensor.device.device_type, kDLCPU);
    m->deleter(m);
#endif
    sl_iter_free(it);

    /* stacked: the same bytes, shape (devices, B, ...) */
    sl_iter_config c;
    sl_iter_config_init(&c);
    c.build = build;
    c.build_user = &s;
    c.ndevices = 4;
    for (int i = 0; i < 4; i++) c.devices[i] = sl_cpu();
    c.batch_size = 40;
    c.reader_name = "r";
    c.layout = SL_LAYOUT_STACKED;
    CHECK_OK(sl_iter_create(&c, &it, &e), &e);
    if (check_failures) return;
    CHECK_OK(sl_iter_next(it, &b), NULL);
    sl_tensor st;
    CHECK_OK(sl_iter_global(b, 0, &st, &e), &e);
    CHECK_EQ_INT(st.ndim, 5);
    CHECK_EQ_INT(st.shape[0], 4);
    CHECK_EQ_INT(st.shape[1], 10);
    CHECK_EQ_INT(sl_tensor_nbytes(&st), sl_tensor_nbytes(&g));
    /* same seed, same data: the same first batch as the sharded run */
    src s2 = s;
    sl_iter *it2;
    CHECK_OK(make_iter(&s2, 4, 40, -1, &it2, &e), &e);
    const sl_iter_batch *b2;
    CHECK_OK(sl_iter_next(it2, &b2), NULL);
    sl_tensor g2;
    CHECK_OK(sl_iter_global(b2, 0, &g2, &e), &e);
    CHECK(memcmp(g2.data, st.data, sl_tensor_nbytes(&st)) == 0);
    sl_iter_free(it2);
    sl_iter_free(it);
}

/* records of every step from now to the end of epoch `until` */
static int run_until(sl_iter *it, int until, int *recs, int cap) {
    int n = 0;
    while (sl_iter_epoch(it) < until) {
        const sl_iter_batch *b;
        sl_status st;
        while ((st = sl_iter_next(it, &b)) == SL_OK)
            for (int d = 0; d < sl_iter_num_devices(it); d++)
                for (int s = 0; s < sl_iter_device_batch(it); s++)
                    if (n < cap) recs[n++] = record_of(b, d, s);
        if (st != SL_EOF) return -1;
        sl_iter_reset(it);
    }
    return n;
}

static void test_checkpoint(const char *dir) {
    char img[1024], lab[1024];
    write_idx(dir, 6000, img, lab);
    src s = {img, lab, 1, 0, 0};
    enum { CAP = 40000 };
    int *full = malloc(CAP * sizeof *full), *part = malloc(CAP * sizeof *part);
    sl_iter *it;
    sl_err e;
    /* uninterrupted: 3 epochs on 3 devices, global batch 200 (66 each) */
    CHECK_OK(make_iter(&s, 3, 200, -1, &it, &e), &e);
    if (check_failures) return;
    int nfull = run_until(it, 3, full, CAP);
    sl_iter_free(it);
    CHECK(nfull > 0);
    /* interrupted after 45 steps (31 batches per epoch: inside the second epoch), resumed */
    char ck[1100];
    snprintf(ck, sizeof ck, "%s/iter.ckpt", dir);
    CHECK_OK(make_iter(&s, 3, 200, -1, &it, &e), &e);
    int n = 0;
    for (int step = 0; step < 45;) {
        const sl_iter_batch *b;
        sl_status st = sl_iter_next(it, &b);
        if (st == SL_EOF) {
            sl_iter_reset(it);
            continue;
        }
        CHECK_OK(st, NULL);
        for (int d = 0; d < 3; d++)
            for (int k = 0; k < 66; k++) part[n++] = record_of(b, d, k);
        step++;
    }
    CHECK_EQ_INT(sl_iter_epoch(it), 1);
    CHECK_OK(sl_iter_checkpoint(it, ck), NULL);
    sl_iter_free(it);

    sl_iter_config c;
    sl_iter_config_init(&c);
    c.build = build;
    c.build_user = &s;
    c.ndevices = 3;
    for (int i = 0; i < 3; i++) c.devices[i] = sl_cpu();
    c.batch_size = 200;
    c.num_threads = 2;
    c.reader_name = "r";
    c.layout = SL_LAYOUT_SHARDED;
    c.resume = ck;
    CHECK_OK(sl_iter_create(&c, &it, &e), &e);
    if (check_failures) return;
    CHECK_EQ_INT(sl_iter_epoch(it), 1);
    int m = run_until(it, 3, part + n, CAP - n);
    sl_iter_free(it);
    CHECK_EQ_INT(n + m, nfull);
    CHECK(memcmp(full, part, (size_t)nfull * sizeof *full) == 0);

    /* a truncated and an altered checkpoint are refused with a clear error */
    FILE *f = fopen(ck, "rb");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len);
    CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    char bad[1100];
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    f = fopen(bad, "wb");
    fwrite(buf, 1, (size_t)len - 10, f);
    fclose(f);
    c.resume = bad;
    CHECK_FAILS(sl_iter_create(&c, &it, &e), SL_EFORMAT, &e, "truncated");
    buf[len / 2] ^= 0x10;
    f = fopen(bad, "wb");
    fwrite(buf, 1, (size_t)len, f);
    fclose(f);
    CHECK_FAILS(sl_iter_create(&c, &it, &e), SL_ECHECKSUM, &e, "altered");
    /* a checkpoint from another device count is refused */
    c.resume = ck;
    c.ndevices = 2;
    CHECK_FAILS(sl_iter_create(&c, &it, &e), SL_EINVAL, &e, "3 devices");
    free(buf);
    free(full);
    free(part);
}

static void test_devices_spec(void) {
    sl_iter_config c;
    sl_iter_config_init(&c);
    sl_err e;
    CHECK_OK(sl_iter_parse_devices("cpu:3", &c, &e), &e);
    CHECK_EQ_INT(c.ndevices, 3);
    CHECK_OK(sl_iter_parse_devices("cpu", &c, &e), &e);
    CHECK_EQ_INT(c.ndevices, 1);
    CHECK_FAILS(sl_iter_parse_devices("cpu:0", &c, &e), SL_EINVAL, &e, "cpu:K");
    CHECK_FAILS(sl_iter_parse_devices("gpu0", &c, &e), SL_EINVAL, &e, "expected");
}

int main(void) {
    const char *dir = scratch_dir("iterator");
    test_devices_spec();
    test_dali_table(dir);
    test_last_batch(dir);
    test_layouts(dir);
    test_checkpoint(dir);
    return check_done();
}
