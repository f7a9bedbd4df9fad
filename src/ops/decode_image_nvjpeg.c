/* nvJPEG batched decoding (decode_image_nvjpeg.h). Handles and states are made once, on the GPU
 * stage's thread; each batch parses every header (nvjpegJpegStreamParseHeader) to ask the hardware
 * back end whether it takes the image (nvjpegDecodeBatchedSupported), sends the first
 * ceil(hw_load * supported) of those to the engines (nvjpegDecodeBatchedInitialize +
 * nvjpegDecodeBatched) and everything else to the default back end (nvjpegDecode per image), all
 * on the pipeline's stream. Whatever a back end fails on goes on: from the default back end to the
 * engines when they support the image, else (and from the engines) back to the caller, who decodes
 * it on the CPU. A default back end that has failed on its first images and never succeeded is
 * left alone from then on (on the H200 with CUDA 13 it answered NVJPEG_STATUS_BAD_JPEG to
 * everything). */
#include "ops/decode_image_nvjpeg.h"

#include "core/alloc.h"
#include "core/log.h"

#include <nvjpeg.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct sl__nvjpeg {
    double hw_load;
    nvjpegHandle_t hw, sw;
    nvjpegJpegState_t hw_state, sw_state;
    nvjpegJpegStream_t parse;
    int cap;
    const unsigned char **bits;
    size_t *lens;
    nvjpegImage_t *imgs;
    char *on_hw; /* per image: 1 engines, 0 default back end; 2 engines after the default failed;
                    3 not decoded (the caller's CPU fallback) */
    char *hw_ok; /* per image: the engines support it */
    int said, said_hw;     /* the default back end's / the engines' failure was logged */
    int64_t sw_ok, sw_bad; /* the default back end's successes and failures so far */
};

/* After this many failures without one success the default back end is no longer tried. */
#define SW_GIVE_UP 16

#define NVJ_TRY(err, expr)                                                                         \
    do {                                                                                           \
        nvjpegStatus_t nvj__s = (expr);                                                            \
        if (nvj__s != NVJPEG_STATUS_SUCCESS)                                                       \
            return sl_err_set((err), SL_ECUDA, "%s at %s:%d: nvJPEG status %d", #expr, __FILE__,   \
                              __LINE__, (int)nvj__s);                                              \
    } while (0)

void sl__nvjpeg_free(sl__nvjpeg *d) {
    if (!d) return;
    if (d->parse) nvjpegJpegStreamDestroy(d->parse);
    if (d->hw_state) nvjpegJpegStateDestroy(d->hw_state);
    if (d->sw_state) nvjpegJpegStateDestroy(d->sw_state);
    if (d->hw) nvjpegDestroy(d->hw);
    if (d->sw) nvjpegDestroy(d->sw);
    free(d->bits);
    free(d->lens);
    free(d->imgs);
    free(d->on_hw);
    free(d->hw_ok);
    free(d);
}

static sl_status create(sl__nvjpeg *d, sl_err *err) {
    NVJ_TRY(err, nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &d->sw));
    NVJ_TRY(err, nvjpegJpegStateCreate(d->sw, &d->sw_state));
    if (d->hw_load > 0 &&
        nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &d->hw) == NVJPEG_STATUS_SUCCESS) {
        if (nvjpegJpegStateCreate(d->hw, &d->hw_state) != NVJPEG_STATUS_SUCCESS ||
            nvjpegJpegStreamCreate(d->hw, &d->parse) != NVJPEG_STATUS_SUCCESS) {
            nvjpegDestroy(d->hw);
            d->hw = NULL;
        }
    } else {
        d->hw = NULL;
    }
    sl__log(SL_LOG_INFO, "nvJPEG: %s",
            d->hw ? "hardware JPEG decoder engines in use"
                  : "no hardware JPEG decoder: GPU/hybrid back end only");
    return SL_OK;
}

sl_status sl__nvjpeg_create(double hw_load, sl__nvjpeg **out, sl_err *err) {
    *out = NULL;
    sl__nvjpeg *d = sl__calloc(1, sizeof *d, err);
    if (!d) return SL_ENOMEM;
    d->hw_load = hw_load < 0 ? 0 : hw_load > 1 ? 1 : hw_load;
    sl_status st = create(d, err);
    if (st != SL_OK) {
        sl__nvjpeg_free(d);
        return st;
    }
    *out = d;
    return SL_OK;
}

static sl_status grow(sl__nvjpeg *d, int n, sl_err *err) {
    if (n <= d->cap) return SL_OK;
    free(d->bits);
    free(d->lens);
    free(d->imgs);
    free(d->on_hw);
    free(d->hw_ok);
    d->hw_ok = calloc((size_t)n, 1);
    d->bits = calloc((size_t)n, sizeof *d->bits);
    d->lens = calloc((size_t)n, sizeof *d->lens);
    d->imgs = calloc((size_t)n, sizeof *d->imgs);
    d->on_hw = calloc((size_t)n, 1);
    d->cap = 0;
    if (!d->bits || !d->lens || !d->imgs || !d->on_hw || !d->hw_ok)
        return sl_err_set(err, SL_ENOMEM, "nvJPEG: out of memory for %d images", n);
    d->cap = n;
    return SL_OK;
}

