/* SPDX-License-Identifier: Apache-2.0 */
/* sl_op_*: the operator table -- every operator pipelines know, with its argument schema (what
 * `sluice ops` prints and what pipeline arguments are checked against).
 *
 *     for (int i = 0; i < sl_op_count(); i++) {
 *         sl_op_info op;
 *         sl_op_get(i, &op, NULL);
 *         printf("%s (%d arguments)\n", op.name, op.num_args);
 *         for (int a = 0; a < op.num_args; a++) {
 *             sl_op_arg_info arg;
 *             sl_op_get_arg(op.name, a, &arg, NULL);
 *             printf("  %s: %s = %s\n", arg.name, arg.type_doc, arg.def ? arg.def : "None");
 *         }
 *     }
 *
 * Every string points into the library's own tables: valid for the life of the process, never
 * freed by the caller. Besides an operator's own schema, every operator accepts the common
 * arguments (sl_op_common_arg), which the pipeline handles itself. */
#ifndef SLUICE_OPS_H
#define SLUICE_OPS_H

#include "sluice/status.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SL_OP_CPU = 1u << 0, SL_OP_MIXED = 1u << 1, SL_OP_GPU = 1u << 2 };

typedef struct sl_op_info {
    const char *name;           /* DALI's name without "fn.": "readers.caffe2", "decoders.image" */
    const char *doc;            /* "" when none */
    int min_inputs, max_inputs; /* max_inputs INT_MAX: any number (cat, stack, ...) */
    unsigned devices;           /* SL_OP_CPU | SL_OP_MIXED | SL_OP_GPU: where it can run */
    bool is_reader, is_random, no_copy; /* SL_OPF_READER / SL_OPF_RANDOM / SL_OPF_NOCOPY */
    int num_args; /* entries of its own schema (sl_op_get_arg 0 .. num_args-1) */
    /* DALI's other names for it, '|'-separated: deprecated ones ("image_decoder" for
     * decoders.image) and the experimental.* name of an op since promoted; "" when none.
     * sl_op_find finds the op by each. */
    const char *aliases;
    /* takes sequences frame by frame (DALI's sequence operators): an input whose layout starts
     * with F, or an argument given per frame (fn.per_frame), runs it once per frame */
    bool sequences;
} sl_op_info;

typedef struct sl_op_arg_info {
    const char *name;
    /* exactly one of "bool" "int" "float" "str" "dtype" "enum" "ints" "floats" "strs"
     * "features" (readers.tfrecord's dict of tfrec features) */
    const char *type;
    /* what `sluice ops` prints for the type, e.g. "float or list of float", "DALIDataType" */
    const char *type_doc;
    /* default in pipeline syntax ("1.0", "[0.0]", "types.FLOAT", "\"CHW\""); NULL when the schema
     * has none (then "None" is the default unless required) */
    const char *def;
    const char *doc; /* "" when none */
    /* "enum" (and the common argument device): "RGB|BGR|GRAY|..."; else NULL */
    const char *choices;
    bool required, per_sample;
    bool per_frame; /* may be given per frame (fn.per_frame): one value per frame of a sequence */
} sl_op_arg_info;

int sl_op_count(void);
/* Operator i (0 .. sl_op_count()-1), sorted by name. SL_EINVAL out of range. */
sl_status sl_op_get(int index, sl_op_info *out, sl_err *err);
/* By name or alias, with or without "fn."; SL_ENOENT with "no operator 'x'; did you mean 'y'?" in
 * err. */
sl_status sl_op_find(const char *name, sl_op_info *out, sl_err *err);
/* Argument `index` of op `op_name`'s schema. SL_ENOENT (no such op) / SL_EINVAL (index out of
 * range) with a message. */
sl_status sl_op_get_arg(const char *op_name, int index, sl_op_arg_info *out, sl_err *err);

/* Arguments every operator accepts, handled by the pipeline: device, name, seed, preserve,
 * bytes_per_sample_hint (the same list the pipeline's argument check lets through). An operator
 * whose own schema has one of these (the readers' seed) lists it there too. */
/* The edit distance between two names, as the library's "did you mean" suggestions measure it:
 * Levenshtein, ignoring case (an insertion, deletion or substitution costs 1; names longer than
 * 63 characters are 99 apart). */
int sl_name_distance(const char *a, const char *b);
int sl_op_num_common_args(void);
sl_status sl_op_common_arg(int index, sl_op_arg_info *out, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
