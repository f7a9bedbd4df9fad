/* SPDX-License-Identifier: Apache-2.0 */
/* What the operator interface (op.h) does itself: an op's error about a sample, naming its record.
 */
#include "operator/op.h"

#include <stdarg.h>
#include <stdio.h>

sl_status sl__op_fail(sl_err *err, sl_status st, const sl__op_io *io, int i, const char *opname,
                      const char *fmt, ...) {
    char what[SL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *key = io && io->keys && i >= 0 && i < io->batch ? io->keys[i] : NULL;
    if (key && io->source && *io->source)
        return sl_err_set(err, st, "%s: record %s of %s: %s", opname, key, io->source, what);
    if (key) return sl_err_set(err, st, "%s: record %s: %s", opname, key, what);
    return sl_err_set(err, st, "%s: sample %d: %s", opname, i, what);
}
