/* SPDX-License-Identifier: Apache-2.0 */
/* sl_abi_struct_size / sl_abi_struct_name / sl_abi_field, which bindings check their copies of the
 * public structs against: each struct's fields, in declaration order, tile it -- no overlap, and
 * no gap (between two fields, or at the end) wider than alignment padding, where a field missing
 * from the list could hide -- and a few offsets agree with this compiler's offsetof; unknown
 * names and indices give NULL / 0. */
#include "check.h"

#include "sluice/iterator.h"
#include "sluice/ops.h"
#include "sluice/reader.h"
#include "sluice/version.h"

#include <stddef.h>
#include <string.h>

static size_t offset_of(const char *st, const char *field) {
    size_t off, size;
    const char *name;
    for (int i = 0; (name = sl_abi_field(st, i, &off, &size)); i++)
        if (!strcmp(name, field)) return off;
    return (size_t)-1;
}

int main(void) {
    int nstructs = 0;
    const char *st;
    for (; (st = sl_abi_struct_name(nstructs)); nstructs++) {
        size_t total = sl_abi_struct_size(st), end = 0, off, size;
        CHECK_MSG(total > 0, "%s: size 0", st);
        int n = 0;
        const char *name;
        for (; (name = sl_abi_field(st, n, &off, &size)); n++) {
            size_t pad = size < 8 ? size : 8; /* padding is narrower than the field after it */
            CHECK_MSG(size > 0 && off + size <= total, "%s.%s: %zu bytes at %zu of %zu", st, name,
                      size, off, total);
            CHECK_MSG(off >= end && off - end < pad, "%s.%s at %zu, the field before ends at %zu",
                      st, name, off, end);
            end = off + size;
        }
        CHECK_MSG(n > 0, "%s: no fields", st);
        CHECK_MSG(total >= end && total - end < 8, "%s: %zu bytes, its last field ends at %zu", st,
                  total, end);
        CHECK(sl_abi_field(st, n, NULL, NULL) == NULL);
        CHECK(sl_abi_field(st, -1, &off, &size) == NULL);
    }
    CHECK_MSG(nstructs >= 14, "%d structs", nstructs);
    CHECK(sl_abi_struct_name(-1) == NULL);
    CHECK(sl_abi_struct_name(nstructs) == NULL);
    CHECK_EQ_INT(sl_abi_struct_size("sl_iter_config"), sizeof(sl_iter_config));
    CHECK_EQ_INT(sl_abi_struct_size("sl_function_io"), sizeof(sl_function_io));
    CHECK_EQ_INT(sl_abi_struct_size("no_such_struct"), 0);
    CHECK_EQ_INT(sl_abi_struct_size(NULL), 0);
    CHECK(sl_abi_field("no_such_struct", 0, NULL, NULL) == NULL);
    CHECK(sl_abi_field(NULL, 0, NULL, NULL) == NULL);
    /* this compiler's view of a few fields */
    CHECK_EQ_INT(offset_of("sl_iter_config", "seed"), offsetof(sl_iter_config, seed));
    CHECK_EQ_INT(offset_of("sl_iter_config", "device_seeds"),
                 offsetof(sl_iter_config, device_seeds));
    CHECK_EQ_INT(offset_of("sl_tensor", "layout"), offsetof(sl_tensor, layout));
    CHECK_EQ_INT(offset_of("sl_op_arg_info", "def"), offsetof(sl_op_arg_info, def));
    CHECK_EQ_INT(offset_of("sl_tlist", "budget"), offsetof(sl_tlist, budget));
    CHECK_EQ_INT(offset_of("sl_tensor", "no_such_field"), (size_t)-1);
    return check_done();
}
