/* SPDX-License-Identifier: Apache-2.0 */
/* Pipelines on GPU 0 against the same pipelines on the CPU: the seed's training pipeline file
 * (tools/pipelines/seed_training_sharding.py, unchanged: mixed decoding, crop_mirror_
 * normalize and one_hot on the GPU, labels through .gpu()) over the Caffe2 Fashion-MNIST fixture,
 * 10 batches of 64 (two and a half epochs, shuffled), and an augmenting pipeline (random mirror
 * from coin_flip, flip, nearest-neighbour resize, cast on the GPU), and arithmetic in pipeline text
 * with cat and stack after the mixed decoder, conditionals (if/elif/else) on GPU data, and gpu
 * ops that sluice runs on the CPU alone (outputs copied over). Outputs live on the GPU and equal
 * the CPU's outputs byte for byte (resize: within 1), with the same record keys and source info
 * in the same order. And the pipeline's stream priority (DALI's default_cuda_stream_priority). */
#include "check.h"
#include "gpu.h"

#include "graph/pipeline_int.h"
#include "sluice/pipeline.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sl_pipeline *make(const char *text, sl_device dev, int batch, int nbind,
                         const sl_pipeline_bind *binds) {
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = batch;
    cfg.num_threads = 3;
    cfg.device = dev;
    cfg.seed = 1234;
    sl_err e;
    sl_pipeline *p = check_pipeline(&cfg, text, "pipeline.py", nbind, binds, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    return p;
}

/* A host copy of output i of b (a dense tensor). */
static void *host_copy(const sl_batch *b, int i, size_t *n, sl_device *where) {
    sl_tensor t, h;
    sl_err e;
    CHECK_OK(sl_batch_tensor(b, i, &t, &e), &e);
    *where = t.device;
    *n = sl_tensor_nbytes(&t);
    CHECK_OK(sl_tensor_alloc(&h, t.dtype, sl_cpu(), t.ndim, t.shape, NULL, &e), &e);
    CHECK_OK(sl_tensor_copy(&h, &t, NULL, &e), &e);
    void *out = malloc(*n);
    memcpy(out, h.data, *n);
    sl_tensor_free(&h);
    return out;
}

static int infos_seen; /* samples of the CPU runs' outputs with source info */

static void compare_runs(const char *what, const char *text, int batch, int batches, int nbind,
                         const sl_pipeline_bind *binds, int u8_tol_output) {
    sl_pipeline *c = make(text, sl_cpu(), batch, nbind, binds);
    sl_pipeline *g = make(text, sl_cuda(0), batch, nbind, binds);
    if (!c || !g) {
        sl_pipeline_free(c);
        sl_pipeline_free(g);
        return;
    }
    int nout = sl_pipeline_num_outputs(c);
    CHECK_EQ_INT(nout, sl_pipeline_num_outputs(g));
    size_t total = 0;
    for (int it = 0; it < batches; it++) {
        sl_batch *bc = NULL, *bg = NULL;
        CHECK_OK(sl_pipeline_next(c, &bc), NULL);
        sl_status st = sl_pipeline_next(g, &bg);
        CHECK_MSG(st == SL_OK, "%s: GPU batch %d: %s", what, it, sl_pipeline_errmsg(g));
        if (!bc || !bg) {
            sl_pipeline_release(c, bc);
            sl_pipeline_release(g, bg);
            break;
        }
        for (int k = 0; k < batch; k++) CHECK_STR(sl_batch_key(bc, k), sl_batch_key(bg, k));
        for (int o = 0; o < nout; o++) /* where each sample came from, also past a .gpu() */
            for (int k = 0; k < batch; k++) {
                const char *ic = sl_batch_source_info(bc, o, k);
                CHECK_STR(ic, sl_batch_source_info(bg, o, k));
                infos_seen += ic[0] != '\0';
            }
        for (int o = 0; o < nout; o++) {
            size_t nc, ng;
            sl_device dc, dg;
            unsigned char *xc = host_copy(bc, o, &nc, &dc), *xg = host_copy(bg, o, &ng, &dg);
            CHECK(dc.kind == SL_DEVICE_CPU);
            CHECK_MSG(dg.kind == SL_DEVICE_CUDA && dg.id == 0, "%s output %d is not on GPU 0", what,
                      o);
            CHECK_EQ_INT(nc, ng);
            int worst = 0;
            for (size_t k = 0; k < nc && k < ng; k++) {
                int d = abs((int)xc[k] - (int)xg[k]);
                if (o == u8_tol_output ? d > worst : (d != 0 && worst == 0)) worst = d ? d : 1;
            }
            if (o == u8_tol_output)
                CHECK_MSG(worst <= 1, "%s batch %d output %d: differs by %d", what, it, o, worst);
            else
                CHECK_MSG(worst == 0, "%s batch %d output %d: GPU bytes differ from the CPU's",
                          what, it, o);
            total += nc;
            free(xc);
            free(xg);
        }
        sl_pipeline_release(c, bc);
        sl_pipeline_release(g, bg);
    }
    printf("%s: %d batches of %d, %zu bytes compared, GPU == CPU\n", what, batches, batch, total);
    sl_pipeline_free(c);
    sl_pipeline_free(g);
}

/* The GPU stage's stream has the pipeline's priority (here the device's most urgent), its batches
 * come as without one; a priority outside the device's range fails the build, naming it. */
static void stream_priority(const sl_pipeline_bind *binds) {
    int least = 0, greatest = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess);
    const char *text = "def p(data_path):\n"
                       "    jpegs, labels = fn.readers.caffe2(path=data_path)\n"
                       "    return fn.decoders.image(jpegs, device=\"mixed\"), labels\n";
    for (int k = 0; k < 2; k++) {
        sl_pipeline_config cfg;
        sl_pipeline_config_init(&cfg);
        cfg.batch_size = 16;
        cfg.num_threads = 2;
        cfg.device = sl_cuda(0);
        cfg.stream_priority = k == 0 ? greatest : least + 1;
        sl_err e;
        sl_pipeline *p = check_pipeline(&cfg, text, "priority.py", 1, binds, &e);
        if (k == 1) {
            CHECK_MSG(p == NULL, "priority %d (range %d..%d) was taken", least + 1, greatest,
                      least);
            CHECK_MSG(strstr(e.msg, "stream priority") != NULL, "message: %s", e.msg);
            sl_pipeline_free(p);
            continue;
        }
        CHECK_MSG(p != NULL, "%s", e.msg);
        if (!p) continue;
        /* the same batches as the CPU's, byte for byte (the decoder's own streams, the one
         * that decodes ahead included, take the priority too) */
        sl_pipeline *c = make(text, sl_cpu(), 16, 1, binds);
        for (int it = 0; it < 4 && c; it++) {
            sl_batch *b = NULL, *bc = NULL;
            CHECK_MSG(sl_pipeline_next(p, &b) == SL_OK, "%s", sl_pipeline_errmsg(p));
            CHECK_OK(sl_pipeline_next(c, &bc), NULL);
            for (int o = 0; o < 2 && b && bc; o++) {
                size_t ng, nc;
                sl_device dg, dc;
                unsigned char *xg = host_copy(b, o, &ng, &dg), *xc = host_copy(bc, o, &nc, &dc);
                CHECK_MSG(dg.kind == (o ? SL_DEVICE_CPU : SL_DEVICE_CUDA), "output %d's device", o);
                CHECK_MSG(ng == nc && memcmp(xg, xc, nc) == 0,
                          "priority %d, batch %d output %d: GPU bytes differ from the CPU's",
                          greatest, it, o);
                free(xg);
                free(xc);
            }
            sl_pipeline_release(p, b);
            sl_pipeline_release(c, bc);
        }
        sl_pipeline_free(c);
        int got = 1;
        CHECK(p->stream && cudaStreamGetPriority((cudaStream_t)p->stream, &got) == cudaSuccess);
        CHECK_EQ_INT(got, greatest);
        sl_pipeline_free(p);
    }
    printf("stream priority %d (range %d..%d) taken, %d refused\n", greatest, greatest, least,
           least + 1);
}

