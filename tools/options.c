/* SPDX-License-Identifier: Apache-2.0 */
/* The option tables of `sluice run` and `sluice train` (options.h): the shared flags, and the
 * parser both commands use. */
#include "options.h"

#include "cli.h"
#include "common.h"

#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void sl_cli_opts_init(sl_cli_opts *com) {
    memset(com, 0, sizeof *com);
    sl_iter_settings_init(&com->set);
    com->epochs = 1;
}

static int take_arg(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)own;
    if (com->nbinds == SL_CLI_MAX_BINDS || sl_cli_parse_bind(v, &com->binds[com->nbinds]))
        return sl_cli_fail(cmd, "--arg wants NAME=VALUE, got '%s'", v), 2;
    com->nbinds++;
    return 0;
}

static int take_devices(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)own;
    sl_iter_config probe; /* refused now, before anything runs */
    sl_err err;
    sl_iter_config_init(&probe);
    if (sl_iter_parse_devices(v, &probe, &err)) return sl_cli_fail(cmd, "%s", err.msg), 2;
    com->set.devices = com->flags.devices = v;
    return 0;
}

static int take_order(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)own;
    if (strcmp(v, "global") && strcmp(v, "dali"))
        return sl_cli_fail(cmd, "--order dali or global, not '%s'", v), 2;
    com->global_order = !strcmp(v, "global");
    return 0;
}

static int take_seed(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)own;
    unsigned long long u;
    if (sl_cli_opt_u64(cmd, "--seed", v, &u)) return 2;
    com->set.seed = u;
    com->set.seed_given = true;
    com->flags.seed = v;
    return 0;
}

#define AT(field)    offsetof(sl_cli_opts, field)
#define TYPED(field) offsetof(sl_cli_opts, flags.field)
static const sl_cli_option shared[] = {
    {"--arg", SL_CLI_SPECIAL, 0, 0, 0, 0, take_arg},
    {"--pipeline", SL_CLI_STR, AT(function), 0, 0, 0, NULL},
    {"--batch-size", SL_CLI_INT, AT(set.batch_size), 1, INT_MAX, TYPED(batch_size), NULL},
    {"--devices", SL_CLI_SPECIAL, 0, 0, 0, 0, take_devices},
    {"--epochs", SL_CLI_INT, AT(epochs), 1, INT_MAX, 0, NULL},
    /* 0: chosen from the machine (SL_NUM_THREADS_AUTO) */
    {"--threads", SL_CLI_INT, AT(set.num_threads), 0, 1024, TYPED(threads), NULL},
    {"--seed", SL_CLI_SPECIAL, 0, 0, 0, 0, take_seed},
    {"--order", SL_CLI_SPECIAL, 0, 0, 0, 0, take_order},
    {"--checkpoint", SL_CLI_STR, AT(ck_path), 0, 0, 0, NULL},
    {"--resume", SL_CLI_STR, AT(resume), 0, 0, 0, NULL},
    {"--json", SL_CLI_FLAG, AT(json), 0, 0, 0, NULL},
};
#undef AT
#undef TYPED

/* Sets what option opt says, with the value v, in base (com or own); 0, or the exit status. */
static int take_option(const char *cmd, const sl_cli_option *opt, char *v, void *base,
                       sl_cli_opts *com, void *own) {
    char *field = (char *)base + opt->at;
    long long n;
    unsigned long long u;
    double x;
    switch (opt->kind) {
    case SL_CLI_FLAG:
        *(int *)field = 1;
        return 0;
    case SL_CLI_STR:
        *(const char **)field = v;
        return 0;
    case SL_CLI_INT:
        if (sl_cli_opt_int(cmd, opt->name, v, opt->min, opt->max, &n)) return 2;
        *(int *)field = (int)n;
        break;
    case SL_CLI_LLONG:
        if (sl_cli_opt_int(cmd, opt->name, v, opt->min, opt->max, (long long *)field)) return 2;
        break;
    case SL_CLI_U64:
        if (sl_cli_opt_u64(cmd, opt->name, v, &u)) return 2;
        *(uint64_t *)field = u;
        break;
    case SL_CLI_FLOAT:
        if (sl_cli_opt_float(cmd, opt->name, v, (double)opt->min, DBL_MAX, &x)) return 2;
        *(float *)field = (float)x;
        break;
    case SL_CLI_SPECIAL:
        return opt->take(com, own, cmd, v);
    }
    if (opt->typed_at) *(const char **)((char *)base + opt->typed_at) = v;
    return 0;
}

static const sl_cli_option *find(const sl_cli_option *table, size_t n, const char *name) {
    for (size_t k = 0; k < n; k++)
        if (!strcmp(name, table[k].name)) return &table[k];
    return NULL;
}

int sl_cli_parse_options(const sl_cli_command *cmd, int argc, char **argv, sl_cli_opts *com,
                         void *own, const char **file) {
    const char *name = cmd->name;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *v = i + 1 < argc ? argv[i + 1] : NULL; /* --arg splits it in place */
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(cmd->usage, stdout);
            return 0;
        }
        void *base = com;
        const sl_cli_option *opt = find(shared, sizeof shared / sizeof shared[0], a);
        if (!opt && (opt = find(cmd->options, cmd->noptions, a)) != NULL) base = own;
        if (!opt && a[0] == '-')
            return sl_cli_fail(name, "unknown option %s (see sluice %s --help)", a, name), 2;
        if (!opt && !cmd->takes_file)
            return sl_cli_fail(name, "%s: unexpected argument (see sluice %s --help)", a, name), 2;
        if (!opt && *file)
            return sl_cli_fail(name, "one pipeline file only ('%s' and '%s')", *file, a), 2;
        if (!opt) {
            *file = a;
            continue;
        }
        if (opt->kind != SL_CLI_FLAG) {
            if (!v) return sl_cli_fail(name, "%s needs a value (see sluice %s --help)", a, name), 2;
            i++;
        }
        int rc = take_option(name, opt, v, base, com, own);
        if (rc) return rc;
    }
    if (cmd->takes_file && !*file) {
        fputs(cmd->usage, stderr);
        return 2;
    }
    return -1;
}
