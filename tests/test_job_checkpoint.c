/* SPDX-License-Identifier: Apache-2.0 */
/* A training job's checkpoint file (sluice/checkpoint.h): parts of three processes written and
 * each read back as it was; the bytes of the format laid out by hand (a file written before the
 * format moved into the library reads the same); a file of another process count refused, or,
 * with any_size, part 0 for every rank; and every truncation, a flipped byte, a foreign file, a
 * folder and a missing file refused with an error that names the file. The trainer's state
 * (model and optimiser) saved, peeked at and loaded into another trainer, and a state whose
 * lengths do not add up refused. One-hot labels and the accuracy over an iterator's epoch. */
#include "check.h"
#include "sluice/checkpoint.h"
#include "sluice/evaluate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char path[4096];

static void write_bytes(const char *p, const void *b, size_t n) {
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ_INT(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void round_trip(void) {
    const char *a = "rank zero's state", *c = "the third";
    const void *parts[3] = {a, "", c};
    const size_t sizes[3] = {strlen(a), 0, strlen(c)};
    sl_err e;
    CHECK_OK(sl_checkpoint_write(path, 3, parts, sizes, &e), &e);
    for (int r = 0; r < 3; r++) {
        void *b = NULL;
        size_t n = 99;
        CHECK_OK(sl_checkpoint_read(path, r, 3, false, &b, &n, &e), &e);
        CHECK_EQ_INT(n, sizes[r]);
        CHECK(b && !memcmp(b, parts[r], n));
        free(b);
    }
    /* another process count: refused, or part 0 for every rank with any_size */
    void *b = NULL;
    size_t n = 0;
    CHECK_FAILS(sl_checkpoint_read(path, 0, 2, false, &b, &n, &e), SL_EINVAL, &e,
                "was written by 3 process(es), this run has 2");
    CHECK(check_needle_missing(e.msg, path) == 0);
    CHECK_OK(sl_checkpoint_read(path, 1, 2, true, &b, &n, &e), &e);
    CHECK(n == sizes[0] && b && !memcmp(b, a, n));
    free(b);
}

/* The format's bytes, laid out here by hand: "SLMR", version 1, 2 parts, (u64 length, bytes)
 * each, CRC-32 of all before it -- what files written before this library held. */
static void known_bytes(void) {
    unsigned char f[12 + 8 + 3 + 8 + 2 + 4];
    memcpy(f, "SLMR", 4);
    const unsigned char head[8] = {1, 0, 0, 0, 2, 0, 0, 0};
    memcpy(f + 4, head, 8);
    const unsigned char l3[8] = {3}, l2[8] = {2};
    memcpy(f + 12, l3, 8);
    memcpy(f + 20, "abc", 3);
    memcpy(f + 23, l2, 8);
    memcpy(f + 31, "xy", 2);
    /* CRC-32 (zlib's polynomial) computed bit by bit, apart from the library's */
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < 33; i++) {
        crc ^= f[i];
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
    }
    crc ^= 0xffffffffu;
    for (int k = 0; k < 4; k++) f[33 + k] = (unsigned char)(crc >> (8 * k));
    write_bytes(path, f, sizeof f);
    sl_err e;
    void *b = NULL;
    size_t n = 0;
    CHECK_OK(sl_checkpoint_read(path, 1, 2, false, &b, &n, &e), &e);
    CHECK(n == 2 && b && !memcmp(b, "xy", 2));
    free(b);
    /* and the library packs the same bytes */
    const void *parts[2] = {"abc", "xy"};
    const size_t sizes[2] = {3, 2};
    void *packed = NULL;
    CHECK_OK(sl_checkpoint_pack(2, parts, sizes, &packed, &n, &e), &e);
    CHECK(n == sizeof f && packed && !memcmp(packed, f, n));
    free(packed);
}

/* Every truncation, a flipped byte in each place, and files that are not checkpoints: an error
 * naming the file, never a crash (ASan runs this). */
static void damaged(void) {
    const void *parts[2] = {"first part", "second"};
    const size_t sizes[2] = {10, 6};
    sl_err e;
    void *good = NULL, *b = NULL;
    size_t n = 0, bn = 0;
    CHECK_OK(sl_checkpoint_pack(2, parts, sizes, &good, &n, &e), &e);
    if (!good) return;
    for (size_t cut = 0; cut < n; cut++) {
        write_bytes(path, good, cut);
        sl_status st = sl_checkpoint_read(path, 0, 2, false, &b, &bn, &e);
        CHECK_MSG(st == SL_EFORMAT, "cut at %zu: %s", cut, sl_status_name(st));
        CHECK_MSG(!check_needle_missing(e.msg, path), "cut at %zu: %s", cut, e.msg);
    }
    unsigned char *bad = malloc(n);
    for (size_t at = 0; bad && at < n; at++) {
        memcpy(bad, good, n);
        bad[at] ^= 0x40;
        write_bytes(path, bad, n);
        sl_status st = sl_checkpoint_read(path, 1, 2, false, &b, &bn, &e);
        CHECK_MSG(st != SL_OK, "byte %zu flipped: read", at);
        if (st == SL_OK) free(b);
        CHECK_MSG(!check_needle_missing(e.msg, path), "byte %zu: %s", at, e.msg);
    }
    free(bad);
    free(good);
    write_bytes(path, "SLCK not this format, a different one", 37);
    CHECK_FAILS(sl_checkpoint_read(path, 0, 1, false, &b, &bn, &e), SL_EFORMAT, &e,
                "not a sluice checkpoint");
    CHECK(!check_needle_missing(e.msg, path));
    CHECK_FAILS(sl_checkpoint_read(scratch_dir("job_checkpoint_dir"), 0, 1, false, &b, &bn, &e),
                SL_EINVAL, &e, "not a regular file (a directory)");
    char missing[4200];
    snprintf(missing, sizeof missing, "%s.missing", path);
    CHECK_FAILS(sl_checkpoint_read(missing, 0, 1, false, &b, &bn, &e), SL_ENOENT, &e, missing);
    const void *none[1] = {NULL};
    const size_t zero[1] = {0};
    CHECK_FAILS(sl_checkpoint_pack(0, none, zero, &b, &bn, &e), SL_EINVAL, &e, "0 parts");
}

static void trainer_state(void) {
    sl_trainer_config tc;
    sl_trainer_config_default(&tc);
    tc.model.nsizes = 3;
    tc.model.sizes[0] = 6, tc.model.sizes[1] = 5, tc.model.sizes[2] = 3;
    tc.model.seed = 7;
    tc.replicas = 1;
    tc.devices[0] = sl_cpu();
    sl_err e;
    sl_trainer *a = NULL, *b = NULL;
    CHECK_OK(sl_trainer_create(&tc, &a, &e), &e);
    tc.model.seed = 8;
    CHECK_OK(sl_trainer_create(&tc, &b, &e), &e);
    if (!a || !b) goto out;
    void *st = NULL;
    size_t n = 0;
    CHECK_OK(sl_trainer_state_save(a, &st, &n, &e), &e);
    sl_mlp_config peek;
    CHECK_OK(sl_trainer_state_peek(st, n, &peek, &e), &e);
    CHECK_EQ_INT(peek.nsizes, 3);
    CHECK_EQ_INT(peek.sizes[1], 5);
    CHECK_OK(sl_trainer_state_load(b, st, n, &e), &e);
    void *sa = NULL, *sb = NULL;
    size_t na = 0, nb = 0;
    CHECK_OK(sl_trainer_state_save(a, &sa, &na, &e), &e);
    CHECK_OK(sl_trainer_state_save(b, &sb, &nb, &e), &e);
    CHECK(na == nb && sa && sb && !memcmp(sa, sb, na)); /* b now holds a's weights */
    free(sa);
    free(sb);
    CHECK_FAILS(sl_trainer_state_load(b, st, 15, &e), SL_EFORMAT, &e, "no model state");
    CHECK_FAILS(sl_trainer_state_load(b, st, n - 1, &e), SL_EFORMAT, &e, "bad model state lengths");
    free(st);
out:
    sl_trainer_free(a);
    sl_trainer_free(b);
}

static void onehot(void) {
    sl_err e;
    sl_onehot *oh = NULL;
    CHECK_FAILS(sl_onehot_create(0, &oh, &e), SL_EINVAL, &e, "0 classes");
    CHECK_OK(sl_onehot_create(4, &oh, &e), &e);
    if (!oh) return;
    int16_t ids[3] = {2, 0, 3};
    const int64_t shape[2] = {3, 1};
    sl_tensor y, out;
    CHECK_OK(sl_tensor_wrap(&y, ids, SL_DTYPE_I16, sl_cpu(), 2, shape, NULL), NULL);
    CHECK_OK(sl_onehot_make(oh, NULL, 0, &y, sl_cpu(), &out, &e), &e);
    CHECK_EQ_INT(out.ndim, 2);
    CHECK_EQ_INT(out.shape[1], 4);
    const float want[12] = {0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1};
    CHECK(out.dtype == SL_DTYPE_F32 && !memcmp(out.data, want, sizeof want));
    sl_onehot_next(oh);
    ids[1] = 4;
    CHECK_FAILS(sl_onehot_make(oh, NULL, 0, &y, sl_cpu(), &out, &e), SL_EINVAL, &e,
                "row 1: label 4 is not a class id in 0..3 (num_classes=4)");
    sl_onehot_free(oh);
    sl_onehot_free(NULL);
}

/* An iterator over the 256 records of the fixture: the seed's validation pipeline, batch of
 * batch, under policy. */
static sl_iter *val_iter(int batch, int policy, sl_err *e) {
    sl_pipeline_bind binds[2] = {{"data_path", fixture("caffe2-fmnist-256")}, {"image_size", "28"}};
    char *text = check_read_text(tool_pipeline("seed_validation.py"));
    sl_iter_config c;
    sl_iter_config_init(&c);
    c.text = text;
    c.filename = "seed_validation.py";
    c.binds = binds;
    c.nbinds = 2;
    c.batch_size = batch;
    c.last_batch_policy = policy;
    c.layout = SL_LAYOUT_NONE;
    CHECK_OK(sl_iter_parse_devices("cpu", &c, e), e);
    sl_iter *it = NULL;
    CHECK_OK(sl_iter_create(&c, &it, e), e);
    free(text);
    return it;
}

/* The accuracy over batches of 100 (the last one 56 real samples and 44 of padding) is the one
 * over a single batch of all 256: the padding is not scored. */
static void accuracy(void) {
    sl_err e;
    sl_mlp_config mc;
    sl_mlp_config_default(&mc);
    mc.nsizes = 3;
    mc.sizes[0] = 784, mc.sizes[1] = 16, mc.sizes[2] = 10;
    sl_mlp *m = NULL;
    CHECK_OK(sl_mlp_create(&mc, sl_cpu(), &m, &e), &e);
    sl_iter *whole = val_iter(256, SL_LAST_BATCH_PARTIAL, &e);
    sl_iter *parts = val_iter(100, SL_LAST_BATCH_PARTIAL, &e);
    if (!m || !whole || !parts) goto out;
    const sl_iter_batch *b = NULL;
    sl_tensor x, xf, y;
    int64_t correct = -1;
    CHECK_OK(sl_iter_next(whole, &b), NULL);
    CHECK_OK(sl_iter_shard(b, 0, 0, &x, &e), &e);
    CHECK_OK(sl_evaluate_flat(&x, 784, &xf, &e), &e);
    CHECK_OK(sl_iter_shard(b, 1, 0, &y, &e), &e);
    CHECK_EQ_INT(xf.shape[0], 256);
    CHECK_OK(sl_mlp_evaluate(m, &xf, &y, &correct, NULL, &e), &e);
    double acc = -1;
    CHECK_OK(sl_evaluate_accuracy(m, parts, NULL, 784, &acc, &e), &e);
    CHECK_NEAR(acc, (double)correct / 256.0, 0);
    CHECK_EQ_INT(sl_iter_epoch(parts), 1); /* reset after the epoch */
    /* a batch already taken is scored first, then the rest of the epoch */
    const sl_iter_batch *first = NULL;
    CHECK_OK(sl_iter_next(parts, &first), NULL);
    CHECK_OK(sl_evaluate_accuracy(m, parts, &first, 784, &acc, &e), &e);
    CHECK(first == NULL);
    CHECK_NEAR(acc, (double)correct / 256.0, 0);
out:
    sl_iter_free(whole);
    sl_iter_free(parts);
    sl_mlp_free(m);
}

int main(void) {
    snprintf(path, sizeof path, "%s/ck", scratch_dir("job_checkpoint"));
    round_trip();
    known_bytes();
    damaged();
    trainer_state();
    onehot();
    accuracy();
    return check_done();
}
