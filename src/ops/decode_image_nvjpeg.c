/* nvJPEG batched decoding (decode_image_nvjpeg.h). Handles and states are made once, on the GPU
 * stage's thread; each batch parses every header once (nvjpegJpegStreamParseHeader), which gives
 * the planes' sizes and tells whether the hardware back end takes the image
 * (nvjpegDecodeBatchedSupported), sends those to the engines (nvjpegDecodeBatchedInitialize +
 * nvjpegDecodeBatched) and everything else to the default back end (nvjpegDecode per image), all
 * on the pipeline's stream. (The hw_decoder_load split happens before, in the decoder's setup: what
 * the engines are not given is decoded on the CPU pool.) Colour images go through
 * NVJPEG_OUTPUT_YUV: their planes land in a per-batch device scratch block and one sl__cuda_ycc
 * launch finishes them as libjpeg-turbo does (an image whose planes nvJPEG sizes differently from
 * libjpeg goes to the CPU; if the engines refuse YUV output, the default back end takes those
 * images). Whatever a back end fails on goes on: from the default back end to the engines when
 * they support the image, else (and from the engines) back to the caller, who decodes it on the
 * CPU. A default back end that has failed on its first images and never succeeded is left alone
 * from then on (on the H200 with CUDA 13 it answered NVJPEG_STATUS_BAD_JPEG to everything). */
#include "ops/decode_image_nvjpeg.h"

#include "core/alloc.h"
#include "core/log.h"
#include "cuda/kernels.h"
#include "ops/gpu_args.h"

#include <nvjpeg.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct sl__nvjpeg {
    int device;
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
    char *yuv;   /* per image: decoded to planes and finished by sl__cuda_ycc */
    size_t *plane_off; /* per yuv image: its planes' offset in the scratch block */
    sl__gpu_scratch planes;
    sl__gpu_args ycc;          /* the sl__cuda_ycc descriptors */
    int said, said_hw;         /* the default back end's / the engines' failure was logged */
    int hw_yuv_ok, hw_yuv_bad; /* the engines' YUV batches that worked / failed so far */
    int64_t sw_ok, sw_bad;     /* the default back end's successes and failures so far */
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

static void free_arrays(sl__nvjpeg *d) {
    free(d->bits);
    free(d->lens);
    free(d->imgs);
    free(d->on_hw);
    free(d->hw_ok);
    free(d->yuv);
    free(d->plane_off);
}

void sl__nvjpeg_free(sl__nvjpeg *d) {
    if (!d) return;
    if (d->parse) nvjpegJpegStreamDestroy(d->parse);
    if (d->hw_state) nvjpegJpegStateDestroy(d->hw_state);
    if (d->sw_state) nvjpegJpegStateDestroy(d->sw_state);
    if (d->hw) nvjpegDestroy(d->hw);
    if (d->sw) nvjpegDestroy(d->sw);
    sl__gpu_scratch_free(&d->planes);
    sl__gpu_args_free(&d->ycc);
    free_arrays(d);
    free(d);
}

static sl_status create(sl__nvjpeg *d, sl_err *err) {
    if (cudaGetDevice(&d->device) != cudaSuccess)
        return sl_err_set(err, SL_ECUDA, "nvJPEG: no current CUDA device");
    NVJ_TRY(err, nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &d->sw));
    NVJ_TRY(err, nvjpegJpegStateCreate(d->sw, &d->sw_state));
    const char *env = getenv("SLUICE_NVJPEG_ENGINES");
    if (!(env && !strcmp(env, "0")) &&
        nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &d->hw) == NVJPEG_STATUS_SUCCESS) {
        if (nvjpegJpegStateCreate(d->hw, &d->hw_state) != NVJPEG_STATUS_SUCCESS ||
            nvjpegJpegStreamCreate(d->hw, &d->parse) != NVJPEG_STATUS_SUCCESS) {
            nvjpegDestroy(d->hw);
            d->hw = NULL;
        }
    } else {
        d->hw = NULL;
    }
    if (!d->parse) NVJ_TRY(err, nvjpegJpegStreamCreate(d->sw, &d->parse));
    sl__log(SL_LOG_INFO, "nvJPEG: %s",
            d->hw                      ? "hardware JPEG decoder engines in use"
            : env && !strcmp(env, "0") ? "SLUICE_NVJPEG_ENGINES=0: GPU/hybrid back end only"
                                       : "no hardware JPEG decoder: GPU/hybrid back end only");
    return SL_OK;
}

