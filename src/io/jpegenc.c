/* SPDX-License-Identifier: Apache-2.0 */
/* JPEG encoding and image header probing (see jpegenc.h). libjpeg reports errors through a
 * longjmp back into the calling function, which turns them into SL_EFORMAT / SL_EIO. */
#include "io/jpegenc.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h>
#include <jerror.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jerr;

static void on_error(j_common_ptr c) {
    jerr *e = (jerr *)c->err;
    c->err->format_message(c, e->msg);
    longjmp(e->jb, 1);
}

static void no_output(j_common_ptr c) {
    (void)c;
}

sl_status sl__jpegenc_encode(const uint8_t *pixels, int w, int h, int c, int quality, uint8_t **out,
                             size_t *size, sl_err *err) {
    *out = NULL;
    *size = 0;
    if (w < 1 || h < 1 || (c != 1 && c != 3) || quality < 1 || quality > 100)
        return sl_err_set(err, SL_EINVAL, "JPEG encoding of %dx%dx%d at quality %d is not possible",
                          h, w, c, quality);
    struct jpeg_compress_struct cinfo;
    jerr je;
    unsigned char *volatile buf = NULL;
    unsigned long len = 0;
    cinfo.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = on_error;
    je.pub.output_message = no_output;
    if (setjmp(je.jb)) {
        jpeg_destroy_compress(&cinfo);
        free(buf);
        return sl_err_set(err, SL_EIO, "JPEG encoding failed: %s", je.msg);
    }
    jpeg_create_compress(&cinfo);
    unsigned char *b = NULL;
    jpeg_mem_dest(&cinfo, &b, &len);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = c;
    cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    buf = b;
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * (size_t)w * (size_t)c);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    buf = b; /* jpeg_mem_dest may have reallocated */
    jpeg_destroy_compress(&cinfo);
    *out = buf;
    *size = len;
    return SL_OK;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

sl_status sl__jpegenc_probe(const uint8_t *data, size_t size, sl__image_info *info, sl_err *err) {
    memset(info, 0, sizeof *info);
    info->format = "unknown";
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (size >= 26 && !memcmp(data, png_sig, 8) && !memcmp(data + 12, "IHDR", 4)) {
        static const int chans[7] = {1, 0, 3, 1, 2, 0, 4};
        info->format = "png";
        info->width = (int)be32(data + 16);
        info->height = (int)be32(data + 20);
        info->channels = data[25] <= 6 ? chans[data[25]] : 0;
        return SL_OK;
    }
    if (size < 4 || data[0] != 0xFF || data[1] != 0xD8)
        return sl_err_set(err, SL_EFORMAT, "not a JPEG or PNG image (%zu bytes)", size);
    struct jpeg_decompress_struct d;
    jerr je;
    d.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = on_error;
    je.pub.output_message = no_output;
    if (setjmp(je.jb)) {
        jpeg_destroy_decompress(&d);
        if (je.pub.msg_code == JERR_OUT_OF_MEMORY) /* not the file's fault */
            return sl_err_set(err, SL_ENOMEM, "out of memory reading a JPEG header: %s", je.msg);
        return sl_err_set(err, SL_EFORMAT, "bad JPEG header: %s", je.msg);
    }
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, data, (unsigned long)size);
    jpeg_read_header(&d, TRUE);
    info->format = "jpeg";
    info->width = (int)d.image_width;
    info->height = (int)d.image_height;
    info->channels = d.num_components;
    jpeg_destroy_decompress(&d);
    return SL_OK;
}
