/* SPDX-License-Identifier: Apache-2.0 */
/* clang-format off */
/* Training sluice's MLP on samples your own C code makes, with no files: a source registered for
 * fn.external_source generates a 4-class problem (16 features: the class's centre plus noise, all
 * computed from the sample's number, so every run sees the same data), the pipeline one-hot encodes
 * the labels, the iterator hands out batches of 128 over a 4096-sample epoch, and the model trains
 * with Adam on the CPU. Prints each epoch's mean loss and accuracy; exits 0 when the last epoch's
 * accuracy is above 0.9 (ctest runs it as example_train_on_own_data).
 *
 * Built with the project (target example_train_on_own_data). Against an installed sluice (make
 * install PREFIX=/usr/local; under another prefix P, set PKG_CONFIG_PATH=P/lib/pkgconfig, and
 * LD_LIBRARY_PATH=P/lib to run it), with libsluice.so:
 *     cc -std=c11 train_on_own_data.c $(pkg-config --cflags --libs sluice) -o train_on_own_data
 * with libsluice.a (sluice-static.pc names the archive, though libsluice.so lies beside it):
 *     cc -std=c11 train_on_own_data.c $(pkg-config --cflags --libs sluice-static) -o train_on_own_data
 * or with CMake (examples/CMakeLists.txt: find_package(sluice 0.1 REQUIRED), sluice::sluice):
 *     cmake -S examples -B build-examples -DCMAKE_PREFIX_PATH=/usr/local
 *     cmake --build build-examples && build-examples/train_on_own_data
 * tests/cli/install.sh builds it these three ways. */
/* clang-format on */
#include <sluice/iterator.h>
#include <sluice/pipeline.h>
#include <sluice/train.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { FEATURES = 16, CLASSES = 4, SAMPLES = 4096, BATCH = 128, EPOCHS = 4 };

/* A number in [-1, 1) from (sample, k): splitmix64. */
static float noise(int64_t sample, int k) {
    uint64_t z = (uint64_t)sample * FEATURES + (uint64_t)k + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) / (float)(1 << 23) - 1.0f;
}

/* What each sample is: output 0 the features (16,) float32, output 1 the class, an int32 scalar. */
static sl_status blob_shape(void *user, const sl_source_info *info, sl_dtype *dtype, int *ndim,
                            int64_t *shape, sl_err *err) {
    (void)user, (void)err;
    *dtype = info->output == 0 ? SL_DTYPE_F32 : SL_DTYPE_I32;
    *ndim = info->output == 0 ? 1 : 0;
    shape[0] = FEATURES;
    return SL_OK;
}

/* Writes a sample; called on the pipeline's worker threads, several at once (it only computes). */
static sl_status blob_fill(void *user, const sl_source_info *info, void *dst, size_t nbytes,
                           sl_err *err) {
    (void)user, (void)nbytes, (void)err;
    int64_t s = info->sample % SAMPLES; /* the same 4096 samples every epoch */
    int label = (int)(s % CLASSES);
    if (info->output == 1) {
        *(int32_t *)dst = label;
        return SL_OK;
    }
    float *x = dst;
    for (int k = 0; k < FEATURES; k++) x[k] = (k % CLASSES == label ? 1.0f : 0.0f) + noise(s, k);
    return SL_OK;
}

/* The iterator calls this for its pipeline before parsing the text. */
static sl_status add_source(sl_pipeline *p, int shard_id, int num_shards, void *user, sl_err *err) {
    (void)shard_id, (void)num_shards, (void)user, (void)err;
    sl_source src = {blob_shape, blob_fill, NULL, NULL, NULL, NULL, NULL, false};
    return sl_pipeline_add_source(p, "blobs", &src);
}

static const char *PIPELINE = "def pipe():\n"
                              "    features, labels = fn.external_source(source=blobs, "
                              "num_outputs=2)\n"
                              "    labels = fn.one_hot(labels, num_classes=4)\n"
                              "    return features, labels\n";

int main(void) {
    sl_err err;
    sl_iter_config c;
    sl_iter_config_init(&c);
    c.text = PIPELINE;
    c.filename = "pipe.py";
    c.prepare = add_source;
    c.batch_size = BATCH;
    c.size = SAMPLES; /* a source has no end of its own: the epoch is 4096 samples */
    sl_iter *it = NULL;
    sl_mlp *model = NULL;
    sl_optim *opt = NULL;
    sl_mlp_config mc;
    sl_mlp_config_default(&mc);
    mc.nsizes = 3;
    mc.sizes[0] = FEATURES, mc.sizes[1] = 32, mc.sizes[2] = CLASSES;
    sl_optim_config oc;
    sl_optim_config_default(&oc);
    oc.kind = SL_OPTIM_ADAM;
    oc.lr = 0.01f;
    if (sl_iter_parse_devices("cpu", &c, &err) || sl_iter_create(&c, &it, &err) ||
        sl_mlp_create(&mc, sl_cpu(), &model, &err) ||
        sl_optim_create(&oc, sl_mlp_num_params(model), sl_cpu(), &opt, &err)) {
        fprintf(stderr, "train_on_own_data: %s\n", err.msg);
        return 1;
    }
    double accuracy = 0;
    int rc = 0;
    for (int epoch = 0; epoch < EPOCHS && rc == 0; epoch++, sl_iter_reset(it)) {
        const sl_iter_batch *b;
        double loss_sum = 0;
        int64_t correct = 0, seen = 0;
        sl_status st;
        bool failed = false; /* a step failed: err says why */
        while ((st = sl_iter_next(it, &b)) == SL_OK) {
            sl_tensor x, y;
            float loss;
            int64_t right;
            if (sl_iter_shard(b, 0, 0, &x, &err) || sl_iter_shard(b, 1, 0, &y, &err) ||
                sl_mlp_evaluate(model, &x, &y, &right, NULL, &err) ||
                sl_mlp_loss_grad(model, &x, &y, &loss, &err) || sl_optim_step(opt, model, &err)) {
                failed = true;
                break;
            }
            correct += right, seen += x.shape[0], loss_sum += loss * (double)x.shape[0];
        }
        if (failed || st != SL_EOF) {
            fprintf(stderr, "train_on_own_data: %s\n", failed ? err.msg : sl_iter_errmsg(it));
            rc = 1;
            break;
        }
        accuracy = (double)correct / (double)seen;
        printf("epoch %d: %lld samples, loss %.4f, accuracy %.4f (before each step)\n", epoch,
               (long long)seen, loss_sum / (double)seen, accuracy);
    }
    sl_optim_free(opt);
    sl_mlp_free(model);
    sl_iter_free(it);
    if (rc == 0 && accuracy <= 0.9) {
        fprintf(stderr, "train_on_own_data: accuracy %.4f, expected above 0.9\n", accuracy);
        rc = 1;
    }
    return rc;
}