bool sl__nvjpeg_has_engines(const sl__nvjpeg *d) {
    return d->hw != NULL;
}

void sl__nvjpeg_preallocate(sl__nvjpeg *d, int n, int w, int h, bool gray) {
    if (!d->hw || n < 1 || w < 1 || h < 1) return;
    nvjpegStatus_t r = nvjpegDecodeBatchedPreAllocate(d->hw, d->hw_state, n, w, h,
                                                      gray ? NVJPEG_CSS_GRAY : NVJPEG_CSS_444,
                                                      gray ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_YUV);
    if (r != NVJPEG_STATUS_SUCCESS)
        sl__log(SL_LOG_WARN,
                "nvJPEG: preallocating the hardware decoder for %d images of %dx%d failed "
                "(status %d); its buffers grow as batches need them",
                n, w, h, (int)r);
}

sl_status sl__nvjpeg_create(sl__nvjpeg **out, sl_err *err) {
    *out = NULL;
    sl__nvjpeg *d = sl__calloc(1, sizeof *d, err);
    if (!d) return SL_ENOMEM;
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
    free_arrays(d);
    size_t k = (size_t)n;
    d->bits = calloc(k, sizeof *d->bits);
    d->lens = calloc(k, sizeof *d->lens);
    d->imgs = calloc(k, sizeof *d->imgs);
    d->on_hw = calloc(k, 1);
    d->hw_ok = calloc(k, 1);
    d->yuv = calloc(k, 1);
    d->plane_off = calloc(k, sizeof *d->plane_off);
    d->cap = 0;
    if (!d->bits || !d->lens || !d->imgs || !d->on_hw || !d->hw_ok || !d->yuv || !d->plane_off)
        return sl_err_set(err, SL_ENOMEM, "nvJPEG: out of memory for %d images", n);
    d->cap = n;
    return SL_OK;
}

/* The engines have failed every YUV batch so far, twice or more: they are not asked again. */
static bool no_hw_yuv(const sl__nvjpeg *d) {
    return d->hw_yuv_ok == 0 && d->hw_yuv_bad >= 2;
}

/* Plane pitches: rows start on 32-byte boundaries. */
static size_t pitch_of(int64_t w) {
    return ((size_t)w + 31) & ~(size_t)31;
}

/* The output descriptor of job j: its three planes in the scratch block, or dst itself. */
static void describe(const sl__nvjpeg *d, int i, const sl__nvjpeg_job *j, int c,
                     nvjpegImage_t *im) {
    memset(im, 0, sizeof *im);
    if (!d->yuv[i]) {
        im->channel[0] = j->dst;
        im->pitch[0] = (size_t)j->w * (size_t)c;
        return;
    }
    unsigned char *p = (unsigned char *)d->planes.dev + d->plane_off[i];
    size_t yp = pitch_of(j->ycc.w), cp = pitch_of(j->ycc.cw);
    im->channel[0] = p;
    im->channel[1] = p + yp * (size_t)j->ycc.h;
    im->channel[2] = im->channel[1] + cp * (size_t)j->ycc.ch;
    im->pitch[0] = yp;
    im->pitch[1] = im->pitch[2] = cp;
}

/* One nvjpegDecodeBatched (engines) or nvjpegDecode per image (default back end) over the images
 * whose on_hw flag equals want and whose yuv flag equals yuv; an image it does not decode gets its
 * next route in on_hw. */
