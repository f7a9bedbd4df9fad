/* SPDX-License-Identifier: Apache-2.0 */
/* A small model saved with sl_mlp_save, for the fault sweep (tests/fault/fault_sweep.sh): the
 * one file the library writes that no command of the tool does. mlp_save PATH: exit 0 when saved,
 * 1 with the library's message on standard error when not. */
#include "sluice/train.h"

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mlp_save PATH\n");
        return 2;
    }
    sl_mlp_config cfg;
    sl_mlp_config_default(&cfg);
    cfg.nsizes = 3;
    cfg.sizes[0] = 64;
    cfg.sizes[1] = 16;
    cfg.sizes[2] = 10;
    cfg.seed = 7;
    sl_err err;
    sl_err_clear(&err);
    sl_mlp *m = NULL;
    sl_status st = sl_mlp_create(&cfg, sl_cpu(), &m, &err);
    if (!st) st = sl_mlp_save(m, argv[1], &err);
    sl_mlp_free(m);
    if (st) {
        fprintf(stderr, "mlp_save: %s\n", err.msg);
        return 1;
    }
    return 0;
}