/* Building a pipeline on GPU 0 leaves the caller's current device as it was (GPU 1 where there
 * is one: a training loop's own CUDA work stays there), and its batches still come. */
static void caller_device_kept(const sl_pipeline_bind *binds) {
    int n = 0, mine = -1;
    CHECK(cudaGetDeviceCount(&n) == cudaSuccess);
    int other = n > 1 ? 1 : 0;
    CHECK(cudaSetDevice(other) == cudaSuccess);
    const char *text = "def p(data_path):\n"
                       "    jpegs, labels = fn.readers.caffe2(path=data_path)\n"
                       "    return fn.decoders.image(jpegs, device=\"mixed\"), labels\n";
    sl_pipeline *p = make(text, sl_cuda(0), 8, 1, binds);
    CHECK(cudaGetDevice(&mine) == cudaSuccess);
    CHECK_MSG(mine == other, "building on GPU 0 moved the caller from GPU %d to %d", other, mine);
    sl_batch *b = NULL;
    if (p) CHECK_MSG(sl_pipeline_next(p, &b) == SL_OK, "%s", sl_pipeline_errmsg(p));
    if (b) sl_pipeline_release(p, b);
    sl_pipeline_free(p);
    CHECK(cudaSetDevice(0) == cudaSuccess);
    printf("the caller's GPU %d kept across a build on GPU 0 (%d GPUs)\n", other, n);
}

