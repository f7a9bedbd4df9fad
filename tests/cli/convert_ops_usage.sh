#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Asking the tool what it takes: `sluice convert` with flags missing names each missing flag with
# its choices (exit 2); `sluice ops --names` prints the operator names one a line (the ones the
# full listing has); `sluice ops readers` / `decoders` list the operators whose names start with
# "readers." / "decoders." and no other; `--names` with a group; an exact name still shows that
# op; a name that is neither an op nor a group is an error naming it.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0; "$tool" convert 2> "$work/err" || rc=$?
[ $rc -eq 2 ] || fail "convert with nothing: exit $rc"
for w in "--from idx|folder" "--to caffe2|caffe|tfrecord" "--out PATH"; do
    grep -qF -- "$w" "$work/err" || fail "convert with nothing does not name '$w': $(cat "$work/err")"
done
rc=0; "$tool" convert --to caffe2 --out "$work/x" 2> "$work/err" || rc=$?
[ $rc -eq 2 ] || fail "convert without --from: exit $rc"
grep -qF "missing --from idx|folder" "$work/err" || fail "without --from: $(cat "$work/err")"
grep -qF -- "--to caffe2" "$work/err" && fail "names --to though given: $(cat "$work/err")"
grep -qF -- "--in DIR" "$work/err" || fail "without --from: no word of --in: $(cat "$work/err")"

"$tool" ops > "$work/all.txt"
grep -E '^[a-z0-9_.]+  \(devices: ' "$work/all.txt" | sed 's/  (devices:.*//' > "$work/want"
"$tool" ops --names > "$work/names"
cmp -s "$work/names" "$work/want" || fail "ops --names: $(diff "$work/names" "$work/want" | head)"
for g in readers decoders; do
    "$tool" ops $g > "$work/$g.txt"
    grep -E '^[a-z0-9_.]+  \(devices: ' "$work/$g.txt" | sed 's/  (devices:.*//' > "$work/$g.got"
    grep "^$g\." "$work/want" > "$work/$g.want"
    [ -s "$work/$g.want" ] || fail "no $g in the listing"
    cmp -s "$work/$g.got" "$work/$g.want" || fail "ops $g: $(cat "$work/$g.got")"
    "$tool" ops --names $g > "$work/$g.names"
    cmp -s "$work/$g.names" "$work/$g.want" || fail "ops --names $g: $(cat "$work/$g.names")"
done
grep -q '^readers.file  (devices' "$work/readers.txt" || fail "readers.file not among readers"
"$tool" ops readers.caffe2 > "$work/one.txt"
[ "$(grep -cE '^[a-z0-9_.]+  \(devices: ' "$work/one.txt")" -eq 1 ] || fail "ops readers.caffe2"
grep -q '^readers.caffe2  (devices' "$work/one.txt" || fail "ops readers.caffe2: $(head -2 "$work/one.txt")"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); n=[o["name"] for o in d["ops"]]; assert n and all(x.startswith("readers.") for x in n), n' \
    <("$tool" ops readers --json) || fail "ops readers --json"
if "$tool" ops nosuchthing 2> "$work/err"; then fail "ops nosuchthing"; fi
grep -q "nosuchthing" "$work/err" || fail "message: $(cat "$work/err")"
echo "cli convert/ops usage: ok"
