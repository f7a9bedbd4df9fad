/* nvJPEG batched decoding (decode_image_nvjpeg.h). Handles and states are made once, on the GPU
 * stage's thread; each batch parses every header (nvjpegJpegStreamParseHeader) to ask the hardware
 * back end whether it takes the image (nvjpegDecodeBatchedSupported), sends the first
 * ceil(hw_load * supported) of those to the engines (nvjpegDecodeBatchedInitialize +
 * nvjpegDecodeBatched) and everything else to the default back end (nvjpegDecode per image), all
 * on the pipeline's stream. */
#include "ops/decode_image_nvjpeg.h"

#include "core/alloc.h"
#include "core/log.h"

#include <nvjpeg.h>

#include <math.h>
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
    char *on_hw; /* per image: 1 engines, 0 default back end; 2 engines after the default failed */
    char *hw_ok; /* per image: the engines support it */
    int said;    /* the default back end's failure was logged */
};

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

/* One nvjpegDecodeBatched over the images whose on_hw flag equals want. */
static sl_status run_batch(sl__nvjpeg *d, nvjpegHandle_t h, nvjpegJpegState_t s, int n, char want,
                           const uint8_t *const *data, const size_t *len, uint8_t *const *dst,
                           const int64_t *w, int c, nvjpegOutputFormat_t fmt, cudaStream_t stream,
                           int *count, sl_err *err) {
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
    if (k == 0) return SL_OK;
    if (want) { /* the hardware engines: one batched call */
        NVJ_TRY(err, nvjpegDecodeBatchedInitialize(h, s, k, 1, fmt));
        NVJ_TRY(err, nvjpegDecodeBatched(h, s, d->bits, d->lens, d->imgs, stream));
        return SL_OK;
    }
    /* the default back end, image by image. On the H200 its calls (batched or not) answered
     * NVJPEG_STATUS_BAD_JPEG on photos the engines decode; an image the engines support then goes
     * to them (on_hw = 2, decoded by the caller's second engine batch). */
    for (int i = 0, j = 0; i < n; i++) {
        if (d->on_hw[i] != want) continue;
        nvjpegStatus_t r = nvjpegDecode(h, s, d->bits[j], d->lens[j], fmt, &d->imgs[j], stream);
        j++;
        if (r == NVJPEG_STATUS_SUCCESS) continue;
        if (!d->hw_ok[i])
            return sl_err_set(err, SL_ECUDA, "nvjpegDecode at %s:%d: nvJPEG status %d", __FILE__,
                              __LINE__, (int)r);
        if (!d->said++)
            sl__log(SL_LOG_WARN,
                    "nvJPEG: the default back end failed (status %d); images the "
                    "hardware engines support go to them instead",
                    (int)r);
        d->on_hw[i] = 2;
    }
    return SL_OK;
}

sl_status sl__nvjpeg_decode(sl__nvjpeg *d, int n, const uint8_t *const *data, const size_t *len,
                            uint8_t *const *dst, const int64_t *w, sl__img_type type, void *stream,
                            int *hw, sl_err *err) {
    *hw = 0;
    if (n < 1) return SL_OK;
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
    int quota = (int)ceil(d->hw_load * (double)supported);
    for (int i = 0; i < n; i++)
        if (d->on_hw[i] && quota-- <= 0) d->on_hw[i] = 0;
    int k;
    if (d->hw) {
        SL_TRY(run_batch(d, d->hw, d->hw_state, n, 1, data, len, dst, w, c, fmt,
                         (cudaStream_t)stream, &k, err));
        *hw = k;
    }
    SL_TRY(run_batch(d, d->sw, d->sw_state, n, 0, data, len, dst, w, c, fmt, (cudaStream_t)stream,
                     &k, err));
    if (d->hw) { /* what the default back end could not decode */
        SL_TRY(run_batch(d, d->hw, d->hw_state, n, 2, data, len, dst, w, c, fmt,
                         (cudaStream_t)stream, &k, err));
        *hw += k;
    }
    return SL_OK;
}
