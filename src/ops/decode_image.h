/* SPDX-License-Identifier: Apache-2.0 */
/* What decoders.image and decoders.image_random_crop share: the arguments, the decoder state that
 * sl__decode_image_create makes from them, and the steps of a batch. Setup peeks at the headers
 * (io/image_info.h) to size the outputs, then plans where each sample is decoded and in which order
 * (decode_image_plan.c): the pool's CPU decoder (decode_image_cpu.h), nvJPEG in the GPU stage of a
 * GPU pipeline (decode_image_gpu_nvjpeg.c), or the decoded-image cache (decode_image_cache.h). */
#ifndef SLUICE_OPS_DECODE_IMAGE_H
#define SLUICE_OPS_DECODE_IMAGE_H

#include "io/image_info.h"
#include "operator/gpu_args.h"
#include "operator/op.h"
#include "ops/decode_image_cpu.h"
#include "ops/jpeg_ycc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The arguments both decoders share (DALI's, plus sluice's max_image_pixels and skip_bad_records).
 */
#define SL__DECODE_IMAGE_ARGS                                                                      \
    {"output_type",                                                                                \
     SL_ARG_ENUM,                                                                                  \
     "types.RGB",                                                                                  \
     "color space of the output: RGB, BGR, GRAY (the "                                             \
     "JPEG luma plane), YCbCr (BT.601) or ANY_DATA (the file's channels)",                         \
     0,                                                                                            \
     "RGB|BGR|GRAY|YCbCr|ANY_DATA"},                                                               \
        {"adjust_orientation", SL_ARG_BOOL, "True", "apply the EXIF orientation", 0, NULL},        \
        {"use_fast_idct",                                                                          \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "libjpeg's fast integer IDCT (less exact)",                                               \
         0,                                                                                        \
         NULL},                                                                                    \
        {"dtype", SL_ARG_DTYPE, "types.UINT8", "output type (only UINT8)", 0, NULL},               \
        {"max_image_pixels",                                                                       \
         SL_ARG_INT,                                                                               \
         "268435456",                                                                              \
         "sluice: images with more pixels (H*W) are an SL_EFORMAT error; 0 = no limit",            \
         0,                                                                                        \
         NULL},                                                                                    \
        {"skip_bad_records",                                                                       \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "sluice: a record that cannot be decoded becomes an empty (0,0,C) image (or zeros when "  \
         "it fails after its header was read) and is counted, instead of failing the batch",       \
         0,                                                                                        \
         NULL},                                                                                    \
        {"hybrid_huffman_threshold",                                                               \
         SL_ARG_INT,                                                                               \
         "1000000",                                                                                \
         "mixed: accepted; nvJPEG's default back end picks CPU or GPU Huffman decoding itself",    \
         0,                                                                                        \
         NULL},                                                                                    \
        {"hw_decoder_load",                                                                        \
         SL_ARG_FLOAT,                                                                             \
         "0.65",                                                                                   \
         "mixed, nvJPEG: share of each batch's large baseline JPEGs given to the hardware JPEG "   \
         "engines; the rest (and progressive JPEGs) are decoded on the CPU pool, which gets the "  \
         "random crop windows cheapest to decode there. Without engines nvJPEG's GPU/hybrid back " \
         "end decodes them all",                                                                   \
         0,                                                                                        \
         NULL},                                                                                    \
        {"cpu_decode_max_pixels",                                                                  \
         SL_ARG_INT,                                                                               \
         "250000",                                                                                 \
         "sluice, mixed on a GPU pipeline: images of at most this many pixels (H*W; ImageNet's "   \
         "500x500) are decoded on the CPU pool into pinned memory and copied once per batch; "     \
         "larger JPEGs by nvJPEG",                                                                 \
         0,                                                                                        \
         NULL},                                                                                    \
        {"device_memory_padding", SL_ARG_INT, "16777216", "mixed: accepted, unused", 0, NULL},     \
        {"host_memory_padding", SL_ARG_INT, "8388608", "mixed: accepted, unused", 0, NULL},        \
        {"device_memory_padding_jpeg2k",                                                           \
         SL_ARG_INT,                                                                               \
         "0",                                                                                      \
         "mixed: accepted, unused (JPEG 2000 is decoded on the CPU pool, with OpenJPEG)",          \
         0,                                                                                        \
         NULL},                                                                                    \
        {"host_memory_padding_jpeg2k",                                                             \
         SL_ARG_INT,                                                                               \
         "0",                                                                                      \
         "mixed: accepted, unused (as device_memory_padding_jpeg2k)",                              \
         0,                                                                                        \
         NULL},                                                                                    \
        {"affine", SL_ARG_BOOL, "True", "mixed: pin the pipeline's CPU workers to CPUs", 0, NULL}, \
        {"jpeg_fancy_upsampling",                                                                  \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "accepted; the CPU path always uses "                                                     \
         "libjpeg's fancy upsampling",                                                             \
         0,                                                                                        \
         NULL},                                                                                    \
        {"preallocate_width_hint",                                                                 \
         SL_ARG_INT,                                                                               \
         "0",                                                                                      \
         "mixed, hardware JPEG engines: with preallocate_height_hint, the engines' buffers are "   \
         "made at the first batch for images this wide (0: grown as batches need them)",           \
         0,                                                                                        \
         NULL},                                                                                    \
        {"preallocate_height_hint",                                                                \
         SL_ARG_INT,                                                                               \
         "0",                                                                                      \
         "mixed, hardware JPEG engines: see preallocate_width_hint",                               \
         0,                                                                                        \
         NULL},                                                                                    \
    {                                                                                              \
        "bytes_per_sample_hint", SL_ARG_INTS, "[0]", "accepted, unused", 0, NULL                   \
    }

