#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An epoch that cannot be counted is an error, not an endless run: a pipeline with two readers
# and neither reader_name nor size is refused at once (exit 1) by `sluice run`, naming both readers
# and the ways out (reader_name, --reader, --steps); --steps 5 runs exactly 5 steps, and
# --reader second counts the epoch from that reader (256 records / 4 = 64 steps).
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data="$SL_FIXTURES/caffe2-fmnist-256"
cat > "$work/two.py" <<'PY'
@pipeline_def(batch_size=4)
def p(data_path):
    a, la = fn.readers.caffe2(path=data_path, name="first")
    b, lb = fn.readers.caffe2(path=data_path, name="second")
    return la, lb
PY
rc=0
timeout 60 "$tool" run "$work/two.py" --arg data_path="$data" > /dev/null 2> "$work/e" || rc=$?
[ "$rc" -ne 124 ] || fail "ran until killed"
[ "$rc" -eq 1 ] || fail "exit $rc: $(cat "$work/e")"
for m in "'first', 'second'" reader_name "--reader NAME" "--steps N"; do
    grep -qF -- "$m" "$work/e" || fail "no '$m' in: $(cat "$work/e")"
done
steps() { python3 -c "import json,sys; print(json.load(sys.stdin)['epochs'][0]['steps'])"; }
[ "$(timeout 60 "$tool" run "$work/two.py" --arg data_path="$data" --steps 5 --json | steps)" = 5 ] ||
    fail "--steps 5"
[ "$(timeout 60 "$tool" run "$work/two.py" --arg data_path="$data" --reader second --json |
    steps)" = 64 ] || fail "--reader second"
echo "run_uncounted: all checks passed"
