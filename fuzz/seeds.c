/* SPDX-License-Identifier: Apache-2.0 */
/* Writes a seed input for each harness that no fixture file serves as is, into the folder given:
 * records/ (Caffe2 and Caffe records, encoded and raw), protowire/ (the same bytes), idx/ (a small
 * IDX file), tar/ (a two-sample WebDataset shard), tfrecord/ (three Examples), checkpoint/ (a real
 * iterator checkpoint of the harness's pipeline, three steps in), checkpoint_global/ (the same in
 * global order, on four devices), model/ (a model file and two optimiser states). make fuzz and
 * the replay tests start from these. ops/: three cases per operator of fuzz_ops (the bytes it reads
 * are described there): a batch of uint8 HWC images, float32 matrices full of NaN, inf and
 * extremes, and float32 ramps in a batch of 0 samples then 4; each with the op's required
 * arguments at their first, sane, values. */
#include "fuzz.h"
#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/protowire.h"
#include "io/tfrecord.h"
#include "sluice/iterator.h"
#include "sluice/ops.h"
#include "sluice/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *out_dir;

static void put(const char *sub, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_dir, sub);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, sub, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "seeds: cannot write %s\n", path);
        exit(1);
    }
}

static void records(void) {
    static const uint8_t jpeg[] = {0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F',  0,
                                   1,    1,    0,    0,    1, 0,  1,   0,   0,   0xff, 0xd9};
    uint8_t raw[2 * 3 * 1] = {1, 2, 3, 4, 5, 6};
    sl__pw_buf b;
    memset(&b, 0, sizeof b);
    sl__caffe2_encode(&b, jpeg, sizeof jpeg, false, 0, 0, 0, 7);
    put("records", "caffe2_encoded", b.data, b.len);
    put("protowire", "caffe2_encoded", b.data, b.len);
    b.len = 0;
    sl__caffe2_encode(&b, raw, sizeof raw, true, 2, 3, 1, 3);
    put("records", "caffe2_raw", b.data, b.len);
    b.len = 0;
    sl__caffe_encode(&b, jpeg, sizeof jpeg, false, 0, 0, 0, 1);
    put("records", "caffe_encoded", b.data, b.len);
    put("protowire", "caffe_encoded", b.data, b.len);
    b.len = 0;
    sl__caffe_encode(&b, raw, sizeof raw, true, 2, 3, 1, 2);
    put("records", "caffe_raw", b.data, b.len);
    sl__protowire_buf_free(&b);
}

static void idx(void) {
    uint8_t f[16 + 2 * 2 * 3];
    memset(f, 0, sizeof f);
    f[2] = 0x08; /* uint8 */
    f[3] = 3;    /* dims */
    f[7] = 2, f[11] = 2, f[15] = 3;
    for (int i = 0; i < 12; i++) f[16 + i] = (uint8_t)(i * 20);
    put("idx", "u8_2x2x3", f, sizeof f);
}

static void tar(void) {
    static uint8_t t[512 * 6];
    memset(t, 0, sizeof t);
    const char *names[2] = {"s0.cls", "s1.cls"};
    for (int k = 0; k < 2; k++) {
        uint8_t *h = t + k * 1024;
        snprintf((char *)h, 100, "%s", names[k]);
        snprintf((char *)h + 100, 8, "0000644");
        snprintf((char *)h + 124, 12, "%011o", 1);
        snprintf((char *)h + 136, 12, "%011o", 0);
        h[156] = '0';
        memcpy(h + 257, "ustar", 6);
        memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (int i = 0; i < 512; i++) sum += h[i];
        snprintf((char *)h + 148, 8, "%06o", sum);
        h[512] = (uint8_t)('0' + k);
    }
    put("tar", "two_samples", t, sizeof t);
}

/* a TFRecord file: two image/label Examples, then one with a float list and an unpacked int64 */
static void tfrecord(void) {
    sl__pw_buf file = {0}, rec = {0}, l = {0}, f = {0}, ent = {0}, feats = {0};
    for (int k = 0; k < 2; k++) {
        rec.len = 0;
        sl__tfrec_encode_image(&rec, k ? "\xff\xd8 jpeg" : "png", k ? 7 : 3, k);
        sl__tfrec_put(&file, rec.data, rec.len);
    }
    static const uint8_t floats[8] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}; /* 1.0, 2.0 */
    sl__protowire_put_bytes(&l, 1, floats, sizeof floats);
    sl__protowire_put_bytes(&f, 2, l.data, l.len);
    sl__protowire_put_bytes(&ent, 1, "v", 1);
    sl__protowire_put_bytes(&ent, 2, f.data, f.len);
    sl__protowire_put_bytes(&feats, 1, ent.data, ent.len);
    l.len = f.len = ent.len = 0;
    sl__protowire_put_varint(&l, 1, 42);
    sl__protowire_put_bytes(&f, 3, l.data, l.len);
    sl__protowire_put_bytes(&ent, 1, "w", 1);
    sl__protowire_put_bytes(&ent, 2, f.data, f.len);
    sl__protowire_put_bytes(&feats, 1, ent.data, ent.len);
    rec.len = 0;
    sl__protowire_put_bytes(&rec, 1, feats.data, feats.len);
    sl__tfrec_put(&file, rec.data, rec.len);
    put("tfrecord", "three_examples", file.data, file.len);
    sl__pw_buf *all[] = {&file, &rec, &l, &f, &ent, &feats};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sl__protowire_buf_free(all[i]);
}

