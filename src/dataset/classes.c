/* SPDX-License-Identifier: Apache-2.0 */
/* Class names beside a store: labels.txt, one name a line in label order (sluice/dataset.h). */
#include "sluice/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sl_dataset_read_classes(const char *dir, char ***names) {
    char p[4200], line[4096];
    snprintf(p, sizeof p, "%s/labels.txt", dir);
    *names = NULL;
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char **v = realloc(*names, (size_t)(n + 1) * sizeof *v);
        if (!v) break;
        *names = v;
        if (!(v[n] = strdup(line))) break;
        n++;
    }
    fclose(f);
    return n;
}

void sl_dataset_free_classes(char **names, int n) {
    for (int c = 0; c < n; c++) free(names[c]);
    free(names);
}
