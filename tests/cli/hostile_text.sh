#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A pipeline file with a NUL byte is refused, naming the line and column, by run and train.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf 'def p():\n    r = fn.readers.file(file_root="x")\n    return\0 r\n' > "$work/nul.py"
if out=$("$tool" run "$work/nul.py" 2>&1); then fail "run accepted a NUL byte: $out"; fi
case $out in *"nul.py:3:11: error: NUL byte"*) ;; *) fail "run: $out" ;; esac
if out=$("$tool" train --data "$work" --train-pipeline "$work/nul.py" 2>&1); then
    fail "train accepted a NUL byte: $out"
fi
case $out in *"nul.py:3:11: error: NUL byte"*) ;; *) fail "train: $out" ;; esac
echo ok
