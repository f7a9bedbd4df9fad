#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README's "Your own images", run as written: its sh block's commands (build/sluice being the tool
# under test; `make build` left out: the tool is built) in an empty folder, with its python block
# saved as the pipeline file the commands name. The images are the set tests/cli/make_images.py
# makes (3 classes, 32x32 to 64x64 PNGs). Checks: every command exits 0; inspect says caffe2 with
# the three class names; run lists the outputs; train prints the model line the README shows and
# its last accuracy is above chance (1/3).
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
src=${SL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}

python3 - "$src/README.md" "$work" << 'PY' || fail "README section"
import re, sys
readme, work = sys.argv[1:]
text = open(readme).read()
m = re.search(r"^## Your own images\n(.*?)^## ", text, re.S | re.M)
assert m, "no '## Your own images' section"
sec = m.group(1)
sh = re.findall(r"```sh\n(.*?)```", sec, re.S)
py = re.findall(r"```python\n(.*?)```", sec, re.S)
assert len(sh) == 1 and len(py) == 1, (len(sh), len(py))
name = re.search(r"Save the pipeline .*? as\s+`([\w.]+)`", sec, re.S)
assert name, "the section does not say what to save the pipeline as"
open("%s/%s" % (work, name.group(1)), "w").write(py[0])
cmds = [l.split("  #")[0].strip() for l in sh[0].splitlines()]
cmds = [c for c in cmds if c and c != "make build"]
open(work + "/commands", "w").write("\n".join(cmds) + "\n")
PY
[ "$(wc -l < "$work/commands")" -ge 6 ] || fail "commands: $(cat "$work/commands")"
cd "$work"
n=0
while IFS= read -r cmd; do
    n=$((n + 1))
    cmd=${cmd//build\/sluice/\"\$tool\"}
    cmd=${cmd//tests\/cli\//\"\$src\"/tests/cli/}
    eval "$cmd" > "out.$n" 2> "err.$n" || fail "$cmd: $(cat "err.$n")"
    echo "$cmd" > "cmd.$n"
done < commands
grep -l "inspect" cmd.* > /dev/null || fail "no inspect command"
for f in cmd.*; do
    k=${f#cmd.}
    case $(cat "$f") in
    *" inspect "*)
        grep -q "^format:   caffe2" "out.$k" || fail "inspect: $(cat "out.$k")"
        grep -q "0(blue):60 1(green):60 2(red):60" "out.$k" || fail "inspect: $(cat "out.$k")"
        ;;
    *" run "*)
        grep -q "images: (16, 3, 32, 32) global" "err.$k" || fail "run: $(cat "err.$k")"
        ;;
    *" train "*)
        want=$(python3 -c "
import re, sys
sec = open(sys.argv[1]).read().split('## Your own images')[1]
print(re.search(r'^model: .*$', sec, re.M).group(0))" "$src/README.md")
        grep -qxF "$want" "out.$k" || fail "train printed $(grep model: "out.$k"), README: $want"
        acc=$(grep "^Test set accuracy" "out.$k" | tail -1 | cut -d' ' -f4)
        python3 -c "import sys; sys.exit(float('$acc') <= 0.5)" || fail "accuracy $acc"
        ;;
    esac
done
echo "readme_own_images: all checks passed"
