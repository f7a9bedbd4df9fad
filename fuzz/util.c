/* Temporary files for the harnesses whose entry point reads a file. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

const char *fuzz_dir(void) {
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/sluice-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) abort();
    }
    return dir;
}

const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    if (size && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return NULL;
    }
    return fclose(f) == 0 ? path : NULL;
}
