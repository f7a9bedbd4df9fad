/* SPDX-License-Identifier: Apache-2.0 */
/* sl_abi_struct_size and sl_abi_field (sluice/version.h): the sizes of the public option and
 * record structs and where each of their fields lies, so that a binding can check its own layout
 * of them against the library's, field by field. It sees every struct it measures, the
 * iterator's the highest of them, so it lives with the iterator rather than in core. The fields
 * are listed here by hand; tests/test_abi.c checks that the listed fields tile each struct (no
 * gap a field could hide in) and python/sluice/_c.py compares its mirrors with them at import.
 */
#include "sluice/iterator.h"
#include "sluice/ops.h"
#include "sluice/pipeline.h"
#include "sluice/reader.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "sluice/version.h"

#include <stddef.h>
#include <string.h>

typedef struct abi_field {
    const char *name;
    size_t offset, size;
} abi_field;

#define F(t, f)                                                                                    \
    { #f, offsetof(t, f), sizeof(((t *)0)->f) }
static const abi_field err_fields[] = {F(sl_err, status), F(sl_err, msg)};
static const abi_field device_fields[] = {F(sl_device, kind), F(sl_device, id)};
static const abi_field tensor_fields[] = {
    F(sl_tensor, data),  F(sl_tensor, dtype),   F(sl_tensor, device), F(sl_tensor, ndim),
    F(sl_tensor, shape), F(sl_tensor, strides), F(sl_tensor, layout), F(sl_tensor, alloc)};
static const abi_field tlist_fields[] = {
    F(sl_tlist, count), F(sl_tlist, capacity), F(sl_tlist, dtype),    F(sl_tlist, device),
    F(sl_tlist, ndim),  F(sl_tlist, layout),   F(sl_tlist, shapes),   F(sl_tlist, data),
    F(sl_tlist, buf),   F(sl_tlist, buf_size), F(sl_tlist, buf_used), F(sl_tlist, pinned),
    F(sl_tlist, budget)};
static const abi_field pipeline_config_fields[] = {
    F(sl_pipeline_config, batch_size),     F(sl_pipeline_config, num_threads),
    F(sl_pipeline_config, device),         F(sl_pipeline_config, seed),
    F(sl_pipeline_config, prefetch_cpu),   F(sl_pipeline_config, prefetch_gpu),
    F(sl_pipeline_config, global_shards),  F(sl_pipeline_config, global_shard),
    F(sl_pipeline_config, global_drop),    F(sl_pipeline_config, max_batch_bytes),
    F(sl_pipeline_config, stream_priority)};
static const abi_field reader_meta_fields[] = {
    F(sl_reader_meta, epoch_size),       F(sl_reader_meta, epoch_size_padded),
    F(sl_reader_meta, number_of_shards), F(sl_reader_meta, shard_id),
    F(sl_reader_meta, pad_last_batch),   F(sl_reader_meta, stick_to_shard)};
static const abi_field source_info_fields[] = {
    F(sl_source_info, iteration), F(sl_source_info, idx_in_batch), F(sl_source_info, sample),
    F(sl_source_info, output)};
static const abi_field source_fields[] = {
    F(sl_source, shape), F(sl_source, fill),    F(sl_source, user),   F(sl_source, count),
    F(sl_source, view),  F(sl_source, release), F(sl_source, layout), F(sl_source, copy_views)};
static const abi_field function_io_fields[] = {
    F(sl_function_io, iteration),   F(sl_function_io, batch),  F(sl_function_io, num_inputs),
    F(sl_function_io, num_outputs), F(sl_function_io, inputs), F(sl_function_io, outputs)};
static const abi_field function_fields[] = {F(sl_function, call), F(sl_function, user)};
static const abi_field thread_hooks_fields[] = {F(sl_thread_hooks, start), F(sl_thread_hooks, stop),
                                                F(sl_thread_hooks, user)};
static const abi_field bind_fields[] = {F(sl_pipeline_bind, name), F(sl_pipeline_bind, value)};
static const abi_field iter_config_fields[] = {F(sl_iter_config, text),
                                               F(sl_iter_config, filename),
                                               F(sl_iter_config, nbinds),
                                               F(sl_iter_config, binds),
                                               F(sl_iter_config, function),
                                               F(sl_iter_config, build),
                                               F(sl_iter_config, prepare),
                                               F(sl_iter_config, build_user),
                                               F(sl_iter_config, ndevices),
                                               F(sl_iter_config, devices),
                                               F(sl_iter_config, batch_size),
                                               F(sl_iter_config, num_threads),
                                               F(sl_iter_config, seed),
                                               F(sl_iter_config, prefetch_cpu),
                                               F(sl_iter_config, prefetch_gpu),
                                               F(sl_iter_config, shard_offset),
                                               F(sl_iter_config, total_shards),
                                               F(sl_iter_config, num_outputs),
                                               F(sl_iter_config, output_map),
                                               F(sl_iter_config, reader_name),
                                               F(sl_iter_config, size),
                                               F(sl_iter_config, last_batch_policy),
                                               F(sl_iter_config, last_batch_padded),
                                               F(sl_iter_config, prepare_first_batch),
                                               F(sl_iter_config, auto_reset),
                                               F(sl_iter_config, layout),
                                               F(sl_iter_config, resume),
                                               F(sl_iter_config, resume_bytes),
                                               F(sl_iter_config, resume_size),
                                               F(sl_iter_config, caller_releases),
                                               F(sl_iter_config, global_order),
                                               F(sl_iter_config, device_seeds),
                                               F(sl_iter_config, stream_priority)};
static const abi_field op_info_fields[] = {
    F(sl_op_info, name),       F(sl_op_info, doc),      F(sl_op_info, min_inputs),
    F(sl_op_info, max_inputs), F(sl_op_info, devices),  F(sl_op_info, is_reader),
    F(sl_op_info, is_random),  F(sl_op_info, no_copy),  F(sl_op_info, num_args),
    F(sl_op_info, aliases),    F(sl_op_info, sequences)};
static const abi_field op_arg_info_fields[] = {
    F(sl_op_arg_info, name),     F(sl_op_arg_info, type),       F(sl_op_arg_info, type_doc),
    F(sl_op_arg_info, def),      F(sl_op_arg_info, doc),        F(sl_op_arg_info, choices),
    F(sl_op_arg_info, required), F(sl_op_arg_info, per_sample), F(sl_op_arg_info, per_frame)};
#undef F

#define ABI(t, fields)                                                                             \
    { #t, sizeof(t), fields, sizeof fields / sizeof fields[0] }
static const struct {
    const char *name;
    size_t size;
    const abi_field *fields;
    int nfields;
} table[] = {
    ABI(sl_err, err_fields),
    ABI(sl_device, device_fields),
    ABI(sl_tensor, tensor_fields),
    ABI(sl_tlist, tlist_fields),
    ABI(sl_pipeline_config, pipeline_config_fields),
    ABI(sl_reader_meta, reader_meta_fields),
    ABI(sl_source_info, source_info_fields),
    ABI(sl_source, source_fields),
    ABI(sl_function_io, function_io_fields),
    ABI(sl_function, function_fields),
    ABI(sl_thread_hooks, thread_hooks_fields),
    ABI(sl_pipeline_bind, bind_fields),
    ABI(sl_iter_config, iter_config_fields),
    ABI(sl_op_info, op_info_fields),
    ABI(sl_op_arg_info, op_arg_info_fields),
};
#undef ABI

static int find(const char *name) {
    for (int i = 0; name && i < (int)(sizeof table / sizeof table[0]); i++)
        if (!strcmp(table[i].name, name)) return i;
    return -1;
}

size_t sl_abi_struct_size(const char *name) {
    int i = find(name);
    return i < 0 ? 0 : table[i].size;
}

const char *sl_abi_struct_name(int index) {
    return index >= 0 && index < (int)(sizeof table / sizeof table[0]) ? table[index].name : NULL;
}

const char *sl_abi_field(const char *name, int index, size_t *offset, size_t *size) {
    int i = find(name);
    if (i < 0 || index < 0 || index >= table[i].nfields) return NULL;
    if (offset) *offset = table[i].fields[index].offset;
    if (size) *size = table[i].fields[index].size;
    return table[i].fields[index].name;
}