/* The decoder state both decoders share; made by sl__decode_image_create from the shared args. */
typedef struct sl__decode_image_state {
    const char *name;
    sl__img_type type;
    bool orient, fast_idct, skip_bad;
    int64_t max_pixels;
    int threads;
    sl__decode_image_worker **workers; /* one per pool thread */
    sl__decode_image_info *info;       /* per sample of the current batch; format 0 = skipped */
    int info_cap;
    int64_t skipped;            /* records skipped so far (atomic) */
    double hw_load;             /* hw_decoder_load */
    int prealloc_w, prealloc_h; /* preallocate_width_hint, preallocate_height_hint */
    int batch_size;             /* the pipeline's */
    int stream_priority;        /* the pipeline's, for nvJPEG's stream */
    int engines;            /* the GPU has hardware JPEG engines: -1 not known yet, 0, 1 (atomic) */
    int64_t cpu_max_pixels; /* cpu_decode_max_pixels */
    void *nvjpeg;           /* sl__nvjpeg, made on the GPU stage's thread (nvJPEG builds) */
    sl__gpu_scratch full;   /* cropping decoder: whole images before the crop */
    sl__gpu_args crop;      /* its crop descriptors */
    sl__gpu_args copies;    /* the cache's batched device copies */
    sl__decode_image_worker *gpu_worker;  /* the GPU stage's CPU fallback for what nvJPEG fails */
    int said_fallback;                    /* the fallback was logged */
    struct sl__decode_image_cache *cache; /* decoders.image with cache_size > 0, else NULL */
    int64_t decodes;                      /* images decoded so far, CPU and nvJPEG (atomic) */
    void *rank;                           /* plan's scratch: sort keys */
    int *order;                           /* plan's scratch, and a CPU pipeline's run order */
    int rank_cap;
} sl__decode_image_state;

/* Per batch on a GPU pipeline (*io->batch_state): where each sample is decoded, and the pinned
 * block the CPU decodes into, laid out as the device output buffer (one copy per run of CPU
 * samples). */
