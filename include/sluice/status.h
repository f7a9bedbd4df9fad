/* SPDX-License-Identifier: Apache-2.0 */
/* sluice status codes and error records.
 *
 * Every call that can fail returns an sl_status: SL_OK (0) on success, a negative code on error,
 * and SL_EOF (positive) when a stream has ended normally (end of an epoch). The codes come from one
 * X-macro table so that names, messages and values never drift apart. An sl_err carries a code and
 * a message naming the file, record, shard or operator involved; long-lived objects keep their own.
 */
#ifndef SLUICE_STATUS_H
#define SLUICE_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message) */
#define SL_STATUS_TABLE(X)                                                                         \
    X(SL_OK, 0, "success")                                                                         \
    X(SL_EOF, 1, "end of data")                                                                    \
    X(SL_ENOMEM, -1, "out of memory")                                                              \
    X(SL_EINVAL, -2, "invalid argument")                                                           \
    X(SL_EIO, -3, "input/output error")                                                            \
    X(SL_EFORMAT, -4, "malformed data")                                                            \
    X(SL_ENOTSUP, -5, "not supported")                                                             \
    X(SL_ECUDA, -6, "CUDA error")                                                                  \
    X(SL_ENCCL, -7, "NCCL error")                                                                  \
    X(SL_EMPI, -8, "MPI error")                                                                    \
    X(SL_ENOENT, -9, "not found")                                                                  \
    X(SL_ECLOSED, -10, "closed")                                                                   \
    X(SL_ESTATE, -11, "wrong state for this call")                                                 \
    X(SL_ETIMEOUT, -12, "timed out")                                                               \
    X(SL_ECHECKSUM, -13, "checksum mismatch")                                                      \
    X(SL_ESYNTAX, -14, "syntax error")

typedef enum sl_status {
#define SL__STATUS_ENUM(name, value, msg) name = value,
    SL_STATUS_TABLE(SL__STATUS_ENUM)
#undef SL__STATUS_ENUM
} sl_status;

/* "out of memory" etc.; "unknown status" for a value not in the table */
const char *sl_status_str(sl_status s);
/* "SL_ENOMEM" etc. */
const char *sl_status_name(sl_status s);

/* An error record: the status and a message saying what failed and where. */
#define SL_ERRMSG_MAX 512
typedef struct sl_err {
    sl_status status;
    char msg[SL_ERRMSG_MAX];
} sl_err;

#if defined(__GNUC__)
#define SL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SL_PRINTF(fmt, args)
#endif

/* Records status and message in err (which may be NULL) and returns status. */
sl_status sl_err_set(sl_err *err, sl_status status, const char *fmt, ...) SL_PRINTF(3, 4);
sl_status sl_err_setv(sl_err *err, sl_status status, const char *fmt, va_list ap);
/* Prefixes err's message with more context ("reading shard 2: " + old message); returns
 * err->status. */
sl_status sl_err_prefix(sl_err *err, const char *fmt, ...) SL_PRINTF(2, 3);
void sl_err_clear(sl_err *err);
/* Copies src into dst (dst may be NULL); returns src->status. */
sl_status sl_err_copy(sl_err *dst, const sl_err *src);

/* Library log messages (warnings such as "batch size 200 on 3 devices drops 2 samples") go to this
 * callback; the library never prints. NULL (the default) drops them. */
typedef enum sl_log_level { SL_LOG_DEBUG, SL_LOG_INFO, SL_LOG_WARN, SL_LOG_ERROR } sl_log_level;
typedef void (*sl_log_fn)(sl_log_level level, const char *msg, void *user);
void sl_log_set_callback(sl_log_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
