/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile checkpoints: a real iterator checkpoint over the LMDB fixture (two devices, the reader's
 * shards), then forged variants whose CRC is recomputed as the writer does -- shard ids out of
 * range, huge and negative counters, epochs and steps, wrong device/shard/batch counts, wrong shard
 * sizes, entry counts that do not match the shape or run past the file, pipeline blobs whose
 * lengths run past the file, a hostile batch sequence number in a pipeline snapshot, a damaged
 * random state in the reader's snapshot, truncations -- are each refused with an error naming the
 * field (never a crash: `make test-asan` runs this). The same in global order (four devices,
 * resumed on two), whose checkpoint is a few hundred bytes on any device count. A checkpoint in the
 * format of older sluices (1) resumes with the same batches, and its forged fields are refused
 * too. The optimiser's state file: a forged step count. A checkpoint named by its path that is a
 * directory, a FIFO or a large sparse file is refused before it is read. */
#include "check.h"
#include "core/bytes.h"
#include "sluice/iterator.h"
#include "sluice/train.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The layout iter_checkpoint.c writes (format 2, little-endian): the header (magic, version, crc,
 * reserved: u32; payload: u64), the shape (i32 n, S, B, policy; u32 order), the book's scalars
 * (i64 counter, size, step; i32 epoch; u32 nids, nshards), nids i32 shard ids, nshards i64
 * counter_per_gpu and as many shard_sizes, u32 npipes, then npipes (u64 length, snapshot) and
 * (u64 length, extra bytes). The offsets of the shape and book are fixed; what follows depends
 * on the counts, which in DALI's order with a reader are the devices and the shards. */
#define HDR        24
#define AT_N       24
#define AT_S       28
#define AT_B       32
#define AT_POLICY  36
#define AT_ORDER   40
#define AT_COUNTER 44
#define AT_SIZE    52
#define AT_STEP    60
#define AT_EPOCH   68
#define AT_NIDS    72
#define AT_NSHARDS 76
#define AT_IDS     80
#define NDEV       2 /* the DALI-order run: 2 devices, 2 shards */
#define AT_CPG     (AT_IDS + 4 * NDEV)
#define AT_SIZES   (AT_CPG + 8 * NDEV)
#define AT_NPIPES  (AT_SIZES + 8 * NDEV)
#define BLOB0_AT   (AT_NPIPES + 4) /* u64 length, then the pipeline snapshot */
#define G_NPIPES   AT_IDS          /* global order: no shard entries */
#define G_BLOB0_AT (G_NPIPES + 4)

/* Format 1 (older sluices), as they laid it out in memory: the header as above, then ck_shape_v1,
 * ck_book_v1 with 4096 shards, then n times (u64 length, snapshot) and (u64, extra bytes). */
typedef struct {
    int32_t n, S, B, policy;
    int64_t seed_check; /* "GLOB" in global order */
} ck_shape_v1;
typedef struct {
    int64_t counter, size;
    int epoch;
    int64_t step;
    int shards_id[SL_MAX_DEVICES];
    int64_t counter_per_gpu[4096];
    int64_t shard_sizes[4096];
} ck_book_v1;
#define V1_SHAPE_AT  HDR
#define V1_BOOK_AT   (V1_SHAPE_AT + sizeof(ck_shape_v1))
#define V1_BLOB0_AT  (V1_BOOK_AT + sizeof(ck_book_v1))
#define V1_FIELD(f)  (V1_BOOK_AT + offsetof(ck_book_v1, f))
#define V1_SFIELD(f) (V1_SHAPE_AT + offsetof(ck_shape_v1, f))

static const char *text =
    "@pipeline_def(batch_size=16, num_threads=1)\n"
    "def p(data_path, shard_id, num_shards):\n"
    "    jpegs, labels = fn.readers.caffe2(path=data_path, name=\"r\", shard_id=shard_id,\n"
    "                                      num_shards=num_shards)\n"
    "    return jpegs, labels\n";

