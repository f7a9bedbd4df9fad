/* SPDX-License-Identifier: Apache-2.0 */
/* sl_abi_struct_size (sluice/version.h): the sizes of the public option and record structs, so that
 * a binding can check its own layout of them against the library's. It sees every struct it
 * measures, the iterator's the highest of them, so it lives with the iterator rather than in core.
 */
#include "sluice/iterator.h"
#include "sluice/ops.h"
#include "sluice/pipeline.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "sluice/version.h"

#include <string.h>

size_t sl_abi_struct_size(const char *name) {
#define ABI(t)                                                                                     \
    { #t, sizeof(t) }
    static const struct {
        const char *name;
        size_t size;
    } table[] = {
        ABI(sl_err),         ABI(sl_device),          ABI(sl_tensor),
        ABI(sl_tlist),       ABI(sl_pipeline_config), ABI(sl_reader_meta),
        ABI(sl_source_info), ABI(sl_source),          ABI(sl_pipeline_bind),
        ABI(sl_iter_config), ABI(sl_op_info),         ABI(sl_op_arg_info),
    };
#undef ABI
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, name)) return table[i].size;
    return 0;
}
