/* SPDX-License-Identifier: Apache-2.0 */
/* The public view of the operator table (sluice/ops.h): the registry's entries and their argument
 * schemas, copied into plain structs whose strings point into the tables themselves. */
#include "sluice/ops.h"
#include "sluice/sluice.h"

#include "core/log.h"
#include "operator/op.h"
#include "ops/registry.h"

#include <string.h>

_Static_assert((unsigned)SL_OP_CPU == (unsigned)SL_OPDEV_CPU &&
                   (unsigned)SL_OP_MIXED == (unsigned)SL_OPDEV_MIXED &&
                   (unsigned)SL_OP_GPU == (unsigned)SL_OPDEV_GPU,
               "public device bits are the registry's");

static const char *type_str(sl__arg_type t) {
    switch (t) {
    case SL_ARG_BOOL:
        return "bool";
    case SL_ARG_INT:
        return "int";
    case SL_ARG_FLOAT:
        return "float";
    case SL_ARG_STR:
        return "str";
    case SL_ARG_DTYPE:
        return "dtype";
    case SL_ARG_ENUM:
        return "enum";
    case SL_ARG_INTS:
        return "ints";
    case SL_ARG_FLOATS:
        return "floats";
    case SL_ARG_STRS:
        return "strs";
    case SL_ARG_FEATURES:
        return "features";
    }
    return "?";
}

static int num_args(const sl__op_def *d) {
    int n = 0;
    while (d->args && d->args[n].name) n++;
    return n;
}

static void fill_op(const sl__op_def *d, sl_op_info *o) {
    memset(o, 0, sizeof *o);
    o->name = d->name;
    o->doc = d->doc ? d->doc : "";
    o->min_inputs = d->min_inputs;
    o->max_inputs = d->max_inputs;
    o->devices = d->devices & (SL_OP_CPU | SL_OP_MIXED | SL_OP_GPU);
    o->is_reader = (d->flags & SL_OPF_READER) != 0;
    o->is_random = (d->flags & SL_OPF_RANDOM) != 0;
    o->no_copy = (d->flags & SL_OPF_NOCOPY) != 0;
    o->num_args = num_args(d);
    o->aliases = d->aliases ? d->aliases : "";
    o->sequences = (d->flags & SL_OPF_SEQUENCE) != 0;
}

static void fill_arg(const sl__arg_schema *a, sl_op_arg_info *o) {
    memset(o, 0, sizeof *o);
    o->name = a->name;
    o->type = type_str(a->type);
    o->type_doc = sl__arg_type_name(a->type);
    o->def = a->def;
    o->doc = a->doc ? a->doc : "";
    o->choices = a->choices;
    o->required = (a->flags & SL_ARGF_REQUIRED) != 0;
    o->per_sample = (a->flags & SL_ARGF_PER_SAMPLE) != 0;
    o->per_frame = (a->flags & SL_ARGF_PER_FRAME) != 0;
}

int sl_op_count(void) {
    int n;
    sl__registry_all(&n);
    return n;
}

sl_status sl_op_get(int index, sl_op_info *out, sl_err *err) {
    int n;
    const sl__op_def *const *all = sl__registry_all(&n);
    if (index < 0 || index >= n)
        return sl_err_set(err, SL_EINVAL, "operator %d: the table has 0..%d", index, n - 1);
    fill_op(all[index], out);
    return SL_OK;
}

static sl_status find(const char *name, const sl__op_def **out, sl_err *err) {
    if (!name) return sl_err_set(err, SL_EINVAL, "operator name is NULL");
    *out = sl__registry_find(name);
    if (*out) return SL_OK;
    const char *s = sl__registry_suggest(name);
    if (s) return sl_err_set(err, SL_ENOENT, "no operator '%s'; did you mean '%s'?", name, s);
    return sl_err_set(err, SL_ENOENT, "no operator '%s'", name);
}

sl_status sl_op_find(const char *name, sl_op_info *out, sl_err *err) {
    const sl__op_def *d;
    SL_TRY(find(name, &d, err));
    fill_op(d, out);
    return SL_OK;
}

sl_status sl_op_get_arg(const char *op_name, int index, sl_op_arg_info *out, sl_err *err) {
    const sl__op_def *d;
    SL_TRY(find(op_name, &d, err));
    int n = num_args(d);
    if (index < 0 || index >= n)
        return sl_err_set(err, SL_EINVAL, "%s: argument %d: its schema has %d (0..%d)", d->name,
                          index, n, n - 1);
    fill_arg(&d->args[index], out);
    return SL_OK;
}

int sl_op_num_common_args(void) {
    int n;
    sl__args_common(&n);
    return n;
}

sl_status sl_op_common_arg(int index, sl_op_arg_info *out, sl_err *err) {
    int n;
    const sl__arg_schema *c = sl__args_common(&n);
    if (index < 0 || index >= n)
        return sl_err_set(err, SL_EINVAL, "common argument %d: there are %d (0..%d)", index, n,
                          n - 1);
    fill_arg(&c[index], out);
    return SL_OK;
}

int sl_name_distance(const char *a, const char *b) {
    return sl__op_distance(a, b);
}
