/* SPDX-License-Identifier: Apache-2.0 */
/* The settings a pipeline's decorator may carry and a caller may give over it, resolved in one
 * place (sl_iter_settle_devices, sl_iter_settle): the devices (with mpirun's one GPU per
 * process), the shards of this process, the global batch, threads, seed and prefetch depth; and
 * the iterator's configuration's defaults and its device list (sl_iter_config_init,
 * sl_iter_parse_devices). */
#include "sluice/iterator.h"

#include "core/alloc.h"
#include "core/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_iter_config_init(sl_iter_config *c) {
    memset(c, 0, sizeof *c);
    c->filename = "<pipeline>";
    c->ndevices = 1;
    c->devices[0] = sl_cpu();
    c->batch_size = 200;
    c->num_threads = SL_NUM_THREADS_AUTO;
    c->prefetch_cpu = 2;
    c->prefetch_gpu = 2;
    c->num_outputs = -1;
    c->size = -1;
    c->last_batch_policy = -1;
    c->last_batch_padded = -1;
    c->prepare_first_batch = -1;
    c->auto_reset = -1;
    c->layout = -1;
    c->caller_releases = 0;
}

sl_status sl_iter_parse_devices(const char *spec, sl_iter_config *c, sl_err *err) {
    if (!strcmp(spec, "cpu")) {
        c->ndevices = 1;
        c->devices[0] = sl_cpu();
        return SL_OK;
    }
    if (!strncmp(spec, "cpu:", 4)) {
        char *end;
        long k = strtol(spec + 4, &end, 10);
        if (*end || k < 1 || k > SL_MAX_DEVICES)
            return sl_err_set(err, SL_EINVAL, "devices \"%s\": cpu:K with K in 1..%d", spec,
                              SL_MAX_DEVICES);
        c->ndevices = (int)k;
        for (int i = 0; i < k; i++) c->devices[i] = sl_cpu();
        return SL_OK;
    }
    int ngpu = sl__cuda_device_count();
    if (!strcmp(spec, "all")) {
        if (ngpu == 0) {
            c->ndevices = 1;
            c->devices[0] = sl_cpu();
            return SL_OK;
        }
        c->ndevices = ngpu < SL_MAX_DEVICES ? ngpu : SL_MAX_DEVICES;
        for (int i = 0; i < c->ndevices; i++) c->devices[i] = sl_cuda(i);
        return SL_OK;
    }
    c->ndevices = 0;
    for (const char *p = spec; *p;) {
        char *end;
        long id = strtol(p, &end, 10);
        if (end == p || id < 0 || c->ndevices == SL_MAX_DEVICES)
            return sl_err_set(err, SL_EINVAL,
                              "devices \"%s\": expected cpu, cpu:K, all or GPU ids like 0,1", spec);
        if (id >= ngpu)
            return sl_err_set(err, SL_EINVAL, "devices \"%s\": GPU %ld does not exist (%d found)",
                              spec, id, ngpu);
        c->devices[c->ndevices++] = sl_cuda((int)id);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return sl_err_set(err, SL_EINVAL, "devices \"%s\": unexpected '%c'", spec, *end);
    }
    return c->ndevices ? SL_OK : sl_err_set(err, SL_EINVAL, "devices \"%s\": none", spec);
}

void sl_iter_settings_init(sl_iter_settings *s) {
    memset(s, 0, sizeof *s);
    s->batch_size = s->num_threads = s->prefetch = -1;
    s->nranks = s->local_size = 1;
}

