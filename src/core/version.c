/* SPDX-License-Identifier: Apache-2.0 */
/* The library's version (sluice/version.h, configured from CMakeLists.txt's project() version) and
 * what it was built with: the headers' versions of the libraries under it, at compile time. */
#include "sluice/version.h"

#include "sluice/status.h"
#include "sluice/tensor.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <string.h>

#include <cblas.h>
#include <jpeglib.h>
#include <lmdb.h>
#include <spng.h>
#include <zlib.h>
#ifdef SLUICE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef SLUICE_HAVE_NVJPEG
#include <nvjpeg.h>
#endif
#ifdef SLUICE_HAVE_NCCL
#include <nccl.h>
#endif
#ifdef SLUICE_HAVE_MPI
#include <mpi.h>
#endif
#ifdef SLUICE_HAVE_DLPACK
#include <dlpack/dlpack.h>
#endif
#ifdef SLUICE_HAVE_SNDFILE
#include <sndfile.h>
#endif
#ifdef SLUICE_HAVE_TIFF
#include <tiffvers.h>
#endif
#ifdef SLUICE_HAVE_OPENJPEG
#include <opj_config.h>
#endif

#define SL__STR_(x) #x
#define SL__STR(x)  SL__STR_(x)

int sl_version(void) {
    return SLUICE_VERSION_NUMBER;
}

const char *sl_version_string(void) {
    return SLUICE_VERSION_STRING;
}

/* name, version: "" when it has none to give, NULL when the library was built without it; or a
 * version number (CUDART_VERSION is major * 1000 + minor * 10: div 1000; DLPACK_VERSION before
 * 1.0 major * 100 + minor * 10: div 100), printed as code / div "." code % div / 10 */
typedef struct {
    const char *name, *version;
    int code, div;
} part;

static const part parts[] = {
#ifdef SLUICE_HAVE_CUDA
    {"CUDA", "", CUDART_VERSION, 1000},
#else
    {"CUDA", NULL, 0, 0},
#endif
#if defined(SLUICE_HAVE_NVJPEG) && defined(NVJPEG_VER_MAJOR)
    {"nvJPEG",
     SL__STR(NVJPEG_VER_MAJOR) "." SL__STR(NVJPEG_VER_MINOR) "." SL__STR(NVJPEG_VER_PATCH), 0, 0},
#elif defined(SLUICE_HAVE_NVJPEG)
    {"nvJPEG", "", 0, 0},
#else
    {"nvJPEG", NULL, 0, 0},
#endif
#ifdef SLUICE_HAVE_NCCL
    {"NCCL", SL__STR(NCCL_MAJOR) "." SL__STR(NCCL_MINOR) "." SL__STR(NCCL_PATCH), 0, 0},
#else
    {"NCCL", NULL, 0, 0},
#endif
#ifdef SLUICE_HAVE_SNDFILE /* (its header has no version macro) */
    {"libsndfile", "", 0, 0},
#else
    {"libsndfile", NULL, 0, 0},
#endif
#ifdef SLUICE_HAVE_TIFF
    {"libtiff",
     SL__STR(TIFFLIB_MAJOR_VERSION) "." SL__STR(TIFFLIB_MINOR_VERSION) "." SL__STR(
         TIFFLIB_MICRO_VERSION),
     0, 0},
#else
    {"libtiff", NULL, 0, 0},
#endif
#ifdef SLUICE_HAVE_OPENJPEG
    {"OpenJPEG",
     SL__STR(OPJ_VERSION_MAJOR) "." SL__STR(OPJ_VERSION_MINOR) "." SL__STR(OPJ_VERSION_BUILD), 0,
     0},
#else
    {"OpenJPEG", NULL, 0, 0},
#endif
#if defined(SLUICE_HAVE_MPI) && defined(OMPI_MAJOR_VERSION)
    {"MPI",
     SL__STR(MPI_VERSION) "." SL__STR(MPI_SUBVERSION) " (Open MPI " SL__STR(
         OMPI_MAJOR_VERSION) "." SL__STR(OMPI_MINOR_VERSION) "." SL__STR(OMPI_RELEASE_VERSION) ")",
     0, 0},
#elif defined(SLUICE_HAVE_MPI)
    {"MPI", SL__STR(MPI_VERSION) "." SL__STR(MPI_SUBVERSION), 0, 0},
#else
    {"MPI", NULL, 0, 0},
#endif
#ifdef LIBJPEG_TURBO_VERSION
    {"libjpeg-turbo", SL__STR(LIBJPEG_TURBO_VERSION), 0, 0},
#else
    {"libjpeg", SL__STR(JPEG_LIB_VERSION), 0, 0},
#endif
    {"libspng",
     SL__STR(SPNG_VERSION_MAJOR) "." SL__STR(SPNG_VERSION_MINOR) "." SL__STR(SPNG_VERSION_PATCH), 0,
     0},
    {"zlib", ZLIB_VERSION, 0, 0},
    {"LMDB",
     SL__STR(MDB_VERSION_MAJOR) "." SL__STR(MDB_VERSION_MINOR) "." SL__STR(MDB_VERSION_PATCH), 0,
     0},
#ifdef OPENBLAS_VERSION
    {"OpenBLAS", OPENBLAS_VERSION, 0, 0}, /* " OpenBLAS 0.3.21 ": trimmed below */
#else
    {"OpenBLAS", "", 0, 0},
#endif
#if defined(SLUICE_HAVE_DLPACK) && defined(DLPACK_MAJOR_VERSION)
    {"DLPack", SL__STR(DLPACK_MAJOR_VERSION) "." SL__STR(DLPACK_MINOR_VERSION), 0, 0},
#elif defined(SLUICE_HAVE_DLPACK)
    {"DLPack", "", DLPACK_VERSION, 100},
#endif
};

static char info[512];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

/* Appends to info at *n (truncating at its end, which 512 bytes never reach). */
static void append(size_t *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(info + *n, sizeof info - *n, fmt, ap);
    va_end(ap);
    if (w > 0) *n = *n + (size_t)w < sizeof info ? *n + (size_t)w : sizeof info - 1;
}

static void make_info(void) {
    size_t n = 0, nparts = sizeof parts / sizeof parts[0];
    for (size_t i = 0; i < nparts; i++) {
        const char *v = parts[i].version;
        if (!v) continue;
        if (!strncmp(v, " OpenBLAS ", 10)) v += 10;
        int len = (int)strlen(v);
        while (len > 0 && v[len - 1] == ' ') len--;
        append(&n, "%s%s%s%.*s", n ? ", " : "", parts[i].name, len ? " " : "", len, v);
        if (parts[i].div)
            append(&n, " %d.%d", parts[i].code / parts[i].div, parts[i].code % parts[i].div / 10);
    }
    const char *sep = "; without ";
    for (size_t i = 0; i < nparts; i++)
        if (!parts[i].version) {
            append(&n, "%s%s", sep, parts[i].name);
            sep = ", ";
        }
}

const char *sl_build_info(void) {
    pthread_once(&info_once, make_info);
    return info;
}
