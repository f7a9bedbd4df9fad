/* SPDX-License-Identifier: Apache-2.0 */
// cuBLAS loaded at run time: see cublas_dl.h for why. The library of the cuBLAS major version we
// were built against is dlopen'ed by its soname (the loader's usual search: LD_LIBRARY_PATH,
// ld.so.cache), else from the directory the CUDA runtime was loaded from.
#include "train/cublas_dl.h"

#include "core/pool.h"
#include "train/mlp.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define XSTR(x)       STR(x)
#define STR(x)        #x
#define CUBLAS_SONAME "libcublas.so." XSTR(CUBLAS_VER_MAJOR)

static sl__cublas_api api;
static int loaded;
static char why[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

// libcublas next to libcudart (whose cudaGetDeviceCount this process has), or NULL
static void *open_beside_cudart(void) {
    Dl_info info;
    if (!dladdr((void *)&cudaGetDeviceCount, &info) || !info.dli_fname) return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
             CUBLAS_SONAME);
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void load(void) {
    void *h = dlopen(CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "%s", e ? e : "not found");
        h = open_beside_cudart();
        if (!h) return;
    }
    // each symbol by the name the cublas_v2.h macro expands to (cublasCreate -> cublasCreate_v2)
#define LOAD(field, fn)                                                                            \
    do {                                                                                           \
        api.field = (decltype(api.field))dlsym(h, XSTR(fn));                                       \
        if (!api.field) {                                                                          \
            snprintf(why, sizeof why, "%s has no %s", CUBLAS_SONAME, XSTR(fn));                    \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    LOAD(create, cublasCreate);
    LOAD(destroy, cublasDestroy);
    LOAD(set_stream, cublasSetStream);
    LOAD(set_math_mode, cublasSetMathMode);
    LOAD(set_workspace, cublasSetWorkspace);
    LOAD(gemm_ex, cublasGemmEx);
    LOAD(status_string, cublasGetStatusString);
#undef LOAD
    loaded = 1; // the library stays loaded for the process's life
}

const sl__cublas_api *sl__cublas(sl_err *err) {
    pthread_once(&once, load);
    if (!loaded) {
        sl_err_set(err, SL_ECUDA, "cuBLAS: cannot load %s: %s", CUBLAS_SONAME, why);
        return NULL;
    }
    return &api;
}

extern "C" sl_status sl__cuda_blas_load(sl_err *err) {
    return sl__cublas(err) ? SL_OK : SL_ECUDA;
}

static void *preload(void *arg) {
    (void)arg;
    sl__thread_begin("sluice-cublas");
    pthread_once(&once, load);
    sl__thread_end();
    return NULL;
}

extern "C" void sl__cuda_blas_preload(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, preload, NULL) == 0) pthread_detach(t);
}
