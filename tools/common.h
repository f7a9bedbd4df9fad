/* Helpers shared by the CLI's subcommands: reading files, --arg bindings, .npy output, JSON
 * strings, a wall clock. */
#ifndef SLUICE_TOOLS_COMMON_H
#define SLUICE_TOOLS_COMMON_H

#include "sluice/pipeline.h"
#include "sluice/tensor.h"

#include <stdio.h>

/* The whole file, NUL-terminated (malloc'd), or NULL with errno set. */
char *sl_cli_read_file(const char *path, size_t *size);
/* Splits "NAME=VALUE" into a bind (pointing into arg, which it modifies). */
int sl_cli_parse_bind(char *arg, sl_pipeline_bind *out);
/* Writes a host tensor as a .npy file; 0 on success. */
int sl_cli_write_npy(const char *path, const sl_tensor *t);
/* Writes s as a JSON string literal (with quotes). */
void sl_cli_json_str(FILE *f, const char *s);
double sl_cli_now(void);

#endif
