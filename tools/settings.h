/* SPDX-License-Identifier: Apache-2.0 */
/* What `sluice run` and `sluice train` take from a pipeline file besides its graph: the
 * decorator's pipeline settings (batch_size, num_threads, seed, prefetch_queue_depth, device_id),
 * resolved by the library with the flags over them (the tool says so); the --arg names the text
 * must use; and the check that an epoch can be counted. */
#ifndef SLUICE_TOOLS_SETTINGS_H
#define SLUICE_TOOLS_SETTINGS_H

#include "sluice/iterator.h"

#include <stdbool.h>

/* The flags the user typed for the settings a decorator may carry: the value as typed, NULL when
 * the flag was not given. */
typedef struct sl_cli_flags {
    const char *devices, *batch_size, *threads, *seed, *prefetch;
} sl_cli_flags;

/* The library's resolution of the devices and shards (sl_iter_settle_devices) and then of the
 * batch, threads, seed and prefetch depth (sl_iter_settle), c->filename naming the pipeline file;
 * when say, a line on stderr for each flag that overrode the decorator's setting ("sluice CMD:
 * --devices D overrides the pipeline's device_id=N"). */
sl_status sl_cli_settle_devices(const char *cmd, const sl_pipeline_decorator *deco,
                                const sl_cli_flags *flags, const sl_iter_settings *s, bool say,
                                sl_iter_config *c, sl_err *err);
sl_status sl_cli_settle(const char *cmd, const sl_pipeline_decorator *deco,
                        const sl_cli_flags *flags, const sl_iter_settings *s, bool say,
                        sl_iter_config *c, sl_err *err);
/* Every --arg NAME must be a name that one of the texts uses (outside strings and comments):
 * otherwise SL_EINVAL naming it (and the nearest name the texts do use). texts: one or two
 * pipeline texts, names: their files. */
sl_status sl_cli_check_binds(const char *const *texts, const char *const *names, int ntexts,
                             const sl_pipeline_bind *binds, int nbinds, sl_err *err);
/* Whether the pipeline text uses the name (outside strings and comments). */
bool sl_cli_text_uses(const char *text, const char *name);
/* SL_EINVAL when the iterator cannot count its epoch (several readers, none named): nothing
 * would end one. hint: more ways out the command has (", or bound the run with --steps N"). */
sl_status sl_cli_check_epoch(sl_iter *it, const char *path, const char *hint, sl_err *err);

#endif
