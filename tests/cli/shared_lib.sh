#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libsluice.so (next to the tool): it exports the public API and nothing else -- every function
# the headers in include/sluice/ declare, no sl__ internal, no other symbol -- and a program built
# against the headers and the .so alone runs a pipeline from text over the LMDB fixture.
set -euo pipefail
tool=$1
lib=$(cd "$(dirname "$tool")" && pwd)
so=$lib/libsluice.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -e "$so" ] || fail "no $so"
grep -q 'SONAME.*\[libsluice\.so\.0\]' < <(readelf -d "$so") || fail "soname: $(readelf -d "$so" | grep SONAME)"

# (a) what it exports: sl_ names only (the linker's own markers aside), never sl__
nm -D --defined-only "$so" | awk '{print $NF}' | sort -u > "$work/exported"
grep -E '^sl__' "$work/exported" && fail "internal symbols exported (above)"
grep -vE '^sl_[a-z0-9]' "$work/exported" | grep -vxE '_init|_fini|_edata|_end|__bss_start' &&
    fail "symbols other than the public API exported (above)"

# (b) exactly the functions the public headers declare: a declaration starts a line (its return
# type first) and names sl_...( before any other parenthesis; static inline ones are in the header
# itself
grep -hE '^[A-Za-z]' "$SL_SOURCE_DIR"/include/sluice/*.h "$lib"/include/sluice/*.h | grep -v '^static inline' |
    grep -oE '^[^(]*\bsl_[a-z0-9_]*[[:space:]]*\(' | grep -oE 'sl_[a-z0-9_]*[[:space:]]*\($' |
    sed 's/[[:space:]]*($//' | sort -u > "$work/declared"
[ "$(wc -l < "$work/declared")" -gt 100 ] || fail "found only $(wc -l < "$work/declared") declarations"
missing=$(comm -23 "$work/declared" "$work/exported")
[ -z "$missing" ] || fail "declared but not exported: $missing"
extra=$(comm -13 "$work/declared" "$work/exported")
[ -z "$extra" ] || fail "exported but not declared in include/sluice/: $extra"

# (c) a program against the headers and the .so alone (no libsluice.a, no src/)
cat > "$work/prog.c" <<'C'
#include <sluice/ops.h>
#include <sluice/pipeline.h>
#include <sluice/sluice.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2 || strcmp(sl_version_string(), SLUICE_VERSION_STRING) || sl_op_count() < 30) return 10;
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = 8;
    cfg.num_threads = 1;
    cfg.prefetch_cpu = 1;
    sl_pipeline *p;
    sl_err err;
    if (sl_pipeline_create(&cfg, &p, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    const char *text = "def pipe(data_path):\n"
                       "    jpegs, labels = fn.readers.caffe2(path=data_path)\n"
                       "    images = fn.decoders.image(jpegs, output_type=types.GRAY)\n"
                       "    return images, labels\n";
    sl_pipeline_bind bind = {"data_path", argv[1]};
    if (sl_pipeline_parse(p, text, "prog.py", 1, &bind, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    if (sl_pipeline_build(p)) return fprintf(stderr, "%s\n", sl_pipeline_errmsg(p)), 1;
    sl_batch *b;
    if (sl_pipeline_next(p, &b)) return fprintf(stderr, "%s\n", sl_pipeline_errmsg(p)), 1;
    sl_tensor images;
    if (sl_batch_tensor(b, 0, &images, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    printf("%s %d %lld %lld %lld %lld %s\n", sl_pipeline_output_name(p, 0), images.ndim,
           (long long)images.shape[0], (long long)images.shape[1], (long long)images.shape[2],
           (long long)images.shape[3], sl_batch_key(b, 0));
    sl_pipeline_release(p, b);
    sl_pipeline_free(p);
    return 0;
}
C
cc -std=c11 -Wall -Wextra -Werror -I"$SL_SOURCE_DIR/include" -I"$lib/include" "$work/prog.c" -o "$work/prog" \
    -L"$lib" -l:libsluice.so -Wl,-rpath,"$lib" || fail "building against libsluice.so"
grep -q 'NEEDED.*\[libsluice\.so\.0\]' < <(readelf -d "$work/prog") || fail "prog does not need libsluice.so.0"
out=$("$work/prog" "$SL_FIXTURES/caffe2-fmnist-256") || fail "prog: $out"
[[ $out == "images 4 8 28 28 1 "* ]] || fail "prog's batch: $out"
echo "shared_lib: ok ($(wc -l < "$work/exported") symbols)"