int main(void) {
    gpu_require(1);
    char *seed = check_read_text(tool_pipeline("seed_training_sharding.py"));
    CHECK_MSG(seed != NULL, "cannot read the seed pipeline");
    sl_pipeline_bind binds[5] = {{"data_path", fixture("caffe2-fmnist-256")},
                                 {"image_size", "28"},
                                 {"num_classes", "10"},
                                 {"num_shards", "1"},
                                 {"shard_id", "0"}};
    if (seed) compare_runs("seed_training_sharding.py", seed, 64, 10, 5, binds, -1);
    free(seed);
    stream_priority(binds);
    caller_device_kept(binds);

    const char *aug =
        "def aug(data_path):\n"
        "    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True)\n"
        "    coin = fn.random.coin_flip(probability=0.5)\n"
        "    images = fn.decoders.image(jpegs, device=\"mixed\", output_type=types.RGB)\n"
        "    images = fn.flip(images, horizontal=coin, vertical=1)\n"
        "    images = fn.resize(images, resize_x=40, resize_y=36,\n"
        "                       interp_type=types.INTERP_NN)\n"
        "    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, crop=[32, 32],\n"
        "                                      mean=[0.5, 0.4, 0.3], std=[0.2, 0.3, 0.4],\n"
        "                                      scale=0.00392, mirror=coin)\n"
        "    raw = fn.cast(images, dtype=types.FLOAT)\n"
        "    labels = fn.one_hot(labels.gpu(), num_classes=10)\n"
        "    return raw, labels\n";
    compare_runs("augmenting pipeline (flip, resize NN, cmn fp16, cast)", aug, 32, 6, 1, binds, -1);
    const char *math =
        "def math(data_path):\n"
        "    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True)\n"
        "    images = fn.decoders.image(jpegs, device=\"mixed\", output_type=types.RGB)\n"
        "    scaled = images / 255.0\n"
        "    centred = 1 - scaled * 2\n"
        "    both = fn.cat(scaled, centred, axis_name=\"C\")\n"
        "    pair = fn.stack(images, -images, axis=0, axis_name=\"N\")\n"
        "    return both, pair\n";
    compare_runs("arithmetic, cat and stack after the mixed decoder", math, 32, 4, 1, binds, -1);
    /* conditionals on GPU data: split and merge of device samples (views), GPU ops on a
     * branch's smaller batch, a CPU value merged then sent over */
    const char *cond =
        "@pipeline_def(enable_conditionals=True)\n"
        "def cond(data_path):\n"
        "    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True)\n"
        "    images = fn.decoders.image(jpegs, device=\"mixed\", output_type=types.GRAY)\n"
        "    if labels > 4:\n"
        "        images = fn.flip(images, horizontal=1)\n"
        "        scale = fn.cast(labels, dtype=types.FLOAT) * 0.5\n"
        "    elif fn.random.coin_flip(dtype=types.BOOL):\n"
        "        images = fn.flip(images, vertical=1)\n"
        "        scale = fn.cast(labels, dtype=types.FLOAT) * 0.0 + 1.0\n"
        "    else:\n"
        "        scale = fn.cast(labels, dtype=types.FLOAT) - 3.0\n"
        "    out = fn.cast(images, dtype=types.FLOAT) * scale.gpu()\n"
        "    return out, (labels > 4).gpu()\n";
    compare_runs("conditionals on GPU data", cond, 32, 4, 1, binds, -1);
    /* gpu ops that sluice runs on the CPU alone: run in the CPU stage, each output copied over
     * (nonsilent_region has two); source info through .gpu() */
    const char *hosted =
        "def hosted(data_path):\n"
        "    raw, labels = fn.readers.file(file_root=data_path, random_shuffle=True)\n"
        "    audio = fn.cast(raw, dtype=types.FLOAT)\n"
        "    begin, length = fn.nonsilent_region(audio, window_length=4, device=\"gpu\")\n"
        "    coin = fn.random.coin_flip(probability=0.5, device=\"gpu\")\n"
        "    return begin, length, coin, fn.shapes(raw.gpu())\n";
    sl_pipeline_bind files[1] = {{"data_path", fixture("dali_extra")}};
    infos_seen = 0;
    compare_runs("gpu ops run on the CPU, with two outputs", hosted, 4, 3, 1, files, -1);
    CHECK_MSG(infos_seen > 0, "readers.file gave no source info");
    return check_done();
}
