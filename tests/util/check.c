/* SPDX-License-Identifier: Apache-2.0 */
/* Test harness state and helpers (see check.h). */
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int check_failures;
int check_count;

void check_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    check_failures++;
}

int check_done(void) {
    if (check_failures) {
        fprintf(stderr, "%d of %d checks failed\n", check_failures, check_count);
        return 1;
    }
    printf("all %d checks passed\n", check_count);
    return 0;
}

const char *fixture(const char *rel) {
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    const char *root = getenv("SL_FIXTURES");
    snprintf(b, 1024, "%s/%s", root && *root ? root : SL_FIXTURES, rel);
    return b;
}

const char *tool_pipeline(const char *name) {
    static char bufs[4][1024];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, 1024, "%s/tools/pipelines/%s", SL_SOURCE_DIR, name);
    return b;
}

const char *scratch_dir(const char *name) {
    static char bufs[4][1024];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, 1024, "%s/scratch/%s", SL_BUILD_DIR, name);
    char cmd[2 * 1024 + 64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", b, b);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not prepare %s\n", b);
    return b;
}

const char *check_errmsg(const void *e) {
    return e ? ((const sl_err *)e)->msg : "";
}

int check_needle_missing(const char *msg, const char *needle) {
    return needle && !strstr(msg, needle);
}

void *check_read_file(const char *path, size_t *size) {
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0', *size = (size_t)n;
    fclose(f);
    return s;
}

char *check_read_text(const char *path) {
    size_t n;
    return check_read_file(path, &n);
}

sl_pipeline *check_pipeline(const sl_pipeline_config *cfg, const char *text, const char *file,
                            int nbind, const sl_pipeline_bind *binds, sl_err *e) {
    sl_pipeline *p = NULL;
    if (sl_pipeline_create(cfg, &p, e)) return NULL;
    if (sl_pipeline_parse(p, text, file, nbind, binds, e)) {
        sl_pipeline_free(p);
        return NULL;
    }
    if (sl_pipeline_build(p)) {
        sl_err_set(e, sl_pipeline_status(p), "%s", sl_pipeline_errmsg(p));
        sl_pipeline_free(p);
        return NULL;
    }
    return p;
}

const char *check_json_object(const char *json, const char *name) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": {", name);
    return strstr(json, pat);
}

void check_json_array(const char *obj, const char *key, double *out, int n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *p = strstr(obj, pat);
    CHECK(p != NULL);
    if (!p) return;
    p += strlen(pat);
    for (int i = 0; i < n; i++) {
        char *end;
        out[i] = strtod(p, &end);
        p = end + 1; /* skip ',' */
    }
}

double check_json_number(const char *obj, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(obj, pat);
    CHECK(p != NULL);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}
