/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors: typed, shaped views of memory on the CPU or a CUDA device, and lists of samples.
 *
 * An sl_tensor is a plain descriptor (data pointer, dtype, device, up to 8 dims, byte strides,
 * layout string). It owns its memory only when made by sl_tensor_alloc (then sl_tensor_free
 * releases it); every other tensor is a view and freeing it is a no-op. An sl_tlist is a batch of
 * samples that share dtype, rank and device but not shape (what readers and decoders produce); its
 * samples live in one recycled buffer or point at external memory (zero-copy views into an LMDB
 * map). */
#ifndef SLUICE_TENSOR_H
#define SLUICE_TENSOR_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum, name, bytes) -- names are DALI's type names where DALI has one. SL_DTYPE_INTERP is
 * DALI's DALIInterpType as a tensor's element type (an int32 holding DALI's code: INTERP_NN 0,
 * INTERP_LINEAR 1, INTERP_CUBIC 2, INTERP_LANCZOS3 3, INTERP_TRIANGULAR 4, INTERP_GAUSSIAN 5): a
 * per-sample interp_type, e.g. fn.random.choice over interpolation types */
#define SL_DTYPE_TABLE(X)                                                                          \
    X(SL_DTYPE_U8, "uint8", 1)                                                                     \
    X(SL_DTYPE_I8, "int8", 1)                                                                      \
    X(SL_DTYPE_U16, "uint16", 2)                                                                   \
    X(SL_DTYPE_I16, "int16", 2)                                                                    \
    X(SL_DTYPE_I32, "int32", 4)                                                                    \
    X(SL_DTYPE_I64, "int64", 8)                                                                    \
    X(SL_DTYPE_F16, "float16", 2)                                                                  \
    X(SL_DTYPE_BF16, "bfloat16", 2)                                                                \
    X(SL_DTYPE_F32, "float32", 4)                                                                  \
    X(SL_DTYPE_F64, "float64", 8)                                                                  \
    X(SL_DTYPE_BOOL, "bool", 1)                                                                    \
    X(SL_DTYPE_U32, "uint32", 4)                                                                   \
    X(SL_DTYPE_U64, "uint64", 8)                                                                   \
    X(SL_DTYPE_INTERP, "DALIInterpType", 4)

typedef enum sl_dtype {
#define SL__DTYPE_ENUM(e, name, size) e,
    SL_DTYPE_TABLE(SL__DTYPE_ENUM)
#undef SL__DTYPE_ENUM
        SL_DTYPE_COUNT
} sl_dtype;

size_t sl_dtype_size(sl_dtype t);
const char *sl_dtype_name(sl_dtype t);
/* Accepts "uint8", "float32", ... and DALI's spellings ("UINT8", "FLOAT", "FLOAT16", "INT32", ...).
 */
sl_status sl_dtype_parse(const char *s, sl_dtype *out);
bool sl_dtype_is_float(sl_dtype t);

typedef enum sl_device_kind { SL_DEVICE_CPU = 0, SL_DEVICE_CUDA = 1 } sl_device_kind;
typedef struct sl_device {
    sl_device_kind kind;
    int id; /* CUDA ordinal; 0 for the CPU */
} sl_device;

static inline sl_device sl_cpu(void) {
    sl_device d;
    d.kind = SL_DEVICE_CPU;
    d.id = 0;
    return d;
}
static inline sl_device sl_cuda(int id) {
    sl_device d;
    d.kind = SL_DEVICE_CUDA;
    d.id = id;
    return d;
}
static inline bool sl_device_eq(sl_device a, sl_device b) {
    return a.kind == b.kind && a.id == b.id;
}

/* Creates the CUDA contexts of the n GPUs ids[0..n) at once, a thread each: made one after the
 * other by their first use, each taking a fraction of a second, they add up at start-up. Optional
 * (first use makes a context anyway). SL_ENOTSUP in a build without CUDA, SL_ECUDA naming the
 * call that failed. */
sl_status sl_cuda_init(const int *ids, int n, sl_err *err);
/* The CPUs this process may run on: the count of its affinity mask (sched_getaffinity: taskset,
 * mpirun's binding, a container's cpuset), lowered to its cgroup's CPU quota where one is set
 * (a container's --cpus: cgroup v2 cpu.max, or v1 cpu.cfs_quota_us over cpu.cfs_period_us, of
 * its cgroup or one above it, the lowest, rounded up to whole CPUs); at least 1. Read afresh on
 * every call. */
int sl_cpu_count(void);

#define SL_MAX_DIMS   8
#define SL_LAYOUT_MAX 8

typedef struct sl_tensor {
    void *data;
    sl_dtype dtype;
    sl_device device;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    int64_t strides[SL_MAX_DIMS];   /* in bytes */
    char layout[SL_LAYOUT_MAX + 1]; /* "HWC", "CHW" or "" (one letter per dim, or empty) */
    void *alloc;                    /* non-NULL when this tensor owns its memory */
} sl_tensor;

/* Describes existing contiguous (row-major) memory; layout may be NULL or "". Here and in
 * sl_tensor_alloc, a negative extent, or a shape whose element count or byte size (counting the
 * non-zero extents) exceeds PTRDIFF_MAX, is SL_EINVAL. */
