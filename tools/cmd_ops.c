/* sluice ops [NAME]: every operator with its arguments, types, defaults and docs, from the op
 * tables (the same tables the pipeline checks arguments against). */
#include "cli.h"

#include "ops/op.h"

#include <stdio.h>
#include <string.h>

static void devices(unsigned d, char *buf, size_t n) {
    snprintf(buf, n, "%s%s%s", d & SL_OPDEV_CPU ? "cpu " : "", d & SL_OPDEV_MIXED ? "mixed " : "",
             d & SL_OPDEV_GPU ? "gpu" : "");
}

static void print_op(const sl__op_def *op) {
    char dev[32];
    devices(op->devices, dev, sizeof dev);
    printf("%s  (devices: %s; inputs: %d", op->name, dev, op->min_inputs);
    if (op->max_inputs != op->min_inputs) printf("-%d", op->max_inputs);
    printf(")\n");
    if (op->doc) printf("  %s\n", op->doc);
    for (int i = 0; op->args && op->args[i].name; i++) {
        const sl__arg_schema *a = &op->args[i];
        printf("  %-26s %s", a->name, sl__arg_type_name(a->type));
        if (a->choices) printf(" (%s)", a->choices);
        if (a->flags & SL_ARGF_REQUIRED)
            printf(", required");
        else
            printf(" = %s", a->def ? a->def : "None");
        if (a->flags & SL_ARGF_PER_SAMPLE) printf(", per-sample");
        printf("\n      %s\n", a->doc ? a->doc : "");
    }
}

int sl_cli_ops(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: sluice ops [NAME]\nLists every operator, or one operator's arguments.\n");
        return 0;
    }
    int n;
    const sl__op_def *const *all = sl__op_all(&n);
    if (argc > 1) {
        const sl__op_def *op = sl__op_find(argv[1]);
        if (!op) {
            const char *s = sl__op_suggest(argv[1]);
            return s ? sl_cli_fail("ops", "no operator '%s'; did you mean '%s'?", argv[1], s)
                     : sl_cli_fail("ops", "no operator '%s'", argv[1]);
        }
        print_op(op);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        print_op(all[i]);
        printf("\n");
    }
    return 0;
}
