/* SPDX-License-Identifier: Apache-2.0 */
/* Internal logging and assertions. sl__log forwards to the user's callback (never prints by
 * itself); SL_ASSERT aborts on a broken invariant (a programmer error, never bad data) naming
 * file:line. */
#ifndef SLUICE_CORE_LOG_H
#define SLUICE_CORE_LOG_H

#include "sluice/status.h"

#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

void sl__log(sl_log_level level, const char *fmt, ...) SL_PRINTF(2, 3);
void sl__assert_fail(const char *expr, const char *file, int line);

#define SL_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) sl__assert_fail(#cond, __FILE__, __LINE__);                                   \
    } while (0)

/* Returns from the enclosing function when expr gives an error status (SL_EOF passes through too).
 */
#define SL_TRY(expr)                                                                               \
    do {                                                                                           \
        sl_status sl__st = (expr);                                                                 \
        if (sl__st != SL_OK) return sl__st;                                                        \
    } while (0)

#define SL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SL_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define SL_MAX(a, b)    ((a) > (b) ? (a) : (b))

#ifdef __cplusplus
}
#endif
#endif
