/* nvJPEG batched decoding for the mixed image decoders (decode_image_nvjpeg.c, compiled only where
 * nvjpeg.h is found). A decoder owns two nvJPEG handles on one GPU: the hardware JPEG engines
 * (NVJPEG_BACKEND_HARDWARE, when the GPU has them: A100, H100, H200) and the default GPU/hybrid
 * back end. Each batch sends the share hw_decoder_load of the images the engines support to the
 * hardware and the rest to nvjpegDecodeBatched on the default handle, as DALI does. No nvJPEG type
 * appears here, so decode_image.c stays free of CUDA headers. */
#ifndef SLUICE_OPS_DECODE_IMAGE_NVJPEG_H
#define SLUICE_OPS_DECODE_IMAGE_NVJPEG_H

#include "ops/decode_image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__nvjpeg sl__nvjpeg;

/* On the calling thread's current device (the GPU stage's). */
sl_status sl__nvjpeg_create(double hw_load, sl__nvjpeg **out, sl_err *err);
void sl__nvjpeg_free(sl__nvjpeg *d);

/* Decodes n JPEGs (host bytes) into device images dst[i]: (h[i], w[i], c) uint8 HWC, c 3 for RGB
 * and BGR, 1 for GRAY (the luma plane). Queued on stream; *hw = images the engines took. An image
 * nvJPEG does not decode (any failure status, from either back end) is not an error: failed[i] is
 * set to 1 and the caller decodes it on the CPU; errors are left for what is not about one image.
 */
sl_status sl__nvjpeg_decode(sl__nvjpeg *d, int n, const uint8_t *const *data, const size_t *len,
                            uint8_t *const *dst, const int64_t *w, sl__img_type type, void *stream,
                            int *hw, char *failed, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
