/* SPDX-License-Identifier: Apache-2.0 */
/* sl_dataset_writer (sluice/dataset.h): records into an LMDB of Caffe2 TensorProtos or Caffe
 * Datums, or into a TFRecord file of tf.train.Example records in TensorFlow's image-classification
 * layout (image/encoded bytes, image/class/label int64), with the library's own encoders and LMDB
 * writer (src/io/). */
#include "sluice/dataset.h"

#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/lmdb.h"
#include "io/protowire.h"
#include "io/tfrecord.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* LMDB's largest key (mdb_env_get_maxkeysize with the default page size) */
#define KEY_LIMIT 511

struct sl_dataset_writer {
    sl_dataset_format format;
    sl__lmdb_writer *lmdb;
    FILE *tf;
    char *path;
    sl__pw_buf rec, frame;
};

sl_status sl_dataset_format_parse(const char *name, sl_dataset_format *out, sl_err *err) {
    static const char *const names[] = {"caffe2", "caffe", "tfrecord"};
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, names[i])) {
            *out = (sl_dataset_format)i;
            return SL_OK;
        }
    return sl_err_set(err, SL_EINVAL, "a store format is caffe2, caffe or tfrecord, not '%s'",
                      name ? name : "(null)");
}

sl_status sl_dataset_writer_create(const char *path, sl_dataset_format format,
                                   sl_dataset_writer **out, sl_err *err) {
    *out = NULL;
    if (format != SL_DATASET_CAFFE2 && format != SL_DATASET_CAFFE && format != SL_DATASET_TFRECORD)
        return sl_err_set(err, SL_EINVAL,
                          "sl_dataset_writer_create: format %d is none of "
                          "SL_DATASET_CAFFE2, _CAFFE, _TFRECORD",
                          (int)format);
    sl_dataset_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    w->format = format;
    sl_status st = SL_OK;
    if (format == SL_DATASET_TFRECORD) {
        if (!(w->tf = fopen(path, "wb")))
            st = sl_err_set(err, SL_EIO, "%s: %s", path, strerror(errno));
    } else {
        st = sl__lmdb_writer_open(path, &w->lmdb, err);
    }
    if (st) {
        free(w->path);
        free(w);
        return st;
    }
    *out = w;
    return SL_OK;
}

sl_status sl_dataset_writer_add(sl_dataset_writer *w, const char *key, const void *data,
                                size_t size, bool raw, int height, int width, int channels,
                                int32_t label, sl_err *err) {
    const uint8_t *img = data;
    w->rec.len = 0;
    if (w->format == SL_DATASET_TFRECORD) {
        if (raw)
            return sl_err_set(err, SL_EINVAL,
                              "%s: TFRecords store encoded images "
                              "(image/encoded), not raw pixels",
                              w->path);
        w->frame.len = 0;
        sl__tfrec_encode_image(&w->rec, img, size, label);
        sl__tfrec_put(&w->frame, w->rec.data, w->rec.len);
        if (w->rec.oom || w->frame.oom)
            return sl_err_set(err, SL_ENOMEM, "out of memory encoding record %s", key);
        if (fwrite(w->frame.data, 1, w->frame.len, w->tf) != w->frame.len)
            return sl_err_set(err, SL_EIO, "%s: %s", w->path, strerror(errno));
        return SL_OK;
    }
    if (!key || strlen(key) > KEY_LIMIT)
        return sl_err_set(err, SL_EINVAL, "%s: %s is longer than an LMDB key (%d bytes)", w->path,
                          key ? key : "a NULL key", KEY_LIMIT);
    if (w->format == SL_DATASET_CAFFE2)
        sl__caffe2_encode(&w->rec, img, size, raw, height, width, channels, label);
    else
        sl__caffe_encode(&w->rec, img, size, raw, height, width, channels, label);
    if (w->rec.oom) return sl_err_set(err, SL_ENOMEM, "out of memory encoding record %s", key);
    return sl__lmdb_writer_put(w->lmdb, key, strlen(key), w->rec.data, w->rec.len, err);
}

sl_status sl_dataset_writer_close(sl_dataset_writer *w, sl_err *err) {
    if (!w) return SL_OK;
    sl_status st = SL_OK;
    if (w->tf) {
        bool bad = ferror(w->tf) != 0;
        if ((fclose(w->tf) != 0 || bad) && err)
            st = sl_err_set(err, SL_EIO, "%s: write failed", w->path);
    } else {
        st = sl__lmdb_writer_close(w->lmdb, err);
    }
    sl__protowire_buf_free(&w->rec);
    sl__protowire_buf_free(&w->frame);
    free(w->path);
    free(w);
    return st;
}
