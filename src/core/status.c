/* SPDX-License-Identifier: Apache-2.0 */
/* Status names and messages from the X-macro table, error records, and the log callback. */
#include "core/log.h"

#include <stdio.h>
#include <string.h>

const char *sl_status_str(sl_status s) {
    switch (s) {
#define SL__CASE(name, value, msg)                                                                 \
    case name:                                                                                     \
        return msg;
        SL_STATUS_TABLE(SL__CASE)
#undef SL__CASE
    }
    return "unknown status";
}

const char *sl_status_name(sl_status s) {
    switch (s) {
#define SL__CASE(name, value, msg)                                                                 \
    case name:                                                                                     \
        return #name;
        SL_STATUS_TABLE(SL__CASE)
#undef SL__CASE
    }
    return "SL_E?";
}

sl_status sl_err_setv(sl_err *err, sl_status status, const char *fmt, va_list ap) {
    if (err) {
        err->status = status;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return status;
}

sl_status sl_err_set(sl_err *err, sl_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sl_err_setv(err, status, fmt, ap);
    va_end(ap);
    return status;
}

sl_status sl_err_prefix(sl_err *err, const char *fmt, ...) {
    if (!err) return SL_OK;
    char head[SL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    size_t h = strlen(head), m = strnlen(err->msg, SL_ERRMSG_MAX - 1);
    if (h > SL_ERRMSG_MAX - 1) h = SL_ERRMSG_MAX - 1;
    if (h + m > SL_ERRMSG_MAX - 1) m = SL_ERRMSG_MAX - 1 - h;
    memmove(err->msg + h, err->msg, m);
    memcpy(err->msg, head, h);
    err->msg[h + m] = '\0';
    return err->status;
}

void sl_err_clear(sl_err *err) {
    if (err) {
        err->status = SL_OK;
        err->msg[0] = '\0';
    }
}

sl_status sl_err_copy(sl_err *dst, const sl_err *src) {
    if (dst && dst != src) *dst = *src;
    return src->status;
}

/* ---- log ------------------------------------------------------------------------------------ */

static sl_log_fn log_fn;
static void *log_user;

void sl_log_set_callback(sl_log_fn fn, void *user) {
    log_fn = fn;
    log_user = user;
}

void sl__log(sl_log_level level, const char *fmt, ...) {
    if (!log_fn) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_fn(level, buf, log_user);
}
