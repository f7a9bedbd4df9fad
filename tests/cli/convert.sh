#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sluice convert + inspect on the real Fashion-MNIST: 60000 / 10000 records, 6000 / 1000 per class
# (through scripts/make-data, as `make data` runs it); a raw Caffe conversion; an image folder;
# inspect of the fixtures; errors for bad input.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SL_SOURCE_DIR/scripts/make-data" "$tool" "$work/data" > "$work/log"
json=$("$tool" inspect "$work/data/training" --json)
grep -q '"format": "caffe2"' <<< "$json" || fail "training format: $json"
grep -q '"records": 60000,' <<< "$json" || fail "training records: $json"
for c in 0 1 2 3 4 5 6 7 8 9; do
    grep -q "\"$c\": 6000[,}]" <<< "$json" || fail "training class $c: $json"
done
grep -q '"image": "jpeg", "height": 28, "width": 28, "channels": 1' <<< "$json" ||
    fail "training first records: $json"
json=$("$tool" inspect "$work/data/testing" --json)
grep -q '"records": 10000,' <<< "$json" || fail "testing records: $json"
for c in 0 1 2 3 4 5 6 7 8 9; do
    grep -q "\"$c\": 1000[,}]" <<< "$json" || fail "testing class $c: $json"
done
# a second run keeps what is there
rerun=$("$SL_SOURCE_DIR/scripts/make-data" "$tool" "$work/data")
case $rerun in *"exists, kept"*) ;; *) fail "rerun: $rerun" ;; esac

# raw Caffe records
src=/usr/share/datasets/fashion-mnist
"$tool" convert --from idx --images $src/t10k-images-idx3-ubyte.gz \
    --labels $src/t10k-labels-idx1-ubyte.gz --to caffe --raw --out "$work/raw" > /dev/null
json=$("$tool" inspect "$work/raw" --json)
grep -q '"format": "caffe", .*"records": 10000,' <<< "$json" || fail "raw caffe: $json"
grep -q '"bytes": 784, "image": "raw", "height": 28' <<< "$json" || fail "raw caffe: $json"

# an image folder (class sub-folders) -> caffe2, files stored as they are
mkdir -p "$work/imgs/cat" "$work/imgs/dog"
cp "$SL_FIXTURES"/dali_extra/jpeg/padlock-406986_640.jpg "$work/imgs/cat/a.jpg"
cp "$SL_FIXTURES"/dali_extra/jpeg/swan-3584559_640.jpg "$work/imgs/dog/b.jpg"
cp "$SL_FIXTURES"/dali_extra/png/cat-111793_640.png "$work/imgs/dog/c.png"
"$tool" convert --from folder --in "$work/imgs" --to caffe2 --out "$work/folder" > /dev/null
json=$("$tool" inspect "$work/folder" --json)
grep -q '"records": 3, "labels": {"0": 1, "1": 2}' <<< "$json" || fail "folder: $json"
json=$("$tool" inspect "$work/imgs" --json)
grep -q '"format": "folder", .*"records": 3,' <<< "$json" || fail "folder inspect: $json"
# a file with an image's name and no image in it is refused by name, and no store is written
printf '\xff\xd8\xff\xd9' > "$work/imgs/dog/d.jpg"
if "$tool" convert --from folder --in "$work/imgs" --to caffe2 --out "$work/folder2" \
    2> "$work/err"; then fail "convert of a folder with a broken image"; fi
grep -q "imgs/dog/d.jpg: not an image" "$work/err" || fail "message: $(cat "$work/err")"
[ ! -e "$work/folder2" ] || fail "a store was left after the refusal"
rm "$work/imgs/dog/d.jpg"
# an LMDB with no records: its format is "lmdb", not a guess (nor "(null)")
printf '\x00\x00\x08\x03\x00\x00\x00\x00\x00\x00\x00\x1c\x00\x00\x00\x1c' > "$work/none-images"
printf '\x00\x00\x08\x01\x00\x00\x00\x00' > "$work/none-labels"
"$tool" convert --from idx --images "$work/none-images" --labels "$work/none-labels" --to caffe2 \
    --out "$work/emptydb" > /dev/null || fail "convert of IDX files of no records"
text=$("$tool" inspect "$work/emptydb")
grep -q "^format: *lmdb$" <<< "$text" || fail "empty LMDB: $text"
grep -q "^records: *0$" <<< "$text" || fail "empty LMDB: $text"
json=$("$tool" inspect "$work/emptydb" --json)
grep -q '"format": "lmdb", .*"records": 0,' <<< "$json" || fail "empty LMDB: $json"
"$tool" inspect --verify "$work/emptydb" | grep "verified: lmdb, 0 records" > /dev/null ||
    fail "empty LMDB --verify: $("$tool" inspect --verify "$work/emptydb" 2>&1)"

# the fixtures
text=$("$tool" inspect "$SL_FIXTURES/caffe-fmnist-64")
case $text in *"format:   caffe"*) ;; *) fail "fixture caffe: $text" ;; esac
json=$("$tool" inspect "$SL_FIXTURES/caffe2-fmnist-256" --json)
grep -q '"records": 256,' <<< "$json" || fail "fixture caffe2: $json"

# errors: a message naming the path, exit status 1 or 2
if "$tool" inspect /nonexistent/x 2> "$work/err"; then fail "inspect of a missing path"; fi
grep -q "/nonexistent/x" "$work/err" || fail "message: $(cat "$work/err")"
if "$tool" convert --from idx --images /nonexistent/i --labels /nonexistent/l --to caffe2 \
    --out "$work/bad" 2> "$work/err"; then fail "convert of missing files"; fi
grep -q "/nonexistent/i" "$work/err" || fail "message: $(cat "$work/err")"
if "$tool" convert --from idx --images $src/t10k-images-idx3-ubyte.gz \
    --labels $src/t10k-labels-idx1-ubyte.gz --to caffe2 --out "$work/data/testing" 2> "$work/err"
then fail "convert over an existing LMDB"; fi
grep -q "already holds an LMDB" "$work/err" || fail "message: $(cat "$work/err")"
if "$tool" convert --from idx --to tfrecord --out x 2> /dev/null; then fail "bad --to"; fi
echo "cli convert/inspect: ok"