typedef struct sl__decode_image_batch {
    char *on_gpu; /* per sample: 0 the CPU pool decodes it, 1 nvJPEG, 2 a cache hit (no decode),
                     3 the engines decoded it ahead (the GPU stage finishes its planes) */
    int64_t *hw;  /* per sample: the whole image's (h, w), for nvJPEG */
    sl__decode_image_roi *roi;   /* cropping decoder: per sample window (setup runs ahead, so the
                                    op state's copy may already hold the next batch's) */
    sl__decode_image_info *info; /* per sample header facts (for the CPU fallback), same reason */
    size_t *hit_off;             /* per sample: a cache hit's offset in the device cache + 1 (0:
                                    not a hit), copied to the output */
    size_t *put_off;             /* per sample: where the cache keeps a miss, + 1 (0: it does not),
                                    copied there after decoding */
    int *run;                    /* the samples run_cpu decodes (io->run_index) */
    int cap;
    uint8_t *pinned;
    size_t pinned_cap;
    /* the engines' share decoded ahead (sl__decode_image_ahead): an jobs for the samples aidx,
     * adone[k] when job k was decoded (its sample's on_gpu is then 3) */
    struct sl__nvjpeg_ahead *ahead;
    struct sl__nvjpeg_job *ajobs;
    int *aidx;
    char *adone;
    int an, acap;
} sl__decode_image_batch;

/* setup's last step (decode_image_plan.c). On a GPU pipeline (io->device CUDA): routes every sample
 * (engines, CPU pool, cache) and sizes the pinned block to io->out[0]'s buffer. On a CPU pipeline:
 * the cache's decisions. On both: run_cpu's samples in the order of their decode's cost, dearest
 * first, so a batch does not wait on a large image started last. rois: the cropping decoder's
 * windows (NULL: whole images). */
sl_status sl__decode_image_plan(sl__decode_image_state *s, sl__op_io *io,
                                const sl__decode_image_roi *rois, sl_err *err);
/* nvJPEG builds (decode_image_gpu_nvjpeg.c), run_cpu's sample -1 on a GPU pipeline (the batch job
 * plan asks for when the decoder has engines): sends the batch's engine images to them from the CPU
 * stage's thread, so that they decode while the pool decodes the CPU's share and the GPU stage
 * finishes the batch before. rois as for plan. */
sl_status sl__decode_image_ahead(sl__decode_image_state *s, sl__op_io *io,
                                 const sl__decode_image_roi *rois, sl_err *err);
/* Where run_cpu writes sample i: its pinned slot on a GPU pipeline, else the output itself. */
uint8_t *sl__decode_image_target(const sl__op_io *io, int i);
/* nvJPEG builds (decode_image_gpu_nvjpeg.c), the GPU half: copies the CPU-decoded samples, decodes
 * the rest with nvJPEG into the outputs, or, when crop, into device scratch and then cuts each
 * batch roi out. */
sl_status sl__decode_image_run_gpu(sl__decode_image_state *s, sl__op_io *io, bool crop,
                                   sl_err *err);
void sl__decode_image_free_batch(void *batch_state);

sl_status sl__decode_image_create(const sl__args *a, const sl__op_init *init, void **out,
                                  sl_err *err);
void sl__decode_image_destroy(void *state);
/* Records skipped so far under skip_bad_records=True. */
int64_t sl__decode_image_skipped(void *state);
/* Images decoded so far (CPU and nvJPEG; cache hits are not decodes), and the cache's hits
 * (decode_image_cache.c). */
int64_t sl__decode_image_decodes(void *state);
int64_t sl__decode_image_cache_hits(void *state);

/* The chroma layout of a peeked 3-component JPEG (jpeg_ycc.h); 0 when jpeg_ycc.h does not handle
 * it. */
static inline int sl__decode_image_ycc_layout(const sl__decode_image_info *inf, sl__ycc_layout *l) {
    return sl__ycc_layout_of(inf->h, inf->w, (const uint8_t(*)[2])inf->samp, l);
}

/* The window decoders.image_random_crop chose for sample i of its last batch. */
const sl__decode_image_roi *sl__image_random_crop_roi(void *state, int i);

#ifdef __cplusplus
}
#endif
#endif
