# SPDX-License-Identifier: Apache-2.0
# Thin wrapper over CMake. The README's two commands: `make demo` and `make check`.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
CMAKE_FLAGS ?=
HAVE_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo 1 || echo 0)

.PHONY: all deps build tool check layers test test-asan test-tsan demo data clean bench format python fuzz install

all: build

deps:
	@scripts/install-deps

# configure quietly, but show what was found (CUDA, nvJPEG, NCCL, MPI, libsndfile) and every error
CONFIGURE = cmake -S . -B $(1) $(2) $(CMAKE_FLAGS) > $(1).configure.log 2>&1 || \
	    { cat $(1).configure.log; exit 1; }; grep -h "sluice:" $(1).configure.log

build: deps
	@$(call CONFIGURE,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS)

# ctest over the plain build; GPU-labelled tests only where a GPU answers. glibc fills every
# allocation with a junk byte (MALLOC_PERTURB_), so a read of memory nobody wrote differs from run
# to run no more: it fails every time.
test: build
ifeq ($(HAVE_GPU),1)
	@cd $(BUILD) && MALLOC_PERTURB_=165 ctest --output-on-failure -j $(JOBS)
else
	@echo "check: no GPU here (nvidia-smi found none): skipping tests labelled 'gpu'"
	@cd $(BUILD) && MALLOC_PERTURB_=165 ctest --output-on-failure -j $(JOBS) -LE gpu
endif

# the same suite under AddressSanitizer + UBSan (CPU code; CUDA off to keep the build short)
test-asan: deps
	@$(call CONFIGURE,$(BUILD)-asan,-DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=address -DSLUICE_CUDA=OFF)
	@cmake --build $(BUILD)-asan -j $(JOBS)
	@cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:max_malloc_fill_size=1048576 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions=$(CURDIR)/fuzz/lsan.supp \
	    ctest --output-on-failure -j $(JOBS) -LE "gpu|slow"

# the thread tests under ThreadSanitizer
test-tsan: deps
	@$(call CONFIGURE,$(BUILD)-tsan,-DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=thread -DSLUICE_CUDA=OFF  -DSLUICE_MPI=OFF "-DSLUICE_TESTS_ONLY=threads;comm;pipeline;iter_release;varbatch;external_source")
	@cmake --build $(BUILD)-tsan -j $(JOBS)
	@cd $(BUILD)-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L cpu

# the fuzz harnesses (fuzz/) under libFuzzer + ASan/UBSan, FUZZ_SECONDS each (clang); findings
# go to $(BUILD)-fuzz/crashes/<harness>/, the growing corpora to $(BUILD)-fuzz/corpus/<harness>/
FUZZ_SECONDS ?= 60
fuzz: deps
	@command -v clang > /dev/null || { echo "fuzz: needs clang (apt-get install clang)"; exit 1; }
	@$(call CONFIGURE,$(BUILD)-fuzz,-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=address -DSLUICE_FUZZ=ON -DSLUICE_CUDA=OFF -DSLUICE_MPI=OFF)
	@cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzz_all
	@scripts/run-fuzz $(BUILD)-fuzz $(FUZZ_SECONDS) $(FUZZ)

# every #include points down the layers of docs/design.md ("The map"), and no file or function
# grows past its limit (scripts/check-sizes)
layers: deps
	@scripts/check-layers
	@scripts/check-layers --self-test
	@scripts/check-sizes
	@scripts/check-sizes --self-test

check: layers test test-asan test-tsan
	@echo "check: layer order, plain, ASan+UBSan and TSan suites passed"

# libsluice.so/.a, the headers, the tool, sluice.pc and sluice-static.pc, the CMake package and
# the man pages under $(PREFIX) (DESTDIR=... stages them for a package)
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

# for development: an editable install of the package (pip install -e .) into a virtual
# environment, VENV, made from $(PYTHON) with its system packages (numpy, torch) visible
# (docs/python.md, "Installing")
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
VENV ?= .venv
python: deps
	@$(PYTHON) -c "import numpy" 2> /dev/null || { echo "python: $(PYTHON) has no numpy (PYTHON=... picks another interpreter)"; exit 1; }
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv --system-site-packages $(VENV)
	@$(VENV)/bin/python -m pip install -q --no-build-isolation --no-deps -e .
	@$(VENV)/bin/python -c "import sluice; print('python: import sluice works in $(VENV) (sluice', sluice.__version__ + ';', sluice.build_info() + ')')"

# the tool alone (the demo needs nothing else: no tests, fuzz or bench programs)
tool: deps
	@$(call CONFIGURE,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target sluice_cli

data: tool
	@scripts/make-data $(BUILD)/sluice data

demo: tool data
	@$(BUILD)/sluice train --data data --devices all

bench: build
	@cmake --build $(BUILD) -j $(JOBS) --target $(patsubst bench/%.c,%,$(wildcard bench/*.c))

format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan
