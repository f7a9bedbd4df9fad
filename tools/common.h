/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the CLI's subcommands: reading files, --arg bindings, .npy output, JSON
 * strings, a wall clock. */
#ifndef SLUICE_TOOLS_COMMON_H
#define SLUICE_TOOLS_COMMON_H

#include "sluice/pipeline.h"
#include "sluice/tensor.h"

#include <stdio.h>

/* Returns from the enclosing function when expr gives an error status. */
#define SL_CLI_TRY(expr)                                                                           \
    do {                                                                                           \
        sl_status sl_cli_st = (expr);                                                              \
        if (sl_cli_st != SL_OK) return sl_cli_st;                                                  \
    } while (0)

/* The whole file, NUL-terminated (malloc'd), or NULL with errno set. */
char *sl_cli_read_file(const char *path, size_t *size);
/* A pipeline file, NUL-terminated (malloc'd); NULL after a "sluice CMD: ..." line on stderr when it
 * cannot be read or holds a NUL byte (named by line:col). */
char *sl_cli_read_pipeline(const char *cmd, const char *path);
/* Splits "NAME=VALUE" into a bind (pointing into arg, which it modifies). */
int sl_cli_parse_bind(char *arg, sl_pipeline_bind *out);
/* Writes a host tensor as a .npy file; 0 on success. */
int sl_cli_write_npy(const char *path, const sl_tensor *t);
/* Writes s as a JSON string literal (with quotes). */
void sl_cli_json_str(FILE *f, const char *s);
double sl_cli_now(void);
/* Option values: the whole of v must be a number within [lo, hi] (a float also finite; hi INT_MAX
 * or DBL_MAX for no upper bound), else a "sluice CMD: OPT wants ..." line on stderr and nonzero. */
int sl_cli_opt_int(const char *cmd, const char *opt, const char *v, long long lo, long long hi,
                   long long *out);
int sl_cli_opt_u64(const char *cmd, const char *opt, const char *v, unsigned long long *out);
int sl_cli_opt_float(const char *cmd, const char *opt, const char *v, double lo, double hi,
                     double *out);

#endif