/* One nvjpegDecodeBatched (engines) or nvjpegDecode per image (default back end) over the images
 * whose on_hw flag equals want; an image it does not decode gets its next route in on_hw. */
static void run_batch(sl__nvjpeg *d, nvjpegHandle_t h, nvjpegJpegState_t s, int n, char want,
                      const uint8_t *const *data, const size_t *len, uint8_t *const *dst,
                      const int64_t *w, int c, nvjpegOutputFormat_t fmt, cudaStream_t stream,
                      int *count) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (d->on_hw[i] != want) continue;
        d->bits[k] = data[i];
        d->lens[k] = len[i];
        memset(&d->imgs[k], 0, sizeof d->imgs[k]);
        d->imgs[k].channel[0] = dst[i];
        d->imgs[k].pitch[0] = (size_t)w[i] * (size_t)c;
        k++;
    }
    *count = k;
    if (k == 0) return;
    if (want) { /* the hardware engines: one batched call; if it fails, all of it to the CPU */
        nvjpegStatus_t r = nvjpegDecodeBatchedInitialize(h, s, k, 1, fmt);
        if (r == NVJPEG_STATUS_SUCCESS)
            r = nvjpegDecodeBatched(h, s, d->bits, d->lens, d->imgs, stream);
        if (r == NVJPEG_STATUS_SUCCESS) return;
        if (!d->said_hw++)
            sl__log(SL_LOG_WARN,
                    "nvJPEG: the hardware decoder failed on a batch of %d (status %d); those "
                    "images are decoded on the CPU",
                    k, (int)r);
        for (int i = 0; i < n; i++)
            if (d->on_hw[i] == want) d->on_hw[i] = 3;
        *count = 0;
        return;
    }
    /* the default back end, image by image. On the H200 (CUDA 13) it answered
     * NVJPEG_STATUS_BAD_JPEG on photos the engines decode; such an image goes to the engines when
     * they support it (on_hw = 2, the caller's second engine batch), else to the CPU. */
    for (int i = 0, j = 0; i < n; i++) {
        if (d->on_hw[i] != want) continue;
        nvjpegStatus_t r =
            d->sw_ok == 0 && d->sw_bad >= SW_GIVE_UP
                ? NVJPEG_STATUS_JPEG_NOT_SUPPORTED
                : nvjpegDecode(h, s, d->bits[j], d->lens[j], fmt, &d->imgs[j], stream);
        j++;
        if (r == NVJPEG_STATUS_SUCCESS) {
            d->sw_ok++;
            continue;
        }
        if (d->sw_bad++ == 0)
            sl__log(SL_LOG_WARN,
                    "nvJPEG: the default back end failed (status %d); images the hardware "
                    "engines support go to them, the others are decoded on the CPU",
                    (int)r);
        d->on_hw[i] = d->hw && d->hw_ok[i] ? 2 : 3;
        (*count)--;
    }
}

sl_status sl__nvjpeg_decode(sl__nvjpeg *d, int n, const uint8_t *const *data, const size_t *len,
                            uint8_t *const *dst, const int64_t *w, sl__img_type type, void *stream,
                            int *hw, char *failed, sl_err *err) {
    *hw = 0;
    if (n < 1) return SL_OK;
    memset(failed, 0, (size_t)n);
    SL_TRY(grow(d, n, err));
    nvjpegOutputFormat_t fmt = type == SL__IMG_GRAY  ? NVJPEG_OUTPUT_Y
                               : type == SL__IMG_BGR ? NVJPEG_OUTPUT_BGRI
                                                     : NVJPEG_OUTPUT_RGBI;
    int c = type == SL__IMG_GRAY ? 1 : 3;
    int supported = 0;
    for (int i = 0; i < n; i++) {
        d->on_hw[i] = d->hw_ok[i] = 0;
        if (!d->hw) continue;
        int no = 1;
        if (nvjpegJpegStreamParseHeader(d->hw, data[i], len[i], d->parse) ==
                NVJPEG_STATUS_SUCCESS &&
            nvjpegDecodeBatchedSupported(d->hw, d->parse, &no) == NVJPEG_STATUS_SUCCESS && no == 0)
            d->on_hw[i] = d->hw_ok[i] = 1, supported++;
    }
    /* the engines take ceil(hw_load * supported) of them, the rest go to the GPU/hybrid path */
    bool sw_gone = d->sw_ok == 0 && d->sw_bad >= SW_GIVE_UP; /* the engines take all they can */
    int quota = sw_gone ? supported : (int)ceil(d->hw_load * (double)supported);
    for (int i = 0; i < n; i++)
        if (d->on_hw[i] && quota-- <= 0) d->on_hw[i] = 0;
    int k;
    cudaStream_t st = (cudaStream_t)stream;
    if (d->hw) {
        run_batch(d, d->hw, d->hw_state, n, 1, data, len, dst, w, c, fmt, st, &k);
        *hw = k;
    }
    run_batch(d, d->sw, d->sw_state, n, 0, data, len, dst, w, c, fmt, st, &k);
    if (d->hw) { /* what the default back end could not decode */
        run_batch(d, d->hw, d->hw_state, n, 2, data, len, dst, w, c, fmt, st, &k);
        *hw += k;
    }
    for (int i = 0; i < n; i++) failed[i] = d->on_hw[i] == 3;
    return SL_OK;
}