static void checkpoint(const char *fixtures, int global) {
    sl_iter_config c;
    fuzz_checkpoint_config(&c, fixtures, global, global ? 4 : 1);
    sl_iter *it;
    sl_err err;
    if (sl_iter_create(&c, &it, &err) != SL_OK) {
        fprintf(stderr, "seeds: %s\n", err.msg);
        exit(1);
    }
    const sl_iter_batch *b;
    for (int i = 0; i < 3; i++) sl_iter_next(it, &b);
    void *bytes;
    size_t n;
    if (sl_iter_save(it, NULL, 0, &bytes, &n) != SL_OK) {
        fprintf(stderr, "seeds: %s\n", sl_iter_errmsg(it));
        exit(1);
    }
    put(global ? "checkpoint_global" : "checkpoint", global ? "four_devices" : "three_steps", bytes,
        n);
    free(bytes);
    sl_iter_free(it);
}

/* a small model (6 -> 4 -> 3, relu) and the states of SGD with momentum and of Adam over it */
static void model(void) {
    sl_mlp_config mc;
    memset(&mc, 0, sizeof mc);
    mc.nsizes = 3;
    mc.sizes[0] = 6, mc.sizes[1] = 4, mc.sizes[2] = 3;
    mc.activation = SL_ACT_RELU;
    mc.init_scale = 0.1;
    sl_mlp *m;
    sl_err err;
    size_t n;
    unsigned char buf[4096];
    if (sl_mlp_create(&mc, sl_cpu(), &m, &err) != SL_OK ||
        sl_mlp_serialize(m, buf, sizeof buf, &n, &err) != SL_OK) {
        fprintf(stderr, "seeds: %s\n", err.msg);
        exit(1);
    }
    put("model", "mlp_6_4_3", buf, n);
    for (int k = 0; k < 2; k++) {
        sl_optim_config oc;
        sl_optim_config_default(&oc);
        if (k == 0)
            oc.momentum = 0.9f;
        else
            oc.kind = SL_OPTIM_ADAM;
        sl_optim *o;
        if (sl_optim_create(&oc, sl_mlp_num_params(m), sl_cpu(), &o, &err) != SL_OK ||
            sl_optim_serialize(o, buf, sizeof buf, &n, &err) != SL_OK) {
            fprintf(stderr, "seeds: %s\n", err.msg);
            exit(1);
        }
        put("model", k == 0 ? "sgd_momentum" : "adam", buf, n);
        sl_optim_free(o);
    }
    sl_mlp_free(m);
}

/* fuzz_ops's cases: the op's name, then the bytes fuzz_ops.c's header describes */
static void ops(void) {
    /* a feed: dtype, ndim and layout kind (0x20: declared), the layout, extents (0x80: varies by
     * sample, a byte per sample of each batch follows), the fill and its 8 bytes */
    static const uint8_t image[] = {
        0, 3 | 1 << 3 | 1 << 5, 0, 0x85, 6, 3, 4, 7, 5, 6, 3, 1, 9, 200, 31, 77, 0, 255, 13, 64};
    static const uint8_t matrix[] = {8, 2 | 1 << 5, 0, 4, 5, 3, 0, 1, 2, 3, 4, 5, 6, 7};
    static const uint8_t ramp[] = {8, 1 | 1 << 5, 0, 0xf5, 5, 0, 0, 0, 0, 0, 0, 0, 0};
    static const struct {
        const char *name;
        uint8_t batch; /* iterations and sample counts */
        const uint8_t *feed;
        size_t len;
    } kinds[] = {{"image", 1 | 3 << 1 | 2 << 4, image, sizeof image},
                 {"matrix", 1 | 4 << 1 | 4 << 4, matrix, sizeof matrix},
                 {"ramp", 1 | 0 << 1 | 4 << 4, ramp, sizeof ramp}};
    for (int i = 0; i < sl_op_count(); i++) {
        sl_op_info o;
        if (sl_op_get(i, &o, NULL) != SL_OK || !(o.devices & SL_OP_CPU) || o.is_reader ||
            strstr(o.name, "python_function") || !strcmp(o.name, "external_source") ||
            !strcmp(o.name, "_conditional.split") || !strcmp(o.name, "_conditional.merge"))
            continue;
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            uint8_t buf[512];
            size_t n = (size_t)snprintf((char *)buf, 80, "%s\n", o.name);
            buf[n++] = kinds[k].batch;
            buf[n++] = 0; /* the op's fewest inputs */
            for (int in = 0; in < o.min_inputs && in < 4; in++) {
                memcpy(buf + n, kinds[k].feed, kinds[k].len);
                n += kinds[k].len;
            }
            size_t at = n++;
            buf[at] = 0;
            for (int a = 0; a < o.num_args && buf[at] < 5; a++) {
                sl_op_arg_info ai;
                if (sl_op_get_arg(o.name, a, &ai, NULL) != SL_OK || !ai.required) continue;
                buf[at]++;
                buf[n++] = (uint8_t)a;
                buf[n++] = 0; /* the type's first value */
                if (strchr("ifs", ai.type[0]) && ai.type[strlen(ai.type) - 1] == 's') {
                    buf[n++] = 4; /* a list of 4 */
                    memset(buf + n, 0, 4);
                    n += 4;
                }
            }
            char file[128];
            snprintf(file, sizeof file, "%s_%s", o.name, kinds[k].name);
            put("ops", file, buf, n);
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fuzz_seeds OUT_DIR FIXTURES_DIR\n");
        return 2;
    }
    out_dir = argv[1];
    mkdir(out_dir, 0755);
    records();
    idx();
    tar();
    tfrecord();
    checkpoint(argv[2], 0);
    checkpoint(argv[2], 1);
    model();
    ops();
    return 0;
}
