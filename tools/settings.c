/* SPDX-License-Identifier: Apache-2.0 */
/* A pipeline file's settings for `sluice run` and `sluice train` (see settings.h). */
#include "settings.h"

#include "common.h"

#include "sluice/ops.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sl_status sl_cli_settle_devices(const char *cmd, const sl_pipeline_decorator *deco,
                                const sl_cli_flags *flags, const sl_iter_settings *s, bool say,
                                sl_iter_config *c, sl_err *err) {
    unsigned over = 0;
    SL_CLI_TRY(sl_iter_settle_devices(c, deco, s, &over, err));
    if (say && (over & SL_SETTING_DEVICES)) {
        char spec[32];
        if (deco->device_id == SL_DECORATOR_DEVICE_NONE)
            snprintf(spec, sizeof spec, "None");
        else
            snprintf(spec, sizeof spec, "%d", deco->device_id);
        fprintf(stderr, "sluice %s: --devices %s overrides the pipeline's device_id=%s\n", cmd,
                flags->devices, spec);
    }
    return SL_OK;
}

sl_status sl_cli_settle(const char *cmd, const sl_pipeline_decorator *deco,
                        const sl_cli_flags *flags, const sl_iter_settings *s, bool say,
                        sl_iter_config *c, sl_err *err) {
    unsigned over = 0;
    SL_CLI_TRY(sl_iter_settle(c, deco, s, &over, err));
    if (!say) return SL_OK;
    if (over & SL_SETTING_BATCH_SIZE)
        fprintf(stderr,
                "sluice %s: --batch-size %s overrides the pipeline's batch_size=%d "
                "(--batch-size is global: %d per device)\n",
                cmd, flags->batch_size, deco->batch_size, sl_iter_config_device_batch(c, deco));
    if (over & SL_SETTING_THREADS)
        fprintf(stderr, "sluice %s: --threads %s overrides the pipeline's num_threads=%d\n", cmd,
                flags->threads, deco->num_threads);
    if (over & SL_SETTING_SEED)
        fprintf(stderr, "sluice %s: --seed %s overrides the pipeline's seed=%lld\n", cmd,
                flags->seed, (long long)deco->seed);
    if (over & SL_SETTING_PREFETCH)
        fprintf(stderr,
                "sluice %s: --prefetch %s overrides the pipeline's prefetch_queue_depth=%d\n", cmd,
                flags->prefetch, deco->prefetch_queue_depth);
    return SL_OK;
}

/* Calls f on each identifier of a Python text outside comments and string literals. */
static void each_name(const char *s, void (*f)(const char *, size_t, void *), void *user) {
    while (*s) {
        if (*s == '#') {
            while (*s && *s != '\n') s++;
        } else if (*s == '"' || *s == '\'') {
            char q = *s;
            bool triple = s[1] == q && s[2] == q;
            s += triple ? 3 : 1;
            while (*s) {
                if (*s == '\\' && s[1]) {
                    s += 2;
                } else if (*s == q && (!triple || (s[1] == q && s[2] == q))) {
                    s += triple ? 3 : 1;
                    break;
                } else if (*s == '\n' && !triple) {
                    break;
                } else {
                    s++;
                }
            }
        } else if (isalpha((unsigned char)*s) || *s == '_') {
            const char *b = s;
            while (isalnum((unsigned char)*s) || *s == '_') s++;
            f(b, (size_t)(s - b), user);
        } else if (isdigit((unsigned char)*s)) { /* 1e5, 0x1f: not names */
            while (isalnum((unsigned char)*s) || *s == '_' || *s == '.') s++;
        } else {
            s++;
        }
    }
}

typedef struct name_probe {
    const char *want;
    bool found;
    char best[64];
    int best_d;
} name_probe;

static void probe_name(const char *b, size_t n, void *user) {
    name_probe *p = user;
    if (strlen(p->want) == n && !memcmp(b, p->want, n)) {
        p->found = true;
        return;
    }
    char name[64];
    if (n >= sizeof name) return;
    memcpy(name, b, n);
    name[n] = 0;
    int d = sl_name_distance(p->want, name);
    if (d < p->best_d) {
        p->best_d = d;
        memcpy(p->best, name, n + 1);
    }
}

bool sl_cli_text_uses(const char *text, const char *name) {
    name_probe p = {.want = name, .best_d = 0};
    each_name(text, probe_name, &p);
    return p.found;
}

sl_status sl_cli_check_binds(const char *const *texts, const char *const *names, int ntexts,
                             const sl_pipeline_bind *binds, int nbinds, sl_err *err) {
    for (int i = 0; i < nbinds; i++) {
        name_probe p = {.want = binds[i].name, .best_d = 3};
        for (int t = 0; t < ntexts && !p.found; t++) each_name(texts[t], probe_name, &p);
        if (p.found) continue;
        char hint[96] = "";
        if (p.best[0]) snprintf(hint, sizeof hint, " (did you mean '%s'?)", p.best);
        const char *v = binds[i].value ? binds[i].value : "";
        if (ntexts == 1)
            return sl_err_set(err, SL_EINVAL,
                              "--arg %s=%s: %s does not use the name '%s'%s; a binding that "
                              "nothing uses would be ignored",
                              binds[i].name, v, names[0], binds[i].name, hint);
        return sl_err_set(err, SL_EINVAL,
                          "--arg %s=%s: neither %s nor %s uses the name '%s'%s; a binding that "
                          "nothing uses would be ignored",
                          binds[i].name, v, names[0], names[ntexts - 1], binds[i].name, hint);
    }
    return SL_OK;
}

sl_status sl_cli_check_epoch(sl_iter *it, const char *path, const char *hint, sl_err *err) {
    if (sl_iter_len(it) >= 0) return SL_OK;
    sl_pipeline *p0 = sl_iter_pipeline(it, 0);
    char names[512] = "";
    size_t nl = 0;
    int nr = sl_pipeline_num_readers(p0);
    for (int r = 0; r < nr && nl < sizeof names; r++)
        nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s'%s'", r ? ", " : "",
                               sl_pipeline_reader_name(p0, r));
    return sl_err_set(err, SL_EINVAL,
                      "%s: the epoch has no size: the pipeline has %d readers (%s) and neither "
                      "reader_name nor size says which one counts; pass reader_name=\"NAME\" or "
                      "size=N in the decorator%s",
                      path, nr, nr ? names : "none", hint ? hint : "");
}
