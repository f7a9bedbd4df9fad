/* SPDX-License-Identifier: Apache-2.0 */
/* The operator table (registry.c): every operator of the library, looked up by DALI's name. */
#ifndef SLUICE_OPS_REGISTRY_H
#define SLUICE_OPS_REGISTRY_H

#include "operator/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The operator of that name or alias (with or without the "fn." prefix), or NULL. */
const sl__op_def *sl__registry_find(const char *name);
/* Every operator, NULL-terminated, sorted by name. */
const sl__op_def *const *sl__registry_all(int *count);
/* The known op name closest to name (edit distance), or NULL when nothing is close. */
const char *sl__registry_suggest(const char *name);

/* Per-area lists, NULL-terminated, that the table joins (ops_list.c). */
extern const sl__op_def *const sl__reader_ops[];
extern const sl__op_def *const sl__image_ops[];
extern const sl__op_def *const sl__generic_ops[];

#ifdef __cplusplus
}
#endif
#endif
