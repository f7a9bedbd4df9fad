/* SPDX-License-Identifier: Apache-2.0 */
/* The one place the library may stop the process: a broken internal invariant (SL_ASSERT). */
#include "core/log.h"

#include <stdio.h>

void sl__assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "sluice: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}
