/* SPDX-License-Identifier: Apache-2.0 */
/* The version macros (configured from CMakeLists.txt's project() version), sl_version() and
 * sl_version_string() agree; sl_build_info() names each back end once, on the side (built with
 * or without) that this build's SLUICE_HAVE_* say, and the libraries every build has. */
#include "sluice/sluice.h"

#include "check.h"

#include <stdio.h>
#include <string.h>

#define STR_(x) #x
#define STR(x)  STR_(x)

/* 1 when name is in the "built with" part of info, 0 when in the "without" part, -1 neither */
static int side(const char *info, const char *name) {
    const char *without = strstr(info, "; without ");
    size_t n = strlen(name);
    for (const char *p = info; (p = strstr(p, name)) != NULL; p += n) {
        bool starts = p == info || p[-1] == ' ';
        bool ends = p[n] == '\0' || p[n] == ' ' || p[n] == ',';
        if (starts && ends) return without && p > without ? 0 : 1;
    }
    return -1;
}

int main(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", SLUICE_VERSION_MAJOR, SLUICE_VERSION_MINOR,
             SLUICE_VERSION_PATCH);
    CHECK_STR(SLUICE_VERSION_STRING, want);
    CHECK_STR(sl_version_string(), SLUICE_VERSION_STRING);
    CHECK_EQ_INT(sl_version(), SLUICE_VERSION_NUMBER);
    CHECK_EQ_INT(sl_version(),
                 SLUICE_VERSION_MAJOR * 10000 + SLUICE_VERSION_MINOR * 100 + SLUICE_VERSION_PATCH);
    CHECK_STR(sl_version_string(), "0.1.0");

    const char *info = sl_build_info();
    CHECK(info == sl_build_info());
    printf("build info: %s\n", info);
    /* SLUICE_HAVE_X is defined as 1 where the build has X: stringified, "1"; else its own name */
    static const struct {
        const char *name, *have;
    } backs[] = {{"CUDA", STR(SLUICE_HAVE_CUDA)},          {"nvJPEG", STR(SLUICE_HAVE_NVJPEG)},
                 {"NCCL", STR(SLUICE_HAVE_NCCL)},          {"MPI", STR(SLUICE_HAVE_MPI)},
                 {"libsndfile", STR(SLUICE_HAVE_SNDFILE)}, {"libtiff", STR(SLUICE_HAVE_TIFF)},
                 {"OpenJPEG", STR(SLUICE_HAVE_OPENJPEG)}};
    for (size_t i = 0; i < sizeof backs / sizeof backs[0]; i++)
        CHECK_MSG(side(info, backs[i].name) == !strcmp(backs[i].have, "1"), "%s (have: %s): '%s'",
                  backs[i].name, backs[i].have, info);
    CHECK_EQ_INT(side(info, "libspng"), 1);
    CHECK_EQ_INT(side(info, "zlib"), 1);
    CHECK_EQ_INT(side(info, "LMDB"), 1);
    CHECK_EQ_INT(side(info, "OpenBLAS"), 1);
    CHECK(side(info, "libjpeg-turbo") == 1 || side(info, "libjpeg") == 1);
    CHECK_MSG(strstr(info, ", ,") == NULL && info[strlen(info) - 1] != ' ' &&
                  info[strlen(info) - 1] != ',',
              "separators: '%s'", info);
    return check_done();
}