static sl_pipeline_bind bind;
static int run_devices = NDEV, run_global = 0; /* the run the forged checkpoints resume */

static void config(sl_iter_config *c, int ndev, int global) {
    sl_iter_config_init(c);
    c->text = text;
    c->filename = "hostile.py";
    c->binds = &bind;
    c->nbinds = 1;
    c->ndevices = ndev;
    for (int d = 0; d < ndev; d++) c->devices[d] = sl_cpu();
    c->batch_size = 16;
    c->num_threads = 1;
    c->reader_name = "r";
    c->layout = SL_LAYOUT_SHARDED;
    c->global_order = global;
}

static void fix_crc(unsigned char *b, size_t len) {
    sl__put_u64(b + 16, len - HDR);
    sl__put_u32(b + 8, sl__crc32(b + HDR, len - HDR));
}

#define KEPT 6 /* batches whose keys a resume keeps */

/* Resumes from (b, len) into the run; returns the status, the message in e, and (keys may be NULL)
 * the first key of each of the first KEPT batches. */
static sl_status resume_keys(const unsigned char *b, size_t len, sl_err *e, char keys[][16]) {
    sl_iter_config c;
    config(&c, run_devices, run_global);
    c.resume_bytes = b;
    c.resume_size = len;
    sl_iter *it = NULL;
    memset(e, 0, sizeof *e);
    sl_status st = sl_iter_create(&c, &it, e);
    if (st == SL_OK) { /* it must also run */
        const sl_iter_batch *bt;
        for (int k = 0; k < 40; k++) {
            sl_status s2 = sl_iter_next(it, &bt);
            if (s2 == SL_EOF) {
                sl_iter_reset(it);
                s2 = sl_iter_next(it, &bt);
            }
            if (keys && k < KEPT)
                snprintf(keys[k], 16, "%s", s2 == SL_OK ? sl_iter_key(bt, 0, 0) : "(none)");
        }
    }
    sl_iter_free(it);
    return st;
}
static sl_status resume(const unsigned char *b, size_t len, sl_err *e) {
    return resume_keys(b, len, e, NULL);
}

static unsigned char *ck;
static size_t ck_len;

