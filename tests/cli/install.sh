#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cmake --install into a temporary prefix puts there what a C library ships -- libsluice.so.0.1.0
# with its SONAME and links, libsluice.a, include/sluice/*.h, the sluice tool, sluice.pc, the CMake
# package, LICENSE and NOTICE, the man pages where the build made them -- and examples/ builds out
# of tree against it, the ways examples/train_on_own_data.c's header and the README show:
# pkg-config's sluice with libsluice.so, sluice-static with libsluice.a (the program needs no
# libsluice.so, readelf and ldd say), find_package(sluice) with each; every program runs. libsluice.so exports no sl__ internal; `sluice --version`, version.h, sluice.pc and
# the CMake package give one version; find_package refuses another minor version and a component
# the build lacks. DESTDIR stages an install without changing the prefix it records. The Python
# package finds the installed library through the dynamic loader's path.
set -euo pipefail
tool=$1
build=$(cd "$(dirname "$tool")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
p=$work/prefix
cmake --install "$build" --prefix "$p" > "$work/install.log" || fail "install: $(cat "$work/install.log")"
lib=$p/lib
[ -d "$lib" ] || lib=$(dirname "$(find "$p" -name libsluice.a)")

# (a) the files
for f in bin/sluice include/sluice/sluice.h include/sluice/version.h share/doc/sluice/LICENSE \
    share/doc/sluice/NOTICE; do
    [ -f "$p/$f" ] || fail "not installed: $f"
done
for f in libsluice.a libsluice.so.0.1.0 pkgconfig/sluice.pc pkgconfig/sluice-static.pc \
    cmake/sluice/sluiceConfig.cmake \
    cmake/sluice/sluiceConfigVersion.cmake; do
    [ -f "$lib/$f" ] || fail "not installed: $lib/$f"
done
[ "$(readlink "$lib/libsluice.so")" = libsluice.so.0 ] || fail "libsluice.so -> $(readlink "$lib/libsluice.so")"
[ "$(readlink "$lib/libsluice.so.0")" = libsluice.so.0.1.0 ] || fail "libsluice.so.0 -> $(readlink "$lib/libsluice.so.0")"
grep -q 'SONAME.*\[libsluice\.so\.0\]' < <(readelf -d "$lib/libsluice.so.0.1.0") || fail "SONAME"
headers=$(cd "$SL_SOURCE_DIR/include/sluice" && ls ./*.h ./*.h.in | sed 's|^\./||; s|\.in$||' | sort)
[ "$(cd "$p/include/sluice" && ls | sort)" = "$headers" ] ||
    fail "headers: $(ls "$p/include/sluice"), not $headers"
if [ -f "$build/man/sluice.1" ]; then
    for page in "$build"/man/*.1; do
        [ -f "$p/share/man/man1/$(basename "$page")" ] || fail "man page not installed: $page"
    done
    [ "$(ls "$p/share/man/man1")" = "$(cd "$build/man" && ls ./*.1 | sed 's|^\./||')" ] ||
        fail "man1 holds $(ls "$p/share/man/man1")"
    grep -q '^\.TH SLUICE-CONVERT ' "$p/share/man/man1/sluice-convert.1" || fail "sluice-convert.1"
fi

# (b) the public API only
nm -D --defined-only "$lib/libsluice.so" | awk '{print $NF}' > "$work/exported"
grep -E '^sl__' "$work/exported" && fail "libsluice.so exports internals (above)"
grep -q '^sl_version_string$' "$work/exported" || fail "sl_version_string not exported"

# (c) one version
hv=$(sed -n 's/^#define SLUICE_VERSION_STRING "\(.*\)"$/\1/p' "$p/include/sluice/version.h")
[ "$hv" = 0.1.0 ] || fail "version.h: '$hv'"
"$p/bin/sluice" --version > "$work/version"
[ "$(head -n 1 "$work/version")" = "sluice $hv" ] || fail "sluice --version: $(cat "$work/version")"
grep -qE '^commit: [0-9A-Za-z._+-]+$' "$work/version" ||
    fail "commit line: $(cat "$work/version")"
grep -q '^built with: .*libspng' "$work/version" || fail "built with: $(cat "$work/version")"
"$p/bin/sluice" version | cmp -s - "$work/version" || fail "sluice version differs from --version"
export PKG_CONFIG_PATH=$lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
[ "$(pkg-config --modversion sluice)" = "$hv" ] || fail "sluice.pc: $(pkg-config --modversion sluice)"
[ "$(pkg-config --modversion sluice-static)" = "$hv" ] ||
    fail "sluice-static.pc: $(pkg-config --modversion sluice-static)"
grep -q "^prefix=$p\$" "$lib/pkgconfig/sluice.pc" || fail "sluice.pc's prefix: $(grep prefix= "$lib/pkgconfig/sluice.pc")"
grep -q "set(PACKAGE_VERSION \"$hv\")" "$lib/cmake/sluice/sluiceConfigVersion.cmake" ||
    fail "sluiceConfigVersion.cmake: $(grep 'PACKAGE_VERSION "' "$lib/cmake/sluice/sluiceConfigVersion.cmake")"

# (d) the example, with pkg-config: libsluice.so, then libsluice.a (the header's commands)
ex=$SL_SOURCE_DIR/examples/train_on_own_data.c
grep -qF 'cc -std=c11 train_on_own_data.c $(pkg-config --cflags --libs sluice) -o train_on_own_data' "$ex" ||
    fail "the example's header no longer shows the shared command this test runs"
grep -qF 'cc -std=c11 train_on_own_data.c $(pkg-config --cflags --libs sluice-static) -o train_on_own_data' "$ex" ||
    fail "the example's header no longer shows the static command this test runs"
runs() { # program: trains to the example's accuracy
    "$1" > "$work/out" || fail "$1 exited $?: $(tail -n 3 "$work/out")"
    [ "$(grep -c '^epoch ' "$work/out")" -ge 2 ] || fail "$1's output: $(cat "$work/out")"
}
(cd "$work" && cc -std=c11 "$ex" $(pkg-config --cflags --libs sluice) -o train_shared) ||
    fail "pkg-config (shared) build"
grep -q 'NEEDED.*\[libsluice\.so\.0\]' < <(readelf -d "$work/train_shared") || fail "train_shared does not need libsluice.so.0"
LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} runs "$work/train_shared"
(cd "$work" && cc -std=c11 "$ex" $(pkg-config --cflags --libs sluice-static) -o train_static) ||
    fail "pkg-config sluice-static build"
# the folders of the libraries under it (CUDA's, say) may not be the loader's
deps=$(pkg-config --libs-only-L sluice-static | sed 's/-L//g; s/ \+/:/g; s/:$//')
static_ok() { # program: needs no libsluice.so (its dynamic section, and what the loader maps), runs
    if grep libsluice < <(readelf -d "$1") > /dev/null; then fail "$1 needs libsluice.so"; fi
    LD_LIBRARY_PATH=$lib:$deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$1" > "$work/ldd" ||
        fail "ldd $1"
    if grep libsluice "$work/ldd" > /dev/null; then fail "$1 loads $(grep libsluice "$work/ldd")"; fi
    LD_LIBRARY_PATH=$lib:$deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} runs "$1"
}
static_ok "$work/train_static"
# the README's two lines, as written there (prog.c: the example), with libsluice.so beside the
# archive and on the loader's path
grep -E '^cc prog\.c \$\(pkg-config [^)]*\) +# linked with libsluice\.(so|a)$' \
    "$SL_SOURCE_DIR/README.md" > "$work/readme_cc" || fail "the README shows no link lines"
[ "$(wc -l < "$work/readme_cc")" = 2 ] || fail "the README's link lines: $(cat "$work/readme_cc")"
while read -r line; do
    cmd=${line%%#*}
    (cd "$work" && eval "${cmd/prog.c/\"\$ex\"} -o readme_prog") || fail "the README's '$cmd'"
    case $line in
    *libsluice.a) static_ok "$work/readme_prog" ;;
    *) grep 'NEEDED.*\[libsluice\.so\.0\]' < <(readelf -d "$work/readme_prog") > /dev/null ||
        fail "'$cmd' does not link libsluice.so"
        LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} runs "$work/readme_prog" ;;
    esac
done < "$work/readme_cc"

# (e) with CMake: find_package(sluice 0.1 REQUIRED), sluice::sluice and sluice::sluice_static
cmake -S "$SL_SOURCE_DIR/examples" -B "$work/ex" -DCMAKE_PREFIX_PATH="$p" > "$work/cmake.log" 2>&1 &&
    cmake --build "$work/ex" > "$work/cmake.log" 2>&1 || fail "CMake build: $(cat "$work/cmake.log")"
grep -q 'NEEDED.*\[libsluice\.so\.0\]' < <(readelf -d "$work/ex/train_on_own_data") ||
    fail "the CMake build does not link libsluice.so.0"
runs "$work/ex/train_on_own_data"
cmake -S "$SL_SOURCE_DIR/examples" -B "$work/ex-static" -DCMAKE_PREFIX_PATH="$p" -DSLUICE_STATIC=ON \
    > "$work/cmake.log" 2>&1 && cmake --build "$work/ex-static" > "$work/cmake.log" 2>&1 ||
    fail "CMake static build: $(cat "$work/cmake.log")"
grep -q libsluice < <(readelf -d "$work/ex-static/train_on_own_data") && fail "the static CMake build needs libsluice.so"
runs "$work/ex-static/train_on_own_data"

# (f) what find_package refuses: another minor version, a component the build lacks
without=$(sed -n 's/^built with: .*; without \(.*\)$/\1/p' "$work/version" | tr -d ,)
with=$(sed -n 's/^built with: \([^;]*\).*$/\1/p' "$work/version" | grep -oE '\b(CUDA|nvJPEG|NCCL|MPI)\b' | sort -u | tr '\n' ' ')
mkdir -p "$work/probe"
cat > "$work/probe/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(probe LANGUAGES C)
find_package(sluice 0.2 QUIET)
message(STATUS "probe 0.2: \${sluice_FOUND}")
find_package(sluice 0.1 QUIET COMPONENTS $with)
message(STATUS "probe with [$with]: \${sluice_FOUND}")
foreach(c $without)
  find_package(sluice 0.1 QUIET COMPONENTS \${c})
  message(STATUS "probe without \${c}: \${sluice_FOUND}")
endforeach()
CMAKE
cmake -S "$work/probe" -B "$work/probe/b" -DCMAKE_PREFIX_PATH="$p" > "$work/probe.log" 2>&1 ||
    fail "probe: $(cat "$work/probe.log")"
grep -q 'probe 0.2: 0' "$work/probe.log" || fail "find_package(sluice 0.2) accepted 0.1: $(grep probe "$work/probe.log")"
grep -q "probe with \[$with\]: 1" "$work/probe.log" || fail "components [$with]: $(grep probe "$work/probe.log")"
for c in $without; do
    grep -q "probe without $c: 0" "$work/probe.log" || fail "component $c accepted: $(grep probe "$work/probe.log")"
done

# (g) DESTDIR: the files under it, the recorded prefix the one asked for
DESTDIR=$work/stage cmake --install "$build" --prefix /opt/sluice > /dev/null
pc=$(find "$work/stage/opt/sluice" -name sluice.pc)
[ -n "$pc" ] && grep -q '^prefix=/opt/sluice$' "$pc" || fail "DESTDIR install: $(find "$work/stage" | head)"
# (h) the Python package, copied away from the source tree, finds the installed library through
# the dynamic loader's path (no SLUICE_LIBRARY, no build/ beside it)
if [ -x /usr/bin/python3 ]; then
    mkdir -p "$work/py"
    cp -r "$SL_SOURCE_DIR/python/sluice" "$work/py/"
    rm -rf "$work/py/sluice/_lib"
    got=$(cd "$work" && env -u SLUICE_LIBRARY PYTHONPATH="$work/py" LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        /usr/bin/python3 -c 'import sluice, sluice._c as c; print(c.lib._name, sluice.__version__)') ||
        fail "python with the installed library: $got"
    case $got in libsluice.so.0*" 0.1.0") ;; *) fail "python loaded: $got" ;; esac
fi
echo "install: ok (with [$with], without [$without])"
