/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile checkpoints: a real iterator checkpoint over the LMDB fixture (two devices, the reader's
 * shards), then forged variants whose CRC is recomputed as the writer does -- shard ids out of
 * range, huge and negative counters, epochs and steps, wrong device/shard/batch counts, wrong shard
 * sizes, pipeline blobs whose lengths run past the file, a hostile batch sequence number in a
 * pipeline snapshot, a damaged random state in the reader's snapshot, truncations -- are each
 * refused with an error naming the field (never a crash: `make test-asan` runs this). The
 * optimiser's state file: a forged step count. */
#include "check.h"
#include "core/bytes.h"
#include "sluice/iterator.h"
#include "sluice/train.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The layout iter_checkpoint.c writes (ck_header, ck_shape, sl__iter_book with 4096 shards). */
typedef struct {
    uint32_t magic, version, crc, pad;
    uint64_t payload;
} ck_header;
typedef struct {
    int32_t n, S, B, policy;
    int64_t seed_check;
} ck_shape;
typedef struct {
    int64_t counter, size;
    int epoch;
    int64_t step;
    int shards_id[SL_MAX_DEVICES];
    int64_t counter_per_gpu[4096];
    int64_t shard_sizes[4096];
} ck_book;

#define SHAPE_AT  sizeof(ck_header)
#define BOOK_AT   (SHAPE_AT + sizeof(ck_shape))
#define BLOB0_AT  (BOOK_AT + sizeof(ck_book)) /* u64 length, then the pipeline snapshot */
#define FIELD(f)  (BOOK_AT + offsetof(ck_book, f))
#define SFIELD(f) (SHAPE_AT + offsetof(ck_shape, f))

static const char *text =
    "@pipeline_def(batch_size=16, num_threads=1)\n"
    "def p(data_path, shard_id, num_shards):\n"
    "    jpegs, labels = fn.readers.caffe2(path=data_path, name=\"r\", shard_id=shard_id,\n"
    "                                      num_shards=num_shards)\n"
    "    return jpegs, labels\n";

static sl_pipeline_bind bind;

static void config(sl_iter_config *c) {
    sl_iter_config_init(c);
    c->text = text;
    c->filename = "hostile.py";
    c->binds = &bind;
    c->nbinds = 1;
    c->ndevices = 2;
    c->devices[0] = c->devices[1] = sl_cpu();
    c->batch_size = 16;
    c->num_threads = 1;
    c->reader_name = "r";
    c->layout = SL_LAYOUT_SHARDED;
}

static void fix_crc(unsigned char *b, size_t len) {
    ck_header h;
    memcpy(&h, b, sizeof h);
    h.payload = len - sizeof h;
    h.crc = (uint32_t)crc32(0L, b + sizeof h, (uInt)(len - sizeof h));
    memcpy(b, &h, sizeof h);
}

/* Resumes from (b, len); returns the status, the message in e. */
static sl_status resume(const unsigned char *b, size_t len, sl_err *e) {
    sl_iter_config c;
    config(&c);
    c.resume_bytes = b;
    c.resume_size = len;
    sl_iter *it = NULL;
    memset(e, 0, sizeof *e);
    sl_status st = sl_iter_create(&c, &it, e);
    if (st == SL_OK) { /* it must also run */
        const sl_iter_batch *bt;
        for (int k = 0; k < 40; k++) {
            sl_status s2 = sl_iter_next(it, &bt);
            if (s2 == SL_EOF) sl_iter_reset(it);
        }
    }
    sl_iter_free(it);
    return st;
}

static unsigned char *ck;
static size_t ck_len;

