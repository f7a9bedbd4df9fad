/* SPDX-License-Identifier: Apache-2.0 */
/* sluice ops [--json] [--names] [NAME|GROUP]: every operator with its arguments, types, defaults
 * and docs, from the public operator table (sluice/ops.h: the same tables the pipeline checks
 * arguments against). NAME shows one operator; GROUP ("readers", "decoders", ...) the operators
 * whose names start with "GROUP."; --names prints only the names ({"names": [...]} with --json).
 * An op's aliases (DALI's other names for it) find it too and are listed with it. */
#include "cli.h"
#include "common.h"

#include "sluice/ops.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static void devices(unsigned d, char *buf, size_t n) {
    snprintf(buf, n, "%s%s%s", d & SL_OP_CPU ? "cpu " : "", d & SL_OP_MIXED ? "mixed " : "",
             d & SL_OP_GPU ? "gpu" : "");
}

static void print_arg(const sl_op_arg_info *a) {
    printf("  %-26s %s", a->name, a->type_doc);
    if (a->choices) printf(" (%s)", a->choices);
    if (a->required)
        printf(", required");
    else
        printf(" = %s", a->def ? a->def : "None");
    if (a->per_sample) printf(", per-sample");
    if (a->per_frame) printf(", per-frame");
    printf("\n      %s\n", a->doc);
}

static void print_op(const sl_op_info *op) {
    char dev[32];
    devices(op->devices, dev, sizeof dev);
    printf("%s  (devices: %s; inputs: %d", op->name, dev, op->min_inputs);
    if (op->max_inputs == INT_MAX)
        printf(" or more");
    else if (op->max_inputs != op->min_inputs)
        printf("-%d", op->max_inputs);
    if (op->sequences) printf("; sequences: frame by frame");
    printf(")\n");
    if (op->aliases[0]) { /* '|'-separated in the table: a list here */
        printf("  also named: ");
        for (const char *p = op->aliases; *p; p++) {
            if (*p == '|')
                fputs(", ", stdout);
            else
                putchar(*p);
        }
        printf("\n");
    }
    if (op->doc[0]) printf("  %s\n", op->doc);
    for (int i = 0; i < op->num_args; i++) {
        sl_op_arg_info a;
        if (sl_op_get_arg(op->name, i, &a, NULL) == SL_OK) print_arg(&a);
    }
}

static void json_arg(const sl_op_arg_info *a) {
    printf("{\"name\": ");
    sl_cli_json_str(stdout, a->name);
    printf(", \"type\": ");
    sl_cli_json_str(stdout, a->type);
    printf(", \"type_doc\": ");
    sl_cli_json_str(stdout, a->type_doc);
    printf(", \"default\": ");
    if (a->def)
        sl_cli_json_str(stdout, a->def);
    else
        printf("null");
    printf(", \"doc\": ");
    sl_cli_json_str(stdout, a->doc);
    printf(", \"choices\": ");
    if (a->choices)
        sl_cli_json_str(stdout, a->choices);
    else
        printf("null");
    printf(", \"required\": %s, \"per_sample\": %s, \"per_frame\": %s}",
           a->required ? "true" : "false", a->per_sample ? "true" : "false",
           a->per_frame ? "true" : "false");
}

static void json_op(const sl_op_info *op) {
    printf("{\"name\": ");
    sl_cli_json_str(stdout, op->name);
    printf(", \"aliases\": [");
    for (const char *p = op->aliases; *p;) {
        const char *end = strchr(p, '|');
        int n = end ? (int)(end - p) : (int)strlen(p);
        char alias[128];
        snprintf(alias, sizeof alias, "%.*s", n, p);
        printf("%s", p == op->aliases ? "" : ", ");
        sl_cli_json_str(stdout, alias);
        p = end ? end + 1 : p + n;
    }
    printf("], \"doc\": ");
    sl_cli_json_str(stdout, op->doc);
    printf(", \"devices\": [");
    const char *sep = "";
    static const struct {
        unsigned bit;
        const char *name;
    } devs[] = {{SL_OP_CPU, "cpu"}, {SL_OP_MIXED, "mixed"}, {SL_OP_GPU, "gpu"}};
    for (size_t d = 0; d < sizeof devs / sizeof devs[0]; d++)
        if (op->devices & devs[d].bit) {
            printf("%s\"%s\"", sep, devs[d].name);
            sep = ", ";
        }
    printf("], \"min_inputs\": %d, \"max_inputs\": %d, \"reader\": %s, \"random\": %s, "
           "\"no_copy\": %s, \"sequences\": %s, \"args\": [",
           op->min_inputs, op->max_inputs, op->is_reader ? "true" : "false",
           op->is_random ? "true" : "false", op->no_copy ? "true" : "false",
           op->sequences ? "true" : "false");
    for (int i = 0; i < op->num_args; i++) {
        sl_op_arg_info a;
        if (sl_op_get_arg(op->name, i, &a, NULL) != SL_OK) continue;
        printf(i ? ",\n    " : "\n    ");
        json_arg(&a);
    }
    printf("]}");
}