static void run_batch(sl__nvjpeg *d, nvjpegHandle_t h, nvjpegJpegState_t s, int n, char want,
                      char yuv, const sl__nvjpeg_job *jobs, int c, nvjpegOutputFormat_t direct,
                      cudaStream_t stream, int *count) {
    nvjpegOutputFormat_t fmt = yuv ? NVJPEG_OUTPUT_YUV : direct;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (d->on_hw[i] != want || d->yuv[i] != yuv) continue;
        d->bits[k] = jobs[i].data;
        d->lens[k] = jobs[i].len;
        describe(d, i, &jobs[i], c, &d->imgs[k]);
        k++;
    }
    *count = k;
    if (k == 0) return;
    if (want) { /* the hardware engines: one batched call; if it fails, all of it goes on */
        nvjpegStatus_t r = nvjpegDecodeBatchedInitialize(h, s, k, 1, fmt);
        if (r == NVJPEG_STATUS_SUCCESS)
            r = nvjpegDecodeBatched(h, s, d->bits, d->lens, d->imgs, stream);
        if (r == NVJPEG_STATUS_SUCCESS) {
            d->hw_yuv_ok += yuv;
            return;
        }
        /* planes the engines refuse go to the default back end (while it works) */
        bool to_sw = yuv && want == 1 && !(d->sw_ok == 0 && d->sw_bad >= SW_GIVE_UP);
        if (yuv) d->hw_yuv_bad++;
        if (!d->said_hw++)
            sl__log(SL_LOG_WARN,
                    "nvJPEG: the hardware decoder failed on a batch of %d (status %d, %s output); "
                    "those images are decoded %s",
                    k, (int)r, yuv ? "YUV" : "direct",
                    to_sw ? "by the default back end" : "on the CPU");
        for (int i = 0; i < n; i++)
            if (d->on_hw[i] == want && d->yuv[i] == yuv) d->on_hw[i] = to_sw ? 0 : 3;
        *count = 0;
        return;
    }
    /* the default back end, image by image; what it fails on goes to the engines when they
     * support it (on_hw = 2, the caller's second engine batch), else to the CPU. */
    for (int i = 0, j = 0; i < n; i++) {
        if (d->on_hw[i] != want || d->yuv[i] != yuv) continue;
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
        d->on_hw[i] = d->hw && d->hw_ok[i] && !(yuv && no_hw_yuv(d)) ? 2 : 3;
        (*count)--;
    }
}

/* Parses each header once (nvjpegJpegStreamParseHeader, with the engines' handle when there are
 * engines): marks the jobs that go through planes and places their planes in the scratch block,
 * and asks the engines whether they take each image. An image whose planes nvJPEG would size
 * differently from libjpeg, or whose header nvJPEG does not parse, is not decoded here (on_hw =
 * 3). */
static sl_status plan(sl__nvjpeg *d, int n, const sl__nvjpeg_job *jobs, sl__img_type type,
                      cudaStream_t stream, sl_err *err) {
    nvjpegHandle_t h = d->hw ? d->hw : d->sw; /* the handle d->parse was made with */
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const sl__ycc_layout *l = &jobs[i].ycc;
        d->yuv[i] = type != SL__IMG_GRAY && l->w > 0;
        d->hw_ok[i] = 0;
        bool ask_hw = d->hw && !(d->yuv[i] && no_hw_yuv(d));
        if (!d->yuv[i] && !ask_hw) continue;
        if (nvjpegJpegStreamParseHeader(h, jobs[i].data, jobs[i].len, d->parse) !=
            NVJPEG_STATUS_SUCCESS) {
            if (d->yuv[i]) d->on_hw[i] = 3;
            continue;
        }
        if (d->yuv[i]) {
            unsigned nc = 0, wd[3] = {0}, ht[3] = {0};
            bool same =
                nvjpegJpegStreamGetComponentsNum(d->parse, &nc) == NVJPEG_STATUS_SUCCESS && nc == 3;
            for (unsigned c = 0; c < 3 && same; c++)
                same = nvjpegJpegStreamGetComponentDimensions(d->parse, c, &wd[c], &ht[c]) ==
                       NVJPEG_STATUS_SUCCESS;
            if (!same || wd[0] != (unsigned)l->w || ht[0] != (unsigned)l->h ||
                wd[1] != (unsigned)l->cw || ht[1] != (unsigned)l->ch || wd[2] != (unsigned)l->cw ||
                ht[2] != (unsigned)l->ch) {
                d->on_hw[i] = 3;
                continue;
            }
            d->plane_off[i] = total;
            total += (pitch_of(l->w) * (size_t)l->h + 2 * pitch_of(l->cw) * (size_t)l->ch + 255) &
                     ~(size_t)255;
        }
        int no = 1;
        if (ask_hw && nvjpegDecodeBatchedSupported(d->hw, d->parse, &no) == NVJPEG_STATUS_SUCCESS &&
            no == 0)
            d->on_hw[i] = d->hw_ok[i] = 1;
    }
    if (total && !sl__gpu_scratch_get(&d->planes, d->device, total, stream, err))
        return err->status;
    return SL_OK;
}

