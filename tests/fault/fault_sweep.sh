#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every command that writes files, run again and again with one kind of call failing
# (tests/fault/fault_shim.c, preloaded): the N-th write, pwrite, fsync, fdatasync, close, rename,
# stdio output call, fflush or allocation (malloc, calloc, realloc, posix_memalign, from main on)
# fails, for N = 1, 2, ... up to one past the last such call, where
# the fault no longer fires and the run must succeed; writes and flushes also fail from the N-th
# call on, as on a disk that stays full. The commands:
#   convert   an image folder into a new LMDB, into an LMDB folder that is there already (empty),
#             and into a TFRecord file (with its labels file) where older ones are;
#   index     a TFRecord's index over an older one;
#   wds2idx   a WebDataset tar file's index over an older one;
#   run       --dump, --trace and --checkpoint (over older ones) and --json to standard output;
#   train     --checkpoint (one file per epoch) and --metrics, two epochs;
# and the one file the library writes that the tool does not: a model, by sl_mlp_save
# (tests/fault/mlp_save.c), over an older one.
# The clean run renames no file that it did not sync first, and syncs the folder after every
# rename. For every N: the exit status is 0 or 1 (never a signal); on 1, standard error names a file
# under the output folder (or standard output) and gives the cause; on 0 the outputs are complete
# and the fault did not fire, or it failed a close that lost nothing (of a descriptor synced since
# its last write, or never written: LMDB closes its synced files unchecked, a probe that a file
# can be made closes an empty one). Every file left under the output folder, whatever the status,
# is either the one that was there before or the complete new one (byte for byte the one a clean
# run writes; the metrics file and the JSON, which hold timings, are checked for form): no half
# file, no temporary, no store that reads as valid but is cut, and a TFRecord file's class names
# (FILE.labels.txt) never go with other data than theirs. A command with more than 40 calls
# of a kind is tried at its first 20, 10 spread through the middle and its last 10; with more
# than 200 allocations, at its first 60, 40 spread through the middle and its last 20 (`run` and
# `train` make hundreds and thousands, in an order that varies with the threads). A failed
# allocation must give exit 1 with a message that says memory ran out, or complete outputs.
set -uo pipefail
tool=$(realpath "$1")
shim=${SL_FAULT_SHIM:?SL_FAULT_SHIM: the fault shim library}
: "${SL_FAULT_MLP_SAVE:?SL_FAULT_MLP_SAVE: the program tests/fault/mlp_save.c}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nfail=0
bad() {
    echo "FAIL: $*" >&2
    nfail=$((nfail + 1))
}
export OPENBLAS_NUM_THREADS=1

# inputs: an image folder of two classes, a TFRecord of it, a Caffe2 store for run and train
in=$work/in
mkdir -p "$in/imgs/cat" "$in/imgs/dog" "$in/data"
cp "$SL_FIXTURES"/dali_extra/jpeg/padlock-406986_640.jpg "$in/imgs/cat/a.jpg"
cp "$SL_FIXTURES"/dali_extra/jpeg/swan-3584559_640.jpg "$in/imgs/dog/b.jpg"
cp "$SL_FIXTURES"/dali_extra/png/cat-111793_640.png "$in/imgs/dog/c.png"
"$tool" convert --from folder --in "$in/imgs" --to tfrecord --out "$in/f.tfrecord" > /dev/null ||
    { echo "FAIL: the input TFRecord"; exit 1; }
tar -cf "$in/w.tar" -C "$in/imgs" cat/a.jpg dog/b.jpg dog/c.png ||
    { echo "FAIL: the input tar"; exit 1; }
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$in/data/training"
ln -s "$SL_FIXTURES/caffe2-fmnist-256" "$in/data/testing"
cat > "$in/p.py" << 'PY'
@data_iterator(output_map=["images", "labels"], reader_name="r")
def p(data_path, num_shards, shard_id):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="r", num_shards=num_shards,
                                      shard_id=shard_id)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.GRAY)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=[255.0], output_layout="CHW")
    return images, labels
PY