/* op is in group ("readers" holds readers.caffe2 ...); every op is in the NULL group */
static bool in_group(const char *name, const char *group) {
    if (!group) return true;
    size_t n = strlen(group);
    if (n && group[n - 1] == '.') n--;
    return !strncmp(name, group, n) && name[n] == '.';
}

/* {"ops": [...], "common_args": [...]}: one op (only), a group's, or all of them */
static void json_all(const sl_op_info *only, const char *group) {
    printf("{\"ops\": [\n  ");
    if (only) {
        json_op(only);
    } else {
        int k = 0;
        for (int i = 0; i < sl_op_count(); i++) {
            sl_op_info op;
            if (sl_op_get(i, &op, NULL) != SL_OK || !in_group(op.name, group)) continue;
            if (k++) printf(",\n  ");
            json_op(&op);
        }
    }
    printf("\n], \"common_args\": [");
    for (int i = 0; i < sl_op_num_common_args(); i++) {
        sl_op_arg_info a;
        if (sl_op_common_arg(i, &a, NULL) != SL_OK) continue;
        printf(i ? ",\n  " : "\n  ");
        json_arg(&a);
    }
    printf("\n]}\n");
}

/* --names --json: {"names": [...]}, of one op (only), a group's, or all of them */
static void json_names(const sl_op_info *only, const char *group) {
    printf("{\"names\": [");
    int k = 0;
    for (int i = 0; i < sl_op_count(); i++) {
        sl_op_info op;
        if (sl_op_get(i, &op, NULL) != SL_OK || !in_group(op.name, group)) continue;
        if (only && strcmp(op.name, only->name)) continue;
        if (k++) printf(", ");
        sl_cli_json_str(stdout, op.name);
    }
    printf("]}\n");
}

int sl_cli_ops(int argc, char **argv) {
    bool json = false, names = false;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: sluice ops [--json] [--names] [NAME|GROUP]\nLists every operator, one "
                   "operator's arguments (NAME: readers.caffe2), or a group's operators\n(GROUP: "
                   "readers lists readers.caffe2, readers.file, ...); --names: the names only, "
                   "one a line;\n--json: as one JSON object {\"ops\": [...], \"common_args\": "
                   "[...]}\n(with --names: {\"names\": [...]}).\n");
            return 0;
        }
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--names")) {
            names = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "sluice ops: unknown option '%s' (see sluice ops --help)\n", argv[i]);
            return 2;
        } else if (name) {
            fprintf(stderr, "sluice ops: one operator name at most (see sluice ops --help)\n");
            return 2;
        } else {
            name = argv[i];
        }
    }
    const char *group = NULL;
    if (name) {
        sl_op_info op;
        sl_err err;
        if (sl_op_find(name, &op, &err) == SL_OK) {
            if (json && names)
                json_names(&op, NULL);
            else if (json)
                json_all(&op, NULL);
            else if (names)
                printf("%s\n", op.name);
            else
                print_op(&op);
            return 0;
        }
        int found = 0;
        for (int i = 0; i < sl_op_count(); i++) {
            sl_op_info o;
            if (sl_op_get(i, &o, NULL) == SL_OK && in_group(o.name, name)) found++;
        }
        if (!found)
            return sl_cli_fail("ops",
                               "%s; no operator name starts with '%s.' either (sluice ops "
                               "--names lists them)",
                               err.msg, name);
        group = name;
    }
    if (json) {
        if (names)
            json_names(NULL, group);
        else
            json_all(NULL, group);
        return 0;
    }
    for (int i = 0; i < sl_op_count(); i++) {
        sl_op_info op;
        if (sl_op_get(i, &op, NULL) != SL_OK || !in_group(op.name, group)) continue;
        if (names) {
            printf("%s\n", op.name);
            continue;
        }
        print_op(&op);
        printf("\n");
    }
    if (names || group) return 0;
    printf("Common arguments: every operator also takes these, and the pipeline handles them "
           "(where an operator's own list above has one, that entry's default applies).\n");
    for (int i = 0; i < sl_op_num_common_args(); i++) {
        sl_op_arg_info a;
        if (sl_op_common_arg(i, &a, NULL) == SL_OK) print_arg(&a);
    }
    return 0;
}