sl_status sl_iter_settle_devices(sl_iter_config *c, const sl_pipeline_decorator *d,
                                 const sl_iter_settings *s, unsigned *overridden, sl_err *err) {
    int device_id = d ? d->device_id : -1;
    const char *spec = s->devices;
    if (spec) {
        if (device_id != -1 && overridden) *overridden |= SL_SETTING_DEVICES;
        SL_TRY(sl_iter_parse_devices(spec, c, err));
    } else if (device_id != -1) {
        char id[32];
        snprintf(id, sizeof id, "%d", device_id);
        bool none = device_id == SL_DECORATOR_DEVICE_NONE;
        sl_status st = sl_iter_parse_devices(none ? "cpu" : id, c, err);
        if (st) return sl_err_prefix(err, "%s: device_id=%s: ", c->filename, none ? "None" : id);
    } else {
        spec = s->default_devices ? s->default_devices : "cpu";
        SL_TRY(sl_iter_parse_devices(spec, c, err));
    }
    if (s->nranks > 1 && spec && !strcmp(spec, "all") && c->devices[0].kind == SL_DEVICE_CUDA) {
        /* one GPU per process: the one of its local rank */
        c->devices[0] = sl_cuda(s->local_rank % c->ndevices);
        c->ndevices = 1;
    }
    if (s->rank < 0 || s->nranks < 1 || s->rank >= s->nranks ||
        (long long)s->nranks * c->ndevices > INT_MAX)
        return sl_err_set(err, SL_EINVAL, "settings: process %d of %d with %d devices each",
                          s->rank, s->nranks, c->ndevices);
    c->shard_offset = s->rank * c->ndevices;
    c->total_shards = s->nranks * c->ndevices;
    return SL_OK;
}

/* How many pipelines' batches the decorator's per-pipeline batch_size makes a global batch of. */
static int pipelines_per_batch(const sl_iter_config *c, const sl_pipeline_decorator *d) {
    int layout = c->layout >= 0 ? c->layout : d ? (int)d->layout : (int)SL_LAYOUT_NONE;
    int shards = c->total_shards > 0 ? c->total_shards : c->ndevices;
    return layout == SL_LAYOUT_NONE && c->ndevices == 1 ? 1 : shards;
}

int sl_iter_config_device_batch(const sl_iter_config *c, const sl_pipeline_decorator *d) {
    return c->batch_size / pipelines_per_batch(c, d);
}

sl_status sl_iter_settle(sl_iter_config *c, const sl_pipeline_decorator *d,
                         const sl_iter_settings *s, unsigned *overridden, sl_err *err) {
    unsigned over = 0;
    if (s->batch_size > 0) c->batch_size = s->batch_size;
    if (s->num_threads >= 0) c->num_threads = s->num_threads;
    if (s->seed_given) c->seed = s->seed;
    if (s->prefetch > 0) c->prefetch_cpu = c->prefetch_gpu = s->prefetch;
    if (d && d->batch_size > 0) {
        int per = pipelines_per_batch(c, d);
        if (s->batch_size > 0)
            over |= SL_SETTING_BATCH_SIZE;
        else if ((long long)d->batch_size * per > INT_MAX)
            return sl_err_set(err, SL_EINVAL, "%s: batch_size=%d over %d devices is too large",
                              c->filename, d->batch_size, per);
        else
            c->batch_size = d->batch_size * per;
    }
    if (d && d->num_threads > 0) {
        if (s->num_threads >= 0)
            over |= SL_SETTING_THREADS;
        else
            c->num_threads = d->num_threads;
    }
    if (d && d->seed != -1) {
        if (s->seed_given)
            over |= SL_SETTING_SEED;
        else
            c->seed = (uint64_t)d->seed;
    }
    if (d && d->prefetch_queue_depth > 0) {
        if (s->prefetch > 0)
            over |= SL_SETTING_PREFETCH;
        else
            c->prefetch_cpu = c->prefetch_gpu = d->prefetch_queue_depth;
    }
    if (c->num_threads == SL_NUM_THREADS_AUTO) {
        /* the CPUs are shared by the pipelines of every process of this node */
        long all =
            (long)(s->local_size > 0 ? s->local_size : 1) * (c->ndevices > 0 ? c->ndevices : 1);
        c->num_threads = sl_pipeline_default_threads(all > INT_MAX ? INT_MAX : (int)all);
    }
    if (overridden) *overridden |= over;
    return SL_OK;
}