sl_status sl_tensor_wrap(sl_tensor *t, void *data, sl_dtype dtype, sl_device device, int ndim,
                         const int64_t *shape, const char *layout);
/* Allocates contiguous memory (64-byte aligned host memory, or device memory for CUDA). */
sl_status sl_tensor_alloc(sl_tensor *t, sl_dtype dtype, sl_device device, int ndim,
                          const int64_t *shape, const char *layout, sl_err *err);
/* Frees memory the tensor owns; a no-op for views and zeroed tensors. */
void sl_tensor_free(sl_tensor *t);

/* -1 and SIZE_MAX for a shape that sl_tensor_wrap would refuse (so an allocation fails). */
int64_t sl_tensor_numel(const sl_tensor *t);
size_t sl_tensor_nbytes(const sl_tensor *t);
bool sl_tensor_is_contiguous(const sl_tensor *t);
void sl_tensor_set_strides_contiguous(sl_tensor *t);
sl_status sl_tensor_set_layout(sl_tensor *t, const char *layout, sl_err *err);

/* Views (no copies; the result does not own memory). */
/* Rows [start, end) of dimension dim. */
sl_status sl_tensor_slice(const sl_tensor *t, int dim, int64_t start, int64_t end, sl_tensor *out,
                          sl_err *err);
/* Element i of dimension 0, with that dimension removed. */
sl_status sl_tensor_index(const sl_tensor *t, int64_t i, sl_tensor *out, sl_err *err);
/* A different shape over the same contiguous memory; one extent may be -1 (inferred). */
sl_status sl_tensor_reshape(const sl_tensor *t, int ndim, const int64_t *shape, sl_tensor *out,
                            sl_err *err);
/* Reorders dimensions: out dim i is t's dim perm[i]. */
sl_status sl_tensor_permute(const sl_tensor *t, const int *perm, sl_tensor *out, sl_err *err);

/* Copies src to dst (same dtype and shape; any device pair; strided host copies supported).
 * stream: a cudaStream_t for device copies, or NULL for the default stream (synchronous). */
sl_status sl_tensor_copy(sl_tensor *dst, const sl_tensor *src, void *stream, sl_err *err);
/* Sets every element to value (converted to the dtype); host or device. */
sl_status sl_tensor_fill(sl_tensor *t, double value, void *stream, sl_err *err);
/* "float32[200,784]@cpu HWC" into buf. */
const char *sl_tensor_describe(const sl_tensor *t, char *buf, size_t size);

/* ---- sample lists --------------------------------------------------------------------------- */

/* Bytes of host memory that the sample lists of one batch may lay out (see sl_tlist.budget). */
typedef struct sl_mem_budget {
    size_t limit;
    size_t used;
} sl_mem_budget;

typedef struct sl_tlist {
    int count;    /* samples in use */
    int capacity; /* samples allocated in the arrays below */
    sl_dtype dtype;
    sl_device device;
    int ndim;
    char layout[SL_LAYOUT_MAX + 1];
    int64_t *shapes; /* count * ndim */
    void **data;     /* per-sample pointers: into buf, or external */
    void *buf;       /* owned storage for samples that are not external */
    size_t buf_size; /* bytes allocated in buf */
    size_t buf_used;
    bool pinned; /* CPU lists: allocate page-locked memory (set before the first alloc) */
    /* NULL, or the host-memory allowance that this list shares with the other lists of one batch
     * (a pipeline's limit, sl_pipeline_config.max_batch_bytes): sl_tlist_alloc adds the bytes it
     * lays out in a CPU list to `used` and refuses, with SL_ENOMEM, a layout that would take it
     * past `limit`; the owner sets `used` to 0 when the next batch starts */
    sl_mem_budget *budget;
} sl_tlist;

/* Prepares list for count samples of the given dtype/rank/device; keeps and reuses its storage. */
sl_status sl_tlist_reset(sl_tlist *l, int count, sl_dtype dtype, int ndim, sl_device device,
                         sl_err *err);
/* Lays out every sample in the owned buffer (shapes: count*ndim), contiguously, each 64-byte
 * aligned; the buffer grows only when needed. A negative extent, or a sample or total size over
 * PTRDIFF_MAX bytes, is SL_EINVAL naming the sample; a CPU list's layout past its budget (above)
 * is SL_ENOMEM naming the bytes asked, before anything is allocated. */
sl_status sl_tlist_alloc(sl_tlist *l, const int64_t *shapes, sl_err *err);
/* Sets sample i to point at external memory of the given shape (no copy). */
void sl_tlist_set_external(sl_tlist *l, int i, void *data, const int64_t *shape);
/* A view of sample i. */
void sl_tlist_sample(const sl_tlist *l, int i, sl_tensor *out);
/* SIZE_MAX when the sample's shape would overflow (see sl_tlist_alloc). */
size_t sl_tlist_sample_nbytes(const sl_tlist *l, int i);
const int64_t *sl_tlist_shape(const sl_tlist *l, int i);
bool sl_tlist_uniform(const sl_tlist *l);
/* When all samples have one shape and sit back to back in memory: a dense (count, ...) view. */
sl_status sl_tlist_as_tensor(const sl_tlist *l, sl_tensor *out, sl_err *err);
void sl_tlist_free(sl_tlist *l);

#ifdef __cplusplus
}
#endif
#endif