o=$work/o # the output folder of the command under test
# Each case: setup_NAME fills $o with what is there before; cmd_NAME runs the command (standard
# output to /dev/null unless it is an output under test); special_NAME FILE RC says whether a file
# that differs from the clean run's is fine (timings); verify_NAME checks the clean run's outputs.
setup_convert_lmdb() { :; }
cmd_convert_lmdb() {
    "$tool" convert --from folder --in "$in/imgs" --to caffe2 --out "$o/db" > /dev/null
}
verify_convert_lmdb() {
    "$tool" inspect --verify "$o/db" | grep "verified: caffe2, 3 records" > /dev/null
}

setup_convert_into() { mkdir "$o/there"; }
cmd_convert_into() {
    "$tool" convert --from folder --in "$in/imgs" --to caffe --out "$o/there" > /dev/null
}
verify_convert_into() {
    "$tool" inspect --verify "$o/there" | grep "verified: caffe, 3 records" > /dev/null
}

setup_convert_tfrecord() {
    echo old > "$o/f.tfrecord"
    echo old > "$o/f.tfrecord.labels.txt"
}
cmd_convert_tfrecord() {
    "$tool" convert --from folder --in "$in/imgs" --to tfrecord --out "$o/f.tfrecord" > /dev/null
}
verify_convert_tfrecord() {
    "$tool" inspect --verify "$o/f.tfrecord" | grep "verified: tfrecord, 3 records" > /dev/null
}
# the data and its class names go together: the old pair, or the new data with the new names (or
# with none, where renaming them in failed), never the new data with the old names or the reverse
pair_convert_tfrecord() {
    local d=$o/f.tfrecord l=$o/f.tfrecord.labels.txt ref=$work/ref/convert_tfrecord
    local old=$work/old/convert_tfrecord
    if cmp -s "$d" "$old/f.tfrecord"; then
        cmp -s "$l" "$old/f.tfrecord.labels.txt" || echo "the old data with new or no class names"
    elif cmp -s "$d" "$ref/f.tfrecord"; then
        [ ! -e "$l" ] || cmp -s "$l" "$ref/f.tfrecord.labels.txt" ||
            echo "the new data with the old class names"
    fi
}

setup_index() { echo old > "$o/f.idx"; }
cmd_index() { "$tool" index "$in/f.tfrecord" "$o/f.idx" > /dev/null; }
verify_index() { [ "$(wc -l < "$o/f.idx")" -eq 3 ]; }

setup_wds2idx() { echo old > "$o/w.idx"; }
cmd_wds2idx() { "$tool" wds2idx "$in/w.tar" "$o/w.idx"; }
verify_wds2idx() { [ "$(head -1 "$o/w.idx")" = "v1.2 3" ] && [ "$(wc -l < "$o/w.idx")" -eq 4 ]; }

setup_run() {
    echo old > "$o/t"
    echo old > "$o/c"
}
cmd_run() {
    "$tool" run "$in/p.py" --arg data_path="$in/data/training" --devices cpu --batch-size 8 \
        --dump "$o/d" --dump-steps 1 --trace "$o/t" --checkpoint "$o/c" --checkpoint-at 2 \
        --json > "$o/j"
}
verify_run() {
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$o/j" &&
        [ "$(grep -c $'^0\t' "$o/t")" -eq 16 ] && [ "$(ls "$o/d" | wc -l)" -eq 2 ]
}
# the JSON holds timings; the shell made the file, so a failed run may leave any part of it
special_run() {
    [ "$1" = j ] || return 1
    [ "$2" -ne 0 ] || python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$o/j"
}

