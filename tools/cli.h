/* SPDX-License-Identifier: Apache-2.0 */
/* The sluice command-line tool: one function per subcommand (tools/cmd_<name>.c), dispatched by
 * tools/main.c. Each returns the process exit status (0 ok, 1 failure, 2 usage error). */
#ifndef SLUICE_TOOLS_CLI_H
#define SLUICE_TOOLS_CLI_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stdio.h>

int sl_cli_convert(int argc, char **argv);
int sl_cli_index(int argc, char **argv);
int sl_cli_inspect(int argc, char **argv);
int sl_cli_run(int argc, char **argv);
int sl_cli_ops(int argc, char **argv);
int sl_cli_train(int argc, char **argv);
int sl_cli_version(int argc, char **argv);

/* Prints "sluice <cmd>: <message>" to stderr; returns 1. */
int sl_cli_fail(const char *cmd, const char *fmt, ...) SL_PRINTF(2, 3);
/* True when stderr is a terminal (progress bars). */
bool sl_cli_interactive(void);
/* A one-line progress bar on stderr: "label [=====>    ] done/total"; finish with done == total. */
void sl_cli_progress(const char *label, long long done, long long total);

#endif
