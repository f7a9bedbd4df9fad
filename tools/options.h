/* SPDX-License-Identifier: Apache-2.0 */
/* The command line of `sluice run` and `sluice train`: one table mechanism for both, and the flags
 * they share defined once (--arg, --pipeline, --batch-size, --devices, --epochs, --threads, --seed,
 * --order, --checkpoint, --resume, --json); each command adds a table of its own. An option sets a
 * field (a flag, a string, a number checked against its range) or runs its own taker; the flags a
 * pipeline's decorator may also give keep their value as typed, for the line that says a flag
 * overrides the decorator. */
#ifndef SLUICE_TOOLS_OPTIONS_H
#define SLUICE_TOOLS_OPTIONS_H

#include "settings.h"

#include "sluice/iterator.h"

#include <stdbool.h>
#include <stddef.h>

#define SL_CLI_MAX_BINDS 64

/* What the shared flags set. */
typedef struct sl_cli_opts {
    sl_iter_settings set; /* --devices, --batch-size, --threads, --seed (and run's --prefetch) */
    sl_cli_flags flags;   /* ... as typed */
    const char *function; /* --pipeline */
    sl_pipeline_bind binds[SL_CLI_MAX_BINDS];
    int nbinds, epochs, global_order, json;
    const char *ck_path, *resume;
} sl_cli_opts;

typedef enum {
    SL_CLI_FLAG,   /* int field set to 1 */
    SL_CLI_STR,    /* const char * field */
    SL_CLI_INT,    /* int field, within [min, max] */
    SL_CLI_LLONG,  /* long long field, within [min, max] */
    SL_CLI_U64,    /* uint64_t field */
    SL_CLI_FLOAT,  /* float field, finite, >= min */
    SL_CLI_SPECIAL /* take() */
} sl_cli_opt_kind;

typedef struct sl_cli_option {
    const char *name;
    sl_cli_opt_kind kind;
    size_t at;          /* the field it sets, in the struct its table is for */
    long long min, max; /* SL_CLI_INT, SL_CLI_LLONG: the range; SL_CLI_FLOAT: min */
    size_t typed_at;    /* a const char * field that keeps the value as typed, or 0 */
    /* SL_CLI_SPECIAL: takes the value; 0, or the exit status (with the message printed) */
    int (*take)(sl_cli_opts *com, void *own, const char *cmd, char *v);
} sl_cli_option;

typedef struct sl_cli_command {
    const char *name; /* "run" */
    const char *usage;
    const sl_cli_option *options; /* its own, beside the shared ones */
    size_t noptions;
    bool takes_file; /* one argument that is no option: the pipeline file */
} sl_cli_command;

/* The shared flags' defaults: nothing given, epochs 1. */
void sl_cli_opts_init(sl_cli_opts *com);
/* Reads the command line into com (the shared flags) and own (the command's); *file: the pipeline
 * file of a command that takes one. -1 to go on, else the exit status (--help: 0; a usage error,
 * said on stderr: 2). */
int sl_cli_parse_options(const sl_cli_command *cmd, int argc, char **argv, sl_cli_opts *com,
                         void *own, const char **file);

#endif