/* One sl__cuda_ycc launch over the images decoded to planes. */
static sl_status finish_planes(sl__nvjpeg *d, int n, const sl__nvjpeg_job *jobs, sl__img_type type,
                               cudaStream_t stream, sl_err *err) {
    int m = 0;
    for (int i = 0; i < n; i++) m += d->yuv[i] && d->on_hw[i] != 3;
    if (m == 0) return SL_OK;
    sl__cuda_ycc_desc *q = sl__gpu_args_host(&d->ycc, d->device, (size_t)m * sizeof *q, err);
    if (!q) return err->status;
    int64_t maxpix = 0;
    m = 0;
    for (int i = 0; i < n; i++) {
        if (!d->yuv[i] || d->on_hw[i] == 3) continue;
        const sl__nvjpeg_job *j = &jobs[i];
        nvjpegImage_t im;
        describe(d, i, j, 3, &im);
        sl__cuda_ycc_desc *x = &q[m++];
        x->y = im.channel[0], x->cb = im.channel[1], x->cr = im.channel[2];
        x->ypitch = (int64_t)im.pitch[0], x->cpitch = (int64_t)im.pitch[1];
        x->l = j->ycc;
        bool win = j->out_w > 0;
        x->y0 = win ? j->y0 : 0, x->x0 = win ? j->x0 : 0;
        x->out_h = win ? j->out_h : j->ycc.h, x->out_w = win ? j->out_w : j->ycc.w;
        x->out = j->dst;
        if ((int64_t)x->out_h * x->out_w > maxpix) maxpix = (int64_t)x->out_h * x->out_w;
    }
    void *dev = NULL;
    SL_TRY(sl__gpu_args_send(&d->ycc, (size_t)m * sizeof *q, stream, &dev, err));
    return sl__cuda_ycc(dev, m, maxpix, type == SL__IMG_BGR, stream, err);
}

sl_status sl__nvjpeg_decode(sl__nvjpeg *d, int n, const sl__nvjpeg_job *jobs, sl__img_type type,
                            void *stream, int *hw, char *failed, sl_err *err) {
    *hw = 0;
    if (n < 1) return SL_OK;
    memset(failed, 0, (size_t)n);
    SL_TRY(grow(d, n, err));
    nvjpegOutputFormat_t fmt = type == SL__IMG_GRAY  ? NVJPEG_OUTPUT_Y
                               : type == SL__IMG_BGR ? NVJPEG_OUTPUT_BGRI
                                                     : NVJPEG_OUTPUT_RGBI;
    int c = type == SL__IMG_GRAY ? 1 : 3;
    cudaStream_t st = (cudaStream_t)stream;
    memset(d->on_hw, 0, (size_t)n);
    SL_TRY(plan(d, n, jobs, type, st, err));
    int k;
    for (int yuv = 1; yuv >= 0; yuv--) /* planes first: a refusal moves them to the default */
        if (d->hw) {
            run_batch(d, d->hw, d->hw_state, n, 1, (char)yuv, jobs, c, fmt, st, &k);
            *hw += k;
        }
    for (int yuv = 1; yuv >= 0; yuv--)
        run_batch(d, d->sw, d->sw_state, n, 0, (char)yuv, jobs, c, fmt, st, &k);
    for (int yuv = 1; yuv >= 0 && d->hw; yuv--) { /* what the default back end could not decode */
        run_batch(d, d->hw, d->hw_state, n, 2, (char)yuv, jobs, c, fmt, st, &k);
        *hw += k;
    }
    SL_TRY(finish_planes(d, n, jobs, type, st, err));
    for (int i = 0; i < n; i++) failed[i] = d->on_hw[i] == 3;
    return SL_OK;
}
