#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file the project wrote carries its licence line (scripts/spdx --check: C, CUDA,
# headers, Python, shell, CMake; tests/fixtures/ keep their own licences, listed in NOTICE), and
# the licence files are there: LICENSE (Apache-2.0) and NOTICE.
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
"$SL_SOURCE_DIR/scripts/spdx" --check "$SL_SOURCE_DIR" || fail "files without the licence line (above)"
grep -q 'Apache License' "$SL_SOURCE_DIR/LICENSE" && grep -q 'Version 2.0, January 2004' "$SL_SOURCE_DIR/LICENSE" ||
    fail "LICENSE is not the Apache License 2.0"
grep -q '^Copyright 2026 The sluice Authors$' "$SL_SOURCE_DIR/NOTICE" || fail "NOTICE lacks the copyright line"
for d in "$SL_SOURCE_DIR"/tests/fixtures/*/; do
    name=$(basename "$d")
    grep -q "tests/fixtures/$name/" "$SL_SOURCE_DIR/NOTICE" || fail "NOTICE does not list tests/fixtures/$name/"
done
echo "spdx: ok"
