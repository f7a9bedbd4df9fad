/* SPDX-License-Identifier: Apache-2.0 */
/* sl_tfrecord_index (sluice/dataset.h): the index of a TFRecord file, as DALI's tfrecord2idx
 * writes it (a line "offset length" per record, the length counting the record's whole frame),
 * from the reader's own framing walk; every record's length and data CRCs are checked on the way,
 * so a corrupt file is refused, naming the offset of its first bad record. */
#include "sluice/dataset.h"

#include "io/tfrecord.h"

#include <stdlib.h>

sl_status sl_tfrecord_index(const char *path, sl_tfrecord_entry **entries, int64_t *count,
                            sl_err *err) {
    *entries = NULL;
    *count = 0;
    sl__tfrec *t;
    sl_status st = sl__tfrec_open(1, &path, NULL, &t, err);
    if (st) return st;
    int64_t n = sl__tfrec_count(t);
    for (int64_t i = 0; i < n && !st; i++) {
        const uint8_t *d;
        uint64_t len;
        st = sl__tfrec_read(t, i, &d, &len, err);
    }
    sl_tfrecord_entry *e = st ? NULL : malloc((size_t)(n ? n : 1) * sizeof *e);
    if (!st && !e) st = sl_err_set(err, SL_ENOMEM, "out of memory indexing %s", path);
    for (int64_t i = 0; i < n && !st; i++) {
        e[i].offset = sl__tfrec_offset(t, i);
        e[i].size = (int64_t)sl__tfrec_size(t, i);
    }
    sl__tfrec_close(t);
    if (st) {
        free(e);
        return st;
    }
    *entries = e;
    *count = n;
    return SL_OK;
}
