#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The progress line (tools/progress.c), with stderr on a pseudo-terminal and stdout on a pipe:
#  - convert (60000 Fashion-MNIST records): "convert [===...] done/total records  R records/s",
#    each draw starting with a carriage return, the last one 60000/60000 and ending the line; at
#    most four draws a second, and more than one when the command ran for over 1.5 s; standard
#    output byte for byte what it is without a terminal;
#  - a narrow terminal (40 columns) gets lines that fit in it;
#  - train and run: "Epoch 0 [" lines counting steps, ending at the epoch's step count;
#  - SLUICE_NO_PROGRESS=1 on a terminal, and stderr into a pipe or a file: no progress at all.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
src=/usr/share/datasets/fashion-mnist

# onterm.py COLS OUTDIR CMD...: runs CMD with stderr on a terminal of COLS columns, stdout on a
# pipe; writes OUTDIR/out, OUTDIR/err and OUTDIR/secs; exits with CMD's status
cat > "$work/onterm.py" << 'PY'
import fcntl, os, pty, struct, subprocess, sys, termios, time
cols, outdir, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
attrs = termios.tcgetattr(slave)
attrs[1] &= ~termios.ONLCR  # the bytes as written, no \n -> \r\n
termios.tcsetattr(slave, termios.TCSANOW, attrs)
t0 = time.monotonic()
p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
os.close(slave)
err = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: the last writer closed the terminal
        break
    if not chunk:
        break
    err += chunk
out = p.stdout.read()
rc = p.wait()
open(os.path.join(outdir, "out"), "wb").write(out)
open(os.path.join(outdir, "err"), "wb").write(err)
open(os.path.join(outdir, "secs"), "w").write("%.3f" % (time.monotonic() - t0))
sys.exit(rc)
PY
# check.py DIR LABEL UNIT TOTAL [COLS]: the progress lines of DIR/err
cat > "$work/check.py" << 'PY'
import re, sys
d, label, unit, total = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cols = int(sys.argv[5]) if len(sys.argv) > 5 else 0
err = open(d + "/err", "rb").read().decode()
secs = float(open(d + "/secs").read())
def fail(m):
    sys.exit("FAIL: %s: %r" % (m, err))
lines = [l for l in err.split("\n") if l.startswith("\r" + label)]
if len(lines) != 1:
    fail("%d progress lines for %s, not 1" % (len(lines), label))
draws = lines[0].split("\r")[1:]
if not all(x.rstrip(" ").startswith(label) for x in draws):
    fail("a draw that is not the progress line")
if len(draws) > 4 * secs + 2:
    fail("%d draws in %.2f s: more than four a second" % (len(draws), secs))
if secs > 1.5 and label == "convert" and len(draws) < 2:
    fail("one draw in %.2f s: not redrawn" % secs)
last = draws[-1].rstrip(" ")
if not re.search(r" %d/%d %s( |$)" % (total, total, unit), last):
    fail("the last draw does not reach %d/%d %s" % (total, total, unit))
for x in draws:
    m = re.search(r" (\d+)/%d %s(  [0-9.]+ %s/s)?" % (total, unit, unit), x)
    if not m or int(m.group(1)) > total:
        fail("a draw without done/total: %r" % x)
    if cols and len(x) >= cols:
        fail("a draw of %d characters on a terminal of %d columns" % (len(x), cols))
if cols == 0 and "/s" not in last:
    fail("no rate on the last draw")
PY
onterm() { python3 "$work/onterm.py" "$@"; }
# convert: on a terminal, and into a pipe
mkdir -p "$work/c" "$work/n" "$work/narrow"
onterm 100 "$work/c" "$tool" convert --from idx --images $src/train-images-idx3-ubyte.gz \
    --labels $src/train-labels-idx1-ubyte.gz --to caffe2 --out "$work/db" ||
    fail "convert on a terminal: $(cat "$work/c/err")"
python3 "$work/check.py" "$work/c" convert records 60000
rm -rf "$work/db"
"$tool" convert --from idx --images $src/train-images-idx3-ubyte.gz \
    --labels $src/train-labels-idx1-ubyte.gz --to caffe2 --out "$work/db" > "$work/pipe.out" \
    2> >(cat > "$work/pipe.err")
wait
cmp -s "$work/c/out" "$work/pipe.out" || fail "stdout differs on a terminal: $(cat "$work/c/out")"
[ ! -s "$work/pipe.err" ] || fail "stderr into a pipe: $(od -c "$work/pipe.err" | head -5)"
rm -rf "$work/db"

# a narrow terminal
onterm 40 "$work/narrow" "$tool" convert --from idx --images $src/train-images-idx3-ubyte.gz \
    --labels $src/train-labels-idx1-ubyte.gz --to caffe2 --out "$work/db" ||
    fail "convert on a narrow terminal"
python3 "$work/check.py" "$work/narrow" convert records 60000 40
rm -rf "$work/db"

# SLUICE_NO_PROGRESS on a terminal
SLUICE_NO_PROGRESS=1 onterm 100 "$work/n" "$tool" convert --from idx \
    --images $src/t10k-images-idx3-ubyte.gz --labels $src/t10k-labels-idx1-ubyte.gz --to caffe2 \
    --out "$work/db" || fail "convert with SLUICE_NO_PROGRESS"
[ ! -s "$work/n/err" ] || fail "SLUICE_NO_PROGRESS=1: $(od -c "$work/n/err" | head -5)"

# train and run count the steps of each epoch: 10000 records of batch 500, 20 steps
mkdir -p "$work/data" "$work/t" "$work/r"
mv "$work/db" "$work/data/training"
cp -r "$work/data/training" "$work/data/testing"
onterm 100 "$work/t" "$tool" train --data "$work/data" --devices cpu --epochs 1 --batch-size 500 \
    --hidden 16 || fail "train on a terminal: $(cat "$work/t/err")"
python3 "$work/check.py" "$work/t" "Epoch 0" steps 20
grep "^Epoch 0: " "$work/t/out" > /dev/null || fail "train's epoch line: $(cat "$work/t/out")"
cat > "$work/p.py" << 'PY'
@pipeline_def(batch_size=500)
def p(data_path):
    jpegs, labels = fn.readers.caffe2(path=data_path, name="r")
    return fn.decoders.image(jpegs, output_type=types.GRAY), labels
PY
onterm 100 "$work/r" "$tool" run "$work/p.py" --arg data_path="$work/data/testing" --devices cpu \
    --epochs 2 || fail "run on a terminal: $(cat "$work/r/err")"
python3 "$work/check.py" "$work/r" "Epoch 0" steps 20
python3 "$work/check.py" "$work/r" "Epoch 1" steps 20
"$tool" run "$work/p.py" --arg data_path="$work/data/testing" --devices cpu 2>&1 |
    cat > "$work/r.pipe"
if grep $'\r' "$work/r.pipe" > /dev/null; then fail "run into a pipe: $(cat "$work/r.pipe")"; fi
echo "progress: all checks passed"
