/* Image decoding shared by decoders.image and decoders.image_random_crop: a cheap header peek
 * (format from the magic bytes, size, channels, EXIF orientation) that setup runs on the CPU to
 * size the outputs, and a per-thread decoder (libjpeg-turbo's libjpeg API for JPEG, libspng for
 * PNG) that writes an HWC uint8 image, or a window of it, straight into the output sample. */
#ifndef SLUICE_OPS_DECODE_IMAGE_H
#define SLUICE_OPS_DECODE_IMAGE_H

#include "ops/op.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* output_type, DALI's DALIImageType order */
typedef enum sl__img_type {
    SL__IMG_RGB = 0,
    SL__IMG_BGR = 1,
    SL__IMG_GRAY = 2,
    SL__IMG_YCBCR = 3,
    SL__IMG_ANY = 4
} sl__img_type;

enum { SL__IMG_JPEG = 1, SL__IMG_PNG = 2 };

typedef struct sl__decode_image_info {
    int format;      /* SL__IMG_JPEG, SL__IMG_PNG */
    int64_t h, w;    /* stored extents */
    int comps;       /* channels in the file (JPEG components; PNG: 1 gray, 2 GA, 3 RGB, 4 RGBA) */
    int orientation; /* EXIF orientation 1..8 (1 when not adjusting) */
    int64_t out_h, out_w; /* extents after orientation */
    int c;                /* output channels */
} sl__decode_image_info;

typedef struct sl__decode_image_roi {
    int64_t y, x, h, w; /* a window in oriented (output) coordinates */
} sl__decode_image_roi;

/* Parses only the headers: fills *info or returns SL_EFORMAT with the reason in why. */
sl_status sl__decode_image_peek(const uint8_t *data, size_t size, sl__img_type type, bool orient,
                                int64_t max_pixels, sl__decode_image_info *info, char *why,
                                size_t why_size);

typedef struct sl__decode_image_worker sl__decode_image_worker;

/* One per pool thread: keeps its libjpeg decompressor and scratch buffers between images. */
sl_status sl__decode_image_worker_create(bool save_exif, sl__decode_image_worker **out,
                                         sl_err *err);
void sl__decode_image_worker_free(sl__decode_image_worker *w);

/* Decodes the image described by info (from peek) into out: (roi->h, roi->w, info->c) uint8, or
 * (out_h, out_w, c) when roi is NULL. SL_EFORMAT with the reason in why on bad data. */
sl_status sl__decode_image_run(sl__decode_image_worker *w, const uint8_t *data, size_t size,
                               const sl__decode_image_info *info, sl__img_type type,
                               const sl__decode_image_roi *roi, bool fast_idct, uint8_t *out,
                               char *why, size_t why_size);

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
        {"hybrid_huffman_threshold",           SL_ARG_INT, "1000000",                              \
         "mixed: accepted, unused on the CPU", 0,          NULL},                                  \
        {"hw_decoder_load", SL_ARG_FLOAT, "0.9", "mixed: accepted, unused on the CPU", 0, NULL},   \
        {"device_memory_padding", SL_ARG_INT, "16777216", "mixed: accepted, unused", 0, NULL},     \
        {"host_memory_padding", SL_ARG_INT, "8388608", "mixed: accepted, unused", 0, NULL},        \
        {"affine", SL_ARG_BOOL, "True", "mixed: accepted, unused", 0, NULL},                       \
        {"jpeg_fancy_upsampling",                                                                  \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "accepted; the CPU path always uses "                                                     \
         "libjpeg's fancy upsampling",                                                             \
         0,                                                                                        \
         NULL},                                                                                    \
        {"preallocate_width_hint", SL_ARG_INT, "0", "accepted, unused", 0, NULL},                  \
        {"preallocate_height_hint", SL_ARG_INT, "0", "accepted, unused", 0, NULL}, {               \
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
    int64_t skipped; /* records skipped so far (atomic) */
} sl__decode_image_state;

sl_status sl__decode_image_create(const sl__args *a, const sl__op_init *init, void **out,
                                  sl_err *err);
void sl__decode_image_destroy(void *state);
/* Records skipped so far under skip_bad_records=True. */
int64_t sl__decode_image_skipped(void *state);

/* The window decoders.image_random_crop chose for sample i of its last batch. */
const sl__decode_image_roi *sl__image_random_crop_roi(void *state, int i);

/* "RGB" -> SL__IMG_RGB, ...; -1 when unknown. */
int sl__decode_image_type(const char *name);

#ifdef __cplusplus
}
#endif
#endif
