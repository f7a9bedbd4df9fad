/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the CLI's subcommands: reading files, --arg bindings, output files written
 * whole or not at all, .npy output, JSON strings, a wall clock. */
#ifndef SLUICE_TOOLS_COMMON_H
#define SLUICE_TOOLS_COMMON_H

#include "sluice/pipeline.h"
#include "sluice/tensor.h"

#include <stdbool.h>
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
/* An output file of the tool, written so that a failure leaves nothing that reads as complete: a
 * regular file (or a new one) is written to PATH.XXXXXX beside it, synced, and renamed over PATH
 * by sl_cli_out_close; anything else that exists (a symbolic link such as /dev/stdout, a FIFO,
 * /dev/full) is written in place. Every failure prints "sluice CMD: PATH: <reason>" on stderr and
 * returns nonzero. */
typedef struct sl_cli_out {
    FILE *f;
    int err; /* the errno of the first failed write, 0 while none */
    char path[4096];
    char tmp[4112]; /* "" when written in place */
} sl_cli_out;
/* The command line of a command taking INPUT [OUTPUT] (and --help / -h): *in and *out (NULL when
 * not given). -1 to go on, else the exit status, usage printed (to stdout for --help). `what`
 * names the two in the error for a third ("one tar file and one index"). */
int sl_cli_in_out(int argc, char **argv, const char *cmd, const char *what, int (*usage)(FILE *),
                  const char **in, const char **out);
/* Opens PATH for writing; append: the new file starts with PATH's present bytes. */
int sl_cli_out_open(sl_cli_out *o, const char *cmd, const char *path, bool append);
/* Nonzero (with the message) once a write to o has failed; call after writing. */
int sl_cli_out_failed(sl_cli_out *o, const char *cmd);
/* Flushes, syncs, closes and renames over PATH; on failure the temporary file is removed. */
int sl_cli_out_close(sl_cli_out *o, const char *cmd);
/* Closes and removes the temporary file, leaving PATH as it was (no-op on a closed o). */
void sl_cli_out_discard(sl_cli_out *o);
/* Whether the tool can write PATH, before any work: makes and removes a temporary file beside it.
 * An existing file that is not a regular one is refused, or with in_place (an sl_cli_out, which
 * writes it in place) checked for write access. opt names the option in the message. */
int sl_cli_probe(const char *cmd, const char *opt, const char *path, bool in_place);
/* Writes a host tensor as a .npy file through sl_cli_out; 0 on success. */
int sl_cli_write_npy(const char *cmd, const char *path, const sl_tensor *t);
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
