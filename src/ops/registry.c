/* SPDX-License-Identifier: Apache-2.0 */
/* The operator table: every area's list joined and sorted by name, looked up by DALI's op name
 * or one of its aliases (with or without the "fn." prefix), with edit-distance suggestions for
 * unknown names. */
#include "ops/registry.h"

#include "core/log.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 256

static const sl__op_def *table[MAX_OPS + 1];
static int table_count;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static int by_name(const void *a, const void *b) {
    return strcmp((*(const sl__op_def *const *)a)->name, (*(const sl__op_def *const *)b)->name);
}

static void build_table(void) {
    const sl__op_def *const *lists[] = {sl__reader_ops, sl__image_ops, sl__generic_ops};
    for (size_t l = 0; l < SL_ARRAY_LEN(lists); l++)
        for (int i = 0; lists[l][i]; i++) {
            SL_ASSERT(table_count < MAX_OPS);
            table[table_count++] = lists[l][i];
        }
    qsort(table, (size_t)table_count, sizeof table[0], by_name);
}

const sl__op_def *const *sl__registry_all(int *count) {
    pthread_once(&table_once, build_table);
    if (count) *count = table_count;
    return table;
}

/* name is one of the '|'-separated names of list (NULL: none) */
static bool listed(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, '|');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, name, n) == 0) return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

const sl__op_def *sl__registry_find(const char *name) {
    int n;
    const sl__op_def *const *all = sl__registry_all(&n);
    if (strncmp(name, "fn.", 3) == 0) name += 3;
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    for (int i = 0; i < n; i++)
        if (listed(all[i]->aliases, name)) return all[i];
    return NULL;
}

const char *sl__registry_suggest(const char *name) {
    int n, best_d = 99;
    const char *best = NULL;
    const sl__op_def *const *all = sl__registry_all(&n);
    if (strncmp(name, "fn.", 3) == 0) name += 3;
    for (int i = 0; i < n; i++) {
        int d = sl__op_distance(name, all[i]->name);
        /* also compare against the last dotted part ("image" vs "decoders.image") */
        const char *dot = strrchr(all[i]->name, '.');
        if (dot) {
            int d2 = sl__op_distance(name, dot + 1) + 1;
            if (d2 < d) d = d2;
        }
        if (d < best_d) best_d = d, best = all[i]->name;
    }
    size_t len = strlen(name);
    return best && best_d <= (len < 6 ? 2 : 4) ? best : NULL;
}
