#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every flag a command parses is in its --help: for each command `sluice --help` lists, the
# "--flag" string literals of tools/cmd_<command>.c (what its parser compares arguments with, or its
# option table holds) must each appear in `sluice <command> --help` (and main.c's in `sluice
# --help`), and a command parsed by tools/options.c's sl_cli_parse_options takes the flags of its
# shared table too; --help itself aside.
# And `sluice convert --help` names every store format that --to takes: the formats of its refusal
# of an unknown one, on each of its usage lines.
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
tools=$SL_SOURCE_DIR/tools

flags() { # the "--flag" literals of a source file, one a line
    grep -oE '"--[a-z0-9][a-z0-9-]*"' "$1" | tr -d '"' | grep -vx -- --help | sort -u
}
# the shared table's flags: its entries' first fields
shared=$(sed -n '/^static const sl_cli_option shared\[\]/,/^};/p' "$tools/options.c" |
    grep -oE '^ *\{"--[a-z0-9-]+"' | grep -oE -- '--[a-z0-9-]+')
[ "$(wc -w <<< "$shared")" -ge 5 ] || fail "tools/options.c: no shared option table found"
"$tool" --help > "$work/main.help"
commands=$(sed -n 's/^  \([a-z][a-z0-9]*\) .*/\1/p' "$work/main.help")
[ "$(wc -w <<< "$commands")" -ge 7 ] || fail "sluice --help lists: $commands"
check() { # check HELPFILE SOURCE NAME
    local n=0
    for f in $(flags "$2"); do
        n=$((n + 1))
        grep -E -- "(^|[^a-z0-9-])$f([^a-z0-9-]|\$)" "$1" > /dev/null ||
            fail "$3 parses $f but its --help does not name it"
    done
    echo "$3: $n flags, all in --help"
}
for c in $commands; do
    [ -f "$tools/cmd_$c.c" ] || fail "no tools/cmd_$c.c for the command $c"
    "$tool" "$c" --help > "$work/$c.help" || fail "sluice $c --help exited $?"
    [ -s "$work/$c.help" ] || fail "sluice $c --help printed nothing"
    check "$work/$c.help" "$tools/cmd_$c.c" "$c"
    if grep -F "sl_cli_parse_options(" "$tools/cmd_$c.c" > /dev/null; then
        for f in $shared; do
            grep -E -- "(^|[^a-z0-9-])$f([^a-z0-9-]|\$)" "$work/$c.help" > /dev/null ||
                fail "$c takes the shared $f but its --help does not name it"
        done
        echo "$c: the $(wc -w <<< "$shared") shared flags, all in --help"
    fi
done
check "$work/main.help" "$tools/main.c" sluice
# the parsers are in those files: no other file of tools/ compares an argument with a flag
for f in "$tools"/*.c; do
    case $(basename "$f") in cmd_*.c | main.c | options.c) continue ;; esac
    if grep -E 'strn?cmp\([a-z_]+, "--' "$f" > /dev/null; then fail "$f parses flags"; fi
done

# convert --to: every format it takes, on each usage line
rc=0
"$tool" convert --from idx --images x --labels y --to nosuch --out "$work/o" 2> "$work/err" || rc=$?
[ $rc -ne 0 ] || fail "convert --to nosuch was taken"
formats=$(sed -n "s/.*--to must be \(.*\), not 'nosuch'.*/\1/p" "$work/err" | sed 's/,\| or / /g')
[ "$(wc -w <<< "$formats")" -ge 3 ] || fail "the refusal names no formats: $(cat "$work/err")"
grep -- "--to " "$work/convert.help" > "$work/to_lines"
[ "$(wc -l < "$work/to_lines")" -ge 2 ] || fail "convert --help: $(cat "$work/convert.help")"
while read -r line; do
    alts=$(sed 's/.*--to \([a-z0-9|]*\).*/\1/' <<< "$line" | tr '|' ' ')
    for fmt in $formats; do
        grep -w -- "$fmt" <<< "$alts" > /dev/null ||
            fail "convert --help offers --to $alts, not $fmt: $line"
    done
done < "$work/to_lines"
echo "help_flags: all checks passed"
