/* SPDX-License-Identifier: Apache-2.0 */
/* The test harness: assertion macros that print the expression and both sides, count failures, and
 * make the test exit non-zero. Every test's main ends with `return check_done();`. */
#ifndef SLUICE_TEST_CHECK_H
#define SLUICE_TEST_CHECK_H

#include "sluice/pipeline.h"
#include "sluice/status.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern int check_failures;
extern int check_count;

void check_fail(const char *file, int line, const char *fmt, ...) SL_PRINTF(3, 4);
int check_done(void);
/* e's message, or "" for NULL (e: an sl_err pointer or NULL) */
const char *check_errmsg(const void *e);
int check_needle_missing(const char *msg, const char *needle);
/* Test data from a small deterministic generator (xorshift64 on *state, which must not be 0):
 * floats in [0, 1) with 24 random bits. */
static inline float check_frand(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return (float)((x >> 40) & 0xffffff) / 16777216.0f;
}
/* Path of a fixture file: SL_FIXTURES "/" rel, in a static rotating buffer. */
const char *fixture(const char *rel);
/* Path of one of the tool's default pipeline files (tools/pipelines/name), likewise. */
const char *tool_pipeline(const char *name);
/* The whole file (malloc'd, with a NUL after its *size bytes), or NULL. */
void *check_read_file(const char *path, size_t *size);
/* The whole file as a NUL-terminated string (malloc'd), or NULL. */
char *check_read_text(const char *path);
/* A tiny reader for the seed-model-init.json fixture: the text after `"name": {`, n numbers of the
 * list after `"key": [`, and the number after `"key": ` (a CHECK fails when a key is missing). */
const char *check_json_object(const char *json, const char *name);
void check_json_array(const char *obj, const char *key, double *out, int n);
double check_json_number(const char *obj, const char *key);
/* A pipeline made with cfg from DALI-syntax text (file names it in errors) and built; NULL with *e
 * set when creating, parsing or building fails. */
sl_pipeline *check_pipeline(const sl_pipeline_config *cfg, const char *text, const char *file,
                            int nbind, const sl_pipeline_bind *binds, sl_err *e);
/* A fresh scratch folder under the build tree for this test (created empty). */
const char *scratch_dir(const char *name);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                           \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                                    \
            fprintf(stderr, "    ");                                                               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long check_a = (long long)(a), check_b = (long long)(b);                              \
        check_count++;                                                                             \
        if (check_a != check_b)                                                                    \
            check_fail(__FILE__, __LINE__, "CHECK_EQ_INT(%s, %s): %lld != %lld", #a, #b, check_a,  \
                       check_b);                                                                   \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double check_a = (double)(a), check_b = (double)(b);                                       \
        check_count++;                                                                             \
        if (!(check_a - check_b <= (tol) && check_b - check_a <= (tol)))                           \
            check_fail(__FILE__, __LINE__, "CHECK_NEAR(%s, %s, %s): %.17g vs %.17g", #a, #b, #tol, \
                       check_a, check_b);                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *check_a = (a), *check_b = (b);                                                 \
        check_count++;                                                                             \
        if (!check_a || !check_b || strcmp(check_a, check_b) != 0)                                 \
            check_fail(__FILE__, __LINE__, "CHECK_STR(%s, %s): \"%s\" != \"%s\"", #a, #b,          \
                       check_a ? check_a : "(null)", check_b ? check_b : "(null)");                \
    } while (0)

/* The call must return SL_OK; on failure prints the status and the error message of e (may be
 * NULL). */
#define CHECK_OK(expr, e)                                                                          \
    do {                                                                                           \
        sl_status check_st = (expr);                                                               \
        check_count++;                                                                             \
        if (check_st != SL_OK)                                                                     \
            check_fail(__FILE__, __LINE__, "CHECK_OK(%s): %s: %s", #expr,                          \
                       sl_status_name(check_st), check_errmsg(e));                                 \
    } while (0)

/* The call must fail with the given status, and the message must contain `needle` (may be NULL). */
#define CHECK_FAILS(expr, status, e, needle)                                                       \
    do {                                                                                           \
        sl_status check_st = (expr);                                                               \
        check_count++;                                                                             \
        if (check_st != (status))                                                                  \
            check_fail(__FILE__, __LINE__, "CHECK_FAILS(%s): got %s, want %s (%s)", #expr,         \
                       sl_status_name(check_st), sl_status_name(status), check_errmsg(e));         \
        else if (check_needle_missing(check_errmsg(e), (needle)))                                  \
            check_fail(__FILE__, __LINE__, "CHECK_FAILS(%s): message \"%s\" lacks \"%s\"", #expr,  \
                       check_errmsg(e), (const char *)(needle));                                   \
    } while (0)

#endif
