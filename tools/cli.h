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
int sl_cli_wds2idx(int argc, char **argv);

/* Prints "sluice <cmd>: <message>" to stderr; returns 1. */
int sl_cli_fail(const char *cmd, const char *fmt, ...) SL_PRINTF(2, 3);
/* The progress line (tools/progress.c). True when one is drawn: stderr is a terminal and
 * SLUICE_NO_PROGRESS is unset or empty. */
bool sl_cli_interactive(void);
/* "label [=====>    ] done/total unit  rate unit/s  ETA m:ss" on stderr, redrawn in place at most
 * four times a second; done == total draws it once more and ends it. Call as often as wanted.
 * total <= 0: no bar, "label: done unit  rate unit/s". sl_cli_progress counts steps. */
void sl_cli_progress_of(const char *label, const char *unit, long long done, long long total);
void sl_cli_progress(const char *label, long long done, long long total);
/* Ends a progress line left open (a newline), so that what is printed next starts a line. */
void sl_cli_progress_end(void);

#endif