setup_train() { :; }
cmd_train() {
    "$tool" train --data "$in/data" --devices cpu --hidden 16 --batch-size 64 --epochs 2 \
        --checkpoint "$o/ck{epoch}" --metrics "$o/m" > /dev/null
}
verify_train() { [ "$(wc -l < "$o/m")" -eq 2 ] && [ -f "$o/ck0" ] && [ -f "$o/ck1" ]; }
# the metrics hold timings: whole lines of epochs 0, 1, ... in order (all of them after a success)
special_train() {
    [ "$1" = m ] || return 1
    local e=0 line
    while IFS= read -r line; do
        [[ $line =~ ^\{\"epoch\":\ $e,\ \"seconds\":\ [0-9.e+-]+,\ \"samples_per_s\":\ [0-9.e+-]+,\ \"loss\":\ [0-9.e+-]+,\ \"accuracy\":\ [0-9.]+\}$ ]] ||
            return 1
        e=$((e + 1))
    done < "$o/m"
    [ -z "$(tail -c 1 "$o/m")" ] || return 1 # ends with its line's newline
    [ "$2" -ne 0 ] || [ $e -eq 2 ]
}

# the library's own model file (sl_mlp_save), over an older one
setup_mlp_save() { echo old > "$o/model"; }
cmd_mlp_save() { "$SL_FAULT_MLP_SAVE" "$o/model"; }
verify_mlp_save() { [ "$(stat -c %s "$o/model")" -gt 4000 ]; }

# what a failure's message says for each errno used
declare -A cause=([ENOSPC]="no space left on device" [EIO]="input/output error"
    [ENOMEM]="memory")
declare -A errno_of=([write]=ENOSPC [pwrite]=ENOSPC [fwrite]=ENOSPC [fflush]=ENOSPC
    [fsync]=EIO [fdatasync]=EIO [close]=EIO [rename]=EIO [alloc]=ENOMEM)

# the N to try for a kind of call made M times (allocations: every one up to 200, else 120)
pick() {
    local m=$1
    if [ "${fam:-}" = alloc ]; then
        if [ "$m" -le 200 ]; then
            seq 1 "$m"
        else
            seq 1 60
            for ((k = 1; k <= 40; k++)); do echo $((60 + k * (m - 80) / 41)); done
            seq $((m - 19)) "$m"
        fi
    elif [ "$m" -le 40 ]; then
        seq 1 "$m"
    else
        seq 1 20
        for k in 1 2 3 4 5 6 7 8 9 10; do echo $((20 + k * (m - 30) / 11)); done
        seq $((m - 9)) "$m"
    fi
}

# checks $o after a run of case $1 that exited with $2 (fault "$3" fired or not: $4)
check_tree() {
    local name=$1 rc=$2 what=$3 fired=$4 ref=$work/ref/$1 old=$work/old/$1 p
    while IFS= read -r p; do
        if [ -d "$o/$p" ] && [ ! -L "$o/$p" ]; then
            [ -d "$ref/$p" ] || [ -d "$old/$p" ] || bad "$what: a folder was left: $p"
        elif [ -f "$ref/$p" ] && cmp -s "$o/$p" "$ref/$p"; then
            :
        elif [ -f "$old/$p" ] && cmp -s "$o/$p" "$old/$p"; then
            [ "$rc" -ne 0 ] || bad "$what: exit 0, yet $p is the old file"
        elif declare -F "special_$name" > /dev/null && "special_$name" "$p" "$rc"; then
            :
        elif [ -e "$ref/$p" ] || [ -e "$old/$p" ]; then
            bad "$what: $p is neither the old file nor the complete new one ($(stat -c %s "$o/$p") bytes)"
        else
            bad "$what: left behind: $p ($(stat -c %s "$o/$p") bytes)"
        fi
    done < <(cd "$o" && find . -mindepth 1 | sed 's|^\./||' | sort)
    if declare -F "pair_$name" > /dev/null; then
        p=$("pair_$name")
        [ -z "$p" ] || bad "$what: $p"
    fi
    if [ "$rc" -eq 0 ]; then # complete: all that the clean run wrote
        while IFS= read -r p; do
            [ -e "$o/$p" ] || bad "$what: exit 0, yet $p is missing"
        done < <(cd "$ref" && find . -mindepth 1 | sed 's|^\./||')
    fi
}

# runs case $1 once with SL_FAULT=$2 (empty: none); sets rc and fired
run_once() {
    local name=$1 spec=$2
    rm -rf "$o" "$work/report" "$work/err"
    mkdir "$o"
    "setup_$name"
    rc=0
    (SL_FAULT=$spec SL_FAULT_REPORT=$work/report LD_PRELOAD=$shim "cmd_$name") \
        2> "$work/err" || rc=$?
    fired=0
    grep -q '^fired ' "$work/report" 2> /dev/null && fired=1
    return 0
}

runs=0
t0=$SECONDS
for name in convert_lmdb convert_into convert_tfrecord index wds2idx run train mlp_save; do
    # the clean run: the reference, and how many calls of each kind it makes
    rm -rf "$work/old/$name" "$work/ref/$name"
    mkdir -p "$work/old" "$work/ref" "$o" && rm -rf "$o" && mkdir "$o" && "setup_$name" &&
        cp -a "$o" "$work/old/$name"
    run_once "$name" ""
    if [ "$rc" -ne 0 ] || ! "verify_$name"; then
        bad "$name: the clean run: exit $rc: $(cat "$work/err")"
        continue
    fi
    cp -a "$o" "$work/ref/$name"
    if grep -q '^unsynced ' "$work/report"; then # a crash could leave the name to lost bytes
        bad "$name: renamed before it was synced: $(grep '^unsynced ' "$work/report")"
    fi
    if grep -q '^undurable ' "$work/report"; then # a crash could bring the old name back
        bad "$name: its folder was not synced after a rename: $(grep '^undurable ' "$work/report")"
    fi
    declare -A count=()
    while read -r kind fam n; do
        [ "$kind" = count ] && count[$fam]=$n
    done < "$work/report"
    for fam in write pwrite fsync fdatasync close rename fwrite fflush alloc; do
        m=${count[$fam]:-0}
        [ "$m" -gt 0 ] || continue
        err=${errno_of[$fam]}
        # N alone fails that call; N+ fails it and every later one (a disk that stays full)
        tries="$(pick "$m") $((m + 1))"
        # threads allocate in no fixed order: the count varies from run to run by a few
        [ "$fam" = alloc ] && tries="$(pick "$m")"
        case $fam in write | pwrite | fwrite | fflush) tries="$tries $(pick "$m" | sed 's/$/+/')" ;; esac
        for n in $tries; do
            if [ "${n%+}" != "$n" ]; then
                what="$name, $fam calls ${n%+} to $m fail ($err)"
            else
                what="$name, $fam call $n of $m fails ($err)"
            fi
            run_once "$name" "$fam:$n:$err"
            runs=$((runs + 1))
            if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
                bad "$what: exit status $rc: $(cat "$work/err")"
            elif [ "$rc" -eq 1 ]; then
                [ "$fired" -eq 1 ] || bad "$what: exit 1 with no fault: $(cat "$work/err")"
                # an allocation belongs to no file: the message says what ran out instead
                [ "$fam" = alloc ] || grep -q -e "$o" -e "standard output" "$work/err" ||
                    bad "$what: the message names no output file: $(cat "$work/err")"
                # standard output is checked once, at the end, where the cause of a write that
                # failed before is gone: "write error" is all there is to say
                grep -qi -e "${cause[$err]}" -e "standard output: write error" "$work/err" ||
                    bad "$what: the message gives no cause ('${cause[$err]}'): $(cat "$work/err")"
            elif [ "$fired" -eq 1 ] && [ "$fam" != alloc ] &&
                ! grep -q '^fired close [0-9]* synced$' "$work/report"; then
                bad "$what: the failure went unreported (exit 0)"
            fi
            if [ "$n" = $((m + 1)) ] && { [ "$fired" -eq 1 ] || [ "$rc" -ne 0 ]; }; then
                bad "$what: past the last call: fired $fired, exit $rc: $(cat "$work/err")"
            fi
            check_tree "$name" "$rc" "$what" "$fired"
        done
    done
    echo "$name: $(for f in "${!count[@]}"; do printf '%s %s, ' "$f" "${count[$f]}"; done)"
    unset count
done
echo "fault_sweep: $runs runs in $((SECONDS - t0)) s, $nfail failure(s)"
[ "$nfail" -eq 0 ]