/* b (len bytes, its CRC already fixed) is refused, the message naming needle */
static void refused(const char *what, const unsigned char *b, size_t len, const char *needle) {
    sl_err e;
    sl_status st = resume(b, len, &e);
    CHECK_MSG(st != SL_OK, "%s: a forged checkpoint was accepted", what);
    CHECK_MSG(strstr(e.msg, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", what, e.msg,
              needle);
}

static void forge(const char *what, size_t at, const void *val, size_t n, const char *needle) {
    CHECK_MSG(at + n <= ck_len, "%s: offset %zu past the checkpoint (%zu bytes)", what, at, ck_len);
    if (at + n > ck_len) return;
    unsigned char *b = malloc(ck_len);
    memcpy(b, ck, ck_len);
    memcpy(b + at, val, n);
    fix_crc(b, ck_len);
    refused(what, b, ck_len, needle);
    free(b);
}

static void forge64(const char *what, size_t at, int64_t v, const char *needle) {
    unsigned char b[8];
    sl__put_u64(b, (uint64_t)v);
    forge(what, at, b, sizeof b, needle);
}
static void forge32(const char *what, size_t at, int32_t v, const char *needle) {
    unsigned char b[4];
    sl__put_u32(b, (uint32_t)v);
    forge(what, at, b, sizeof b, needle);
}
/* ck cut to cut bytes, payload and CRC recomputed: refused naming needle */
static void cut_at(const char *what, size_t cut, const char *needle) {
    unsigned char *t = malloc(ck_len);
    memcpy(t, ck, cut);
    fix_crc(t, cut);
    refused(what, t, cut, needle);
    free(t);
}
/* ck cut at every stride-th length below dense and at every one of the last 64, payload and CRC
 * recomputed: each refused */
static void truncations(size_t dense, size_t stride) {
    sl_err e;
    for (size_t cut = 0; cut < ck_len; cut += (cut < dense ? stride : 1)) {
        if (cut > dense && cut + 64 < ck_len) cut = ck_len - 64;
        unsigned char *t = malloc(ck_len);
        memcpy(t, ck, cut);
        if (cut >= HDR) fix_crc(t, cut);
        sl_status st = resume(t, cut, &e);
        CHECK_MSG(st != SL_OK, "truncated to %zu of %zu bytes: accepted", cut, ck_len);
        free(t);
        if (check_failures > 20) break;
    }
}

/* A checkpoint from a run of cfg after `steps` batches (malloc'd). */
static unsigned char *take(int ndev, int global, int steps, size_t *len) {
    sl_iter_config c;
    config(&c, ndev, global);
    sl_iter *it;
    sl_err e;
    *len = 0;
    CHECK_OK(sl_iter_create(&c, &it, &e), &e);
    if (check_failures) return NULL;
    const sl_iter_batch *b;
    for (int k = 0; k < steps; k++) CHECK_OK(sl_iter_next(it, &b), NULL);
    void *bytes = NULL;
    CHECK_OK(sl_iter_save(it, NULL, 0, &bytes, len), NULL);
    sl_iter_free(it);
    return bytes;
}

/* The format-1 file an older sluice would have written for the format-2 checkpoint v2. */
static unsigned char *to_v1(const unsigned char *v2, size_t len, size_t *out_len) {
    ck_shape_v1 sh = {(int32_t)sl__get_u32(v2 + AT_N), (int32_t)sl__get_u32(v2 + AT_S),
                      (int32_t)sl__get_u32(v2 + AT_B), (int32_t)sl__get_u32(v2 + AT_POLICY),
                      sl__get_u32(v2 + AT_ORDER) ? 0x424f4c47 : 0};
    ck_book_v1 *k = calloc(1, sizeof *k);
    k->counter = (int64_t)sl__get_u64(v2 + AT_COUNTER);
    k->size = (int64_t)sl__get_u64(v2 + AT_SIZE);
    k->step = (int64_t)sl__get_u64(v2 + AT_STEP);
    k->epoch = (int32_t)sl__get_u32(v2 + AT_EPOCH);
    uint32_t nids = sl__get_u32(v2 + AT_NIDS), nshards = sl__get_u32(v2 + AT_NSHARDS);
    const unsigned char *p = v2 + AT_IDS;
    for (uint32_t d = 0; d < nids; d++, p += 4) k->shards_id[d] = (int32_t)sl__get_u32(p);
    for (uint32_t i = 0; i < nshards; i++, p += 8) k->counter_per_gpu[i] = (int64_t)sl__get_u64(p);
    for (uint32_t i = 0; i < nshards; i++, p += 8) k->shard_sizes[i] = (int64_t)sl__get_u64(p);
    uint32_t npipes = sl__get_u32(p);
    p += 4;
    const unsigned char *pipes = p; /* npipes (u64 length, snapshot), then the extra bytes */
    for (uint32_t d = 0; d < npipes; d++) p += 8 + sl__get_u64(p);
    /* format 1 wrote a state per device (npipes is n, or 1 in global order) */
    size_t all = (size_t)(p - pipes), rest = len - (size_t)(p - v2);
    size_t states = npipes == (uint32_t)sh.n ? all : all * (size_t)sh.n;
    *out_len = HDR + sizeof sh + sizeof *k + states + rest;
    unsigned char *b = calloc(1, *out_len), *q = b;
    sl__put_u32(q, 0x4b434c53u);
    sl__put_u32(q + 4, 1);
    q += HDR;
    memcpy(q, &sh, sizeof sh);
    q += sizeof sh;
    memcpy(q, k, sizeof *k);
    q += sizeof *k;
    for (size_t at = 0; at < states; at += all, q += all) memcpy(q, pipes, all);
    memcpy(b + *out_len - rest, p, rest);
    fix_crc(b, *out_len);
    free(k);
    return b;
}

static void test_iterator_checkpoint(void) {
    run_devices = NDEV, run_global = 0;
    ck = take(NDEV, 0, 5, &ck_len);
    if (check_failures) return;
    CHECK(ck_len > BLOB0_AT + 8 + 20);
    CHECK_EQ_INT(sl__get_u32(ck + 4), 2);
    CHECK_EQ_INT(sl__get_u32(ck + AT_NIDS), NDEV);
    CHECK_EQ_INT(sl__get_u32(ck + AT_NSHARDS), NDEV);
    CHECK_EQ_INT(sl__get_u32(ck + AT_NPIPES), NDEV);
    if (check_failures) return;
    sl_err e;

    /* the untouched checkpoint, CRC recomputed: resumes */
    unsigned char *same = malloc(ck_len);
    memcpy(same, ck, ck_len);
    fix_crc(same, ck_len);
    CHECK_OK(resume(same, ck_len, &e), &e);
    free(same);

    /* the header */
    forge32("a newer format", 4, 3, "format 3, written by a newer sluice");
    forge32("format 0", 4, 0, "format 0");
    forge32("reserved", 12, 1, "reserved");
    /* the book */
    forge32("shard id", AT_IDS, 7, "shards_id");
    forge32("negative shard id", AT_IDS + 4, -1, "shards_id");
    forge32("shard ids of absent devices", AT_NIDS, 6, "nids");
    forge32("no shard ids", AT_NIDS, 0, "nids");
    forge64("huge counter", AT_COUNTER, INT64_MAX, "counter");
    forge64("negative counter", AT_COUNTER, -16, "counter");
    forge64("huge per-shard counter", AT_CPG, INT64_MIN, "counter_per_gpu");
    forge32("counters of a shard past S", AT_NSHARDS, NDEV + 1, "nshards");
    forge32("entries of 4096 shards", AT_NSHARDS, 4096, "nshards");
    forge32("a shard count that wraps", AT_NSHARDS, -1, "nshards");
    forge64("huge shard size", AT_SIZES, (int64_t)1 << 40, "shard_sizes");
    forge64("negative size", AT_SIZE, -1, "size");
    forge64("huge size", AT_SIZE, INT64_MAX / 2, "size");
    forge32("negative epoch", AT_EPOCH, -1, "epoch");
    forge32("last epoch", AT_EPOCH, INT32_MAX, "epoch");
    forge64("huge step", AT_STEP, INT64_MAX, "step");
    forge64("negative step", AT_STEP, -1, "step");
    /* the shape */
    forge32("devices", AT_N, 3, "devices");
    forge32("shards", AT_S, 0, "shards");
    forge32("batch", AT_B, -8, "batch");
    forge32("policy", AT_POLICY, 77, "policy");
    forge32("order", AT_ORDER, 2, "field order");
    forge32("global order", AT_ORDER, 1, "written in global order");
    /* the pipeline states: their count and lengths */
    forge32("one pipeline state", AT_NPIPES, 1, "npipes");
    forge32("pipeline states of absent devices", AT_NPIPES, 5, "npipes");
    forge64("blob past the end", BLOB0_AT, INT64_MAX, "truncated");
    forge64("blob length wraps", BLOB0_AT, -8, "truncated");
    forge64("extra bytes past the end", ck_len - 8, 1000, "extra");
    { /* no shard entries (as without a reader), the file consistent: the reader's are missing */
        unsigned char *b = malloc(ck_len);
        size_t gone = 16 * NDEV, n = ck_len - gone;
        memcpy(b, ck, AT_CPG);
        memcpy(b + AT_CPG, ck + AT_CPG + gone, ck_len - AT_CPG - gone);
        sl__put_u32(b + AT_NSHARDS, 0);
        fix_crc(b, n);
        CHECK_FAILS(resume(b, n, &e), SL_EFORMAT, &e, "field shard_sizes");
        free(b);
    }
    /* the file ends in the entries the counts announce */
    cut_at("cut in the shard ids", AT_IDS + 2, "shards_id");
    cut_at("cut in the per-shard counters", AT_CPG + 12, "counter_per_gpu");
    cut_at("cut in the shard sizes", AT_SIZES + 4, "shard_sizes");
    cut_at("cut in the pipeline count", AT_NPIPES + 1, "npipes");
    cut_at("cut in the book", AT_EPOCH, "truncated");
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

    truncations(BLOB0_AT + 64, 7);
    free(ck);
}

/* Global order: a four-device checkpoint, resumed on two and on four. */
static void test_global_checkpoint(void) {
    size_t len[3];
    for (int i = 0, ndev = 1; i < 3; i++, ndev *= 2) { /* the same few hundred bytes on 1, 2, 4 */
        unsigned char *b = take(ndev, 1, 3, &len[i]);
        if (check_failures) return;
        CHECK_MSG(len[i] <= 512, "a global-order checkpoint of %d devices has %zu bytes", ndev,
                  len[i]);
        CHECK_EQ_INT(len[i], len[0]);
        free(b);
    }
    ck = take(4, 1, 5, &ck_len);
    if (check_failures) return;
    CHECK_EQ_INT(sl__get_u32(ck + AT_ORDER), 1);
    CHECK_EQ_INT(sl__get_u32(ck + AT_NIDS), 0);
    CHECK_EQ_INT(sl__get_u32(ck + AT_NSHARDS), 0);
    CHECK_EQ_INT(sl__get_u32(ck + G_NPIPES), 1);
    sl_err e;
    char want[KEPT][16], got[KEPT][16];
    run_global = 1;
    run_devices = 4;
    CHECK_OK(resume_keys(ck, ck_len, &e, want), &e);
    run_devices = 2;
    CHECK_OK(resume_keys(ck, ck_len, &e, got), &e);
    for (int k = 0; k < KEPT; k++) CHECK_STR(got[k], want[k]);

    forge32("shard ids in global order", AT_NIDS, 4, "nids");
    forge32("shard entries in global order", AT_NSHARDS, 4, "nshards");
    forge32("pipeline states of absent devices", G_NPIPES, 3, "npipes");
    forge32("a state per device, one given", G_NPIPES, 4, "truncated");
    forge32("no pipeline state", G_NPIPES, 0, "npipes");
    forge32("DALI's order", AT_ORDER, 0, "written in DALI's order");
    forge64("counter of no whole batch", AT_COUNTER, 17, "counter");
    forge64("counter past int64 once rescaled", AT_COUNTER, INT64_MAX / 4 * 4, "counter");
    forge32("another global batch", AT_B, 8, "same global batch");
    forge64("blob past the end", G_BLOB0_AT, INT64_MAX, "truncated");
    cut_at("cut in the pipeline count", G_NPIPES + 2, "npipes");
    truncations(ck_len, 1);

    /* the same as format 1 resumes on two devices with the same batches */
    size_t v1_len;
    unsigned char *v1 = to_v1(ck, ck_len, &v1_len);
    CHECK(v1_len > V1_BLOB0_AT);
    CHECK_OK(resume_keys(v1, v1_len, &e, got), &e);
    for (int k = 0; k < KEPT; k++) CHECK_STR(got[k], want[k]);
    free(v1);
    free(ck);
    run_devices = NDEV, run_global = 0;
}

/* Format 1, as older sluices wrote it: resumes with the same batches as format 2, and its forged
 * fields, shards past the run's included, are refused naming them. */
static void test_format_1(void) {
    run_devices = NDEV, run_global = 0;
    size_t v2_len;
    unsigned char *v2 = take(NDEV, 0, 5, &v2_len);
    if (check_failures) return;
    ck = to_v1(v2, v2_len, &ck_len);
    CHECK_EQ_INT(ck_len, V1_BLOB0_AT + (v2_len - BLOB0_AT));
    sl_err e;
    char want[KEPT][16], got[KEPT][16];
    CHECK_OK(resume_keys(v2, v2_len, &e, want), &e);
    CHECK_OK(resume_keys(ck, ck_len, &e, got), &e);
    for (int k = 0; k < KEPT; k++) CHECK_STR(got[k], want[k]);
    free(v2);

    forge32("shard id", V1_FIELD(shards_id[0]), 7, "shards_id");
    forge32("shard id of an absent device", V1_FIELD(shards_id[5]), 1, "shards_id");
    forge64("huge counter", V1_FIELD(counter), INT64_MAX, "counter");
    forge64("per-shard counter past S", V1_FIELD(counter_per_gpu[2]), 5, "counter_per_gpu");
    forge64("shard size past S", V1_FIELD(shard_sizes[3]), 128, "shard_sizes");
    forge32("last epoch", V1_FIELD(epoch), INT32_MAX, "epoch");
    forge64("negative step", V1_FIELD(step), -1, "step");
    forge32("devices", V1_SFIELD(n), 3, "devices");
    forge64("global order", V1_SFIELD(seed_check), 0x424f4c47, "written in global order");
    forge64("blob past the end", V1_BLOB0_AT, INT64_MAX, "truncated");
    cut_at("cut in the book", V1_FIELD(shard_sizes[7]), "truncated");
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

/* Resumes from the file at path (no bytes given); the status, the message in e. */
static sl_status resume_file(const char *path, sl_err *e) {
    sl_iter_config c;
    config(&c, run_devices, run_global);
    c.resume = path;
    sl_iter *it = NULL;
    memset(e, 0, sizeof *e);
    sl_status st = sl_iter_create(&c, &it, e);
    sl_iter_free(it);
    return st;
}

/* A checkpoint named by its path is looked at before it is read: a directory (which reads as any
 * size) and a FIFO (whose open and read would wait for a writer for good) are not regular files;
 * a large sparse file is refused by its header, not read whole first; the real one resumes. A
 * checkpoint is not written over a FIFO (the rename would replace it). */
static void test_checkpoint_files(void) {
    run_devices = NDEV, run_global = 0;
    ck = take(NDEV, 0, 5, &ck_len);
    if (!ck) return;
    char dir[] = "/tmp/sl_hostile_ckXXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    sl_err e;
    snprintf(path, sizeof path, "%s/sub", dir);
    CHECK(mkdir(path, 0755) == 0);
    CHECK_FAILS(resume_file(path, &e), SL_EINVAL, &e, "not a regular file (a directory)");
    snprintf(path, sizeof path, "%s/fifo", dir);
    CHECK(mkfifo(path, 0644) == 0);
    CHECK_FAILS(resume_file(path, &e), SL_EINVAL, &e, "not a regular file (a FIFO)");
    CHECK_FAILS(sl_file_write(path, ck, ck_len, &e), SL_EINVAL, &e, "not a regular file");
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && S_ISFIFO(sb.st_mode));
    /* 4 GiB, sparse: the header's payload length (the real checkpoint's) is not the file's */
    snprintf(path, sizeof path, "%s/big", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK(fwrite(ck, 1, ck_len, f) == ck_len);
        fclose(f);
    }
    CHECK(truncate(path, (off_t)4 << 30) == 0);
    CHECK_FAILS(resume_file(path, &e), SL_EFORMAT, &e, "truncated");
    unlink(path);
    snprintf(path, sizeof path, "%s/ck", dir);
    CHECK_OK(sl_file_write(path, ck, ck_len, &e), &e);
    CHECK_OK(resume_file(path, &e), &e);
    unlink(path);
    snprintf(path, sizeof path, "%s/fifo", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/sub", dir);
    rmdir(path);
    rmdir(dir);
    free(ck);
}

int main(void) {
    bind = (sl_pipeline_bind){"data_path", fixture("caffe2-fmnist-256")};
    test_iterator_checkpoint();
    test_global_checkpoint();
    test_format_1();
    test_optimiser_state();
    test_checkpoint_files();
    return check_done();
}
