/* SPDX-License-Identifier: Apache-2.0 */
/* Host allocation and its error messages; pinned memory and pools report themselves unsupported
 * without CUDA (or without a GPU). */
#include "check.h"
#include "core/alloc.h"

#include <stdint.h>
#include <string.h>

int main(void) {
    sl_err e;
    for (size_t align = 8; align <= 4096; align *= 2) {
        void *p = sl__alloc_host(1000, align, &e);
        CHECK(p != NULL);
        CHECK_EQ_INT((uintptr_t)p % align, 0);
        memset(p, 0xab, 1000);
        sl__alloc_host_free(p);
    }
    void *z = sl__alloc_host(0, 64, &e);
    CHECK(z != NULL);
    sl__alloc_host_free(z);

    char *g = sl__alloc_host(16, 64, &e);
    memcpy(g, "0123456789abcdef", 16);
    g = sl__alloc_host_grow(g, 16, 4096, &e);
    CHECK(g && memcmp(g, "0123456789abcdef", 16) == 0);
    sl__alloc_host_free(g);

    /* an impossible request is SL_ENOMEM with the size in the message */
    sl_err_clear(&e);
    void *huge = sl__alloc_host((size_t)1 << 62, 64, &e);
    CHECK(huge == NULL);
    CHECK_EQ_INT(e.status, SL_ENOMEM);
    CHECK_MSG(strstr(e.msg, "4611686018427387904") != NULL, "message: %s", e.msg);

    if (!sl__cuda_available()) {
        sl_err_clear(&e);
        CHECK(sl__alloc_pinned(100, &e) == NULL);
        CHECK(e.status == SL_ENOTSUP || e.status == SL_ENOMEM);
        sl__devpool *pool = NULL;
        CHECK(sl__devpool_create(0, &pool, &e) != SL_OK);
        CHECK(pool == NULL);
    }
    return check_done();
}