static void forge(const char *what, size_t at, const void *val, size_t n, const char *needle) {
    unsigned char *b = malloc(ck_len);
    memcpy(b, ck, ck_len);
    memcpy(b + at, val, n);
    fix_crc(b, ck_len);
    sl_err e;
    sl_status st = resume(b, ck_len, &e);
    CHECK_MSG(st != SL_OK, "%s: a forged checkpoint was accepted", what);
    CHECK_MSG(strstr(e.msg, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", what, e.msg,
              needle);
    free(b);
}

static void forge64(const char *what, size_t at, int64_t v, const char *needle) {
    forge(what, at, &v, sizeof v, needle);
}
static void forge32(const char *what, size_t at, int32_t v, const char *needle) {
    forge(what, at, &v, sizeof v, needle);
}

static void test_iterator_checkpoint(void) {
    sl_iter_config c;
    config(&c);
    sl_iter *it;
    sl_err e;
    CHECK_OK(sl_iter_create(&c, &it, &e), &e);
    if (check_failures) return;
    const sl_iter_batch *b;
    for (int k = 0; k < 5; k++) CHECK_OK(sl_iter_next(it, &b), NULL);
    void *bytes;
    CHECK_OK(sl_iter_save(it, NULL, 0, &bytes, &ck_len), NULL);
    sl_iter_free(it);
    ck = bytes;
    CHECK(ck_len > BLOB0_AT + 8 + 20);
    if (check_failures) return;

    /* the untouched checkpoint, CRC recomputed: resumes */
    unsigned char *same = malloc(ck_len);
    memcpy(same, ck, ck_len);
    fix_crc(same, ck_len);
    CHECK_OK(resume(same, ck_len, &e), &e);
    free(same);

    /* the book */
    forge32("shard id", FIELD(shards_id[0]), 7, "shards_id");
    forge32("negative shard id", FIELD(shards_id[1]), -1, "shards_id");
    forge32("shard id of an absent device", FIELD(shards_id[5]), 1, "shards_id");
    forge64("huge counter", FIELD(counter), INT64_MAX, "counter");
    forge64("negative counter", FIELD(counter), -16, "counter");
    forge64("huge per-shard counter", FIELD(counter_per_gpu[0]), INT64_MIN, "counter_per_gpu");
    forge64("per-shard counter past S", FIELD(counter_per_gpu[2]), 5, "counter_per_gpu");
    forge64("huge shard size", FIELD(shard_sizes[0]), (int64_t)1 << 40, "shard_sizes");
    forge64("shard size past S", FIELD(shard_sizes[3]), 128, "shard_sizes");
    forge64("negative size", FIELD(size), -1, "size");
    forge64("huge size", FIELD(size), INT64_MAX / 2, "size");
    forge32("negative epoch", FIELD(epoch), -1, "epoch");
    forge32("last epoch", FIELD(epoch), INT32_MAX, "epoch");
    forge64("huge step", FIELD(step), INT64_MAX, "step");
    forge64("negative step", FIELD(step), -1, "step");
    /* the shape */
    forge32("devices", SFIELD(n), 3, "devices");
    forge32("shards", SFIELD(S), 0, "shards");
    forge32("batch", SFIELD(B), -8, "batch");
    forge32("policy", SFIELD(policy), 77, "policy");
    /* lengths */
    forge64("blob past the end", BLOB0_AT, INT64_MAX, "truncated");
    forge64("blob length wraps", BLOB0_AT, -8, "truncated");
    /* the pipeline snapshot inside: magic, version, op count (u32 each), then the batch seq */
    const size_t snap = BLOB0_AT + 8;
    forge64("negative batch seq", snap + 12, -1, "seq");
    forge64("huge batch seq", snap + 12, INT64_MAX, "seq");
    forge32("operator count", snap + 8, 1000, "operators");
    forge64("operator state past the blob", snap + 20, INT64_MAX, "truncated");
    /* the reader's state (its length at snap + 20, then the loader's blob: magic, sizes, shards,
     * flags, seeds and position, 128 bytes, then the Philox stream: key, counter, buffer, index) */
    const size_t rng = snap + 28 + 128, rng_idx = rng + 40;
    int32_t idx;
    memcpy(&idx, ck + rng_idx, sizeof idx);
    CHECK_MSG(idx >= 0 && idx <= 4, "the random stream's index is not at %zu (read %d)", rng_idx,
              idx);
    forge32("random stream index", rng_idx, 260, "random state");
    forge32("random stream key", rng, 12345, "random state");

    /* truncations: at every length a few apart, CRC and payload recomputed */
    for (size_t cut = 0; cut < ck_len; cut += (cut < BLOB0_AT + 64 ? 7 : 1)) {
        if (cut > BLOB0_AT + 64 && cut < ck_len - 64) cut = ck_len - 64;
        unsigned char *t = malloc(ck_len);
        memcpy(t, ck, cut);
        if (cut >= sizeof(ck_header)) fix_crc(t, cut);
        sl_status st = resume(t, cut, &e);
        CHECK_MSG(st != SL_OK, "truncated to %zu of %zu bytes: accepted", cut, ck_len);
        free(t);
        if (check_failures > 20) break;
    }
    free(ck);
}

static void test_optimiser_state(void) {
    sl_optim_config oc;
    sl_optim_config_default(&oc);
    oc.kind = SL_OPTIM_ADAM;
    sl_optim *o;
    sl_err e;
    CHECK_OK(sl_optim_create(&oc, 10, sl_cpu(), &o, &e), &e);
    if (check_failures) return;
    size_t size;
    CHECK_OK(sl_optim_serialize(o, NULL, 0, &size, &e), &e);
    unsigned char *buf = malloc(size);
    CHECK_OK(sl_optim_serialize(o, buf, size, &size, &e), &e);
    /* steps (u64 at 32) past int64: would turn negative */
    sl__put_u64(buf + 32, UINT64_MAX);
    sl__put_u32(buf + size - 4, sl__crc32(buf, size - 4));
    CHECK_FAILS(sl_optim_deserialize(o, buf, size, &e), SL_EFORMAT, &e, "steps");
    /* truncated, and a wrong size of state */
    CHECK(sl_optim_deserialize(o, buf, size - 5, &e) != SL_OK);
    sl__put_u64(buf + 32, 3);
    sl__put_u64(buf + 24, 11);
    sl__put_u32(buf + size - 4, sl__crc32(buf, size - 4));
    CHECK(sl_optim_deserialize(o, buf, size, &e) != SL_OK);
    free(buf);
    sl_optim_free(o);
}

int main(void) {
    bind = (sl_pipeline_bind){"data_path", fixture("caffe2-fmnist-256")};
    test_iterator_checkpoint();
    test_optimiser_state();
    return check_done();
}
