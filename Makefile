# sluice: the one build entry.
#
#   make                 binaries, library, tests (build/)
#   make run             build only the sluice CLI, record a short trace, print its summary
#   make test            build and run the unit + kernel integration tests
#   make SANITIZE=address test   ASan+UBSan build in build/asan/
#   make SANITIZE=thread test    TSan build in build/tsan/
#   make CXX=clang++     build with clang 14 instead of g++ 12
#   make fuzz            libFuzzer targets (clang) in build/fuzz/, with a short smoke run
#   make bench           Google Benchmark binaries in build/bench/
#   make V=1             show full commands
#   make install         PREFIX=/usr/local DESTDIR=; make uninstall (mk/install.mk)
#   make deb             Debian package in build/deb/; make deb-check tests it (mk/deb.mk)
#   make man             man pages from the binaries' --help (mk/doc.mk)
#   make ARCH=arm64      cross-build everything for aarch64 into build/arm64/
#                        (make vm-test ARCH=arm64 runs it in an arm64 guest)
#
# Outputs live under $(BUILD_DIR) only. Header dependencies are tracked with
# -MD -MP, so touching a header (or a .proto) rebuilds what includes it.
# Jobs run on every core unless the command line says otherwise (make -j1).

.DELETE_ON_ERROR:
.SUFFIXES:
SHELL := /bin/bash
# (Not in a sub-make: it shares its parent's job server, and a -j of its own
# only makes it warn "-j2 forced in makefile: resetting jobserver mode".)
ifeq ($(filter -j%,$(MAKEFLAGS))$(MAKELEVEL),0)
  MAKEFLAGS += -j$(shell nproc)
endif

# ARCH=arm64 cross-builds every binary, the tests and the BPF objects for
# aarch64 into build/arm64/, so native and cross objects never mix: Debian's
# g++-aarch64-linux-gnu links the :arm64 libraries (multiarch; `mk/ensure-deps.sh
# arm64` installs both), while protoc and bpftool run on the host. The BPF
# programs are built for __TARGET_ARCH_arm64 against an arm64 kernel's BTF
# (mk/bpf.mk). Empty or x86_64: the native build.
ARCH ?=
ifeq ($(ARCH),arm64)
  ifneq ($(SANITIZE),)
    $(error ARCH=arm64 is built without sanitizers (SANITIZE=$(SANITIZE)))
  endif
  BUILD_DIR ?= build/arm64
  CROSS_COMPILE ?= aarch64-linux-gnu-
  CXX := $(CROSS_COMPILE)g++
  BPF_ARCH := arm64
  DEPS_SET := arm64
else ifneq ($(filter-out x86_64,$(ARCH)),)
  $(error ARCH must be x86_64 (the default) or arm64 (got '$(ARCH)'))
endif

SANITIZE ?=
ifeq ($(SANITIZE),address)
  BUILD_DIR ?= build/asan
  # -Wno-maybe-uninitialized: g++ 12 under these sanitizers warns inside
  # libstdc++'s <regex> (a std::function moved in _NFA's states), not in ours.
  SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
               -Wno-maybe-uninitialized
else ifeq ($(SANITIZE),thread)
  BUILD_DIR ?= build/tsan
  SAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
else ifeq ($(SANITIZE),fuzzer)
  BUILD_DIR ?= build/fuzz
  SAN_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
  # The fuzzers explore our parsers, not protoc's output: generated code gets
  # ASan but no coverage or UBSan, which builds it twice as fast.
  GEN_SAN_FLAGS := -fsanitize=address -fno-omit-frame-pointer
else ifneq ($(SANITIZE),)
  $(error SANITIZE must be address, thread or fuzzer (got '$(SANITIZE)'))
else
  BUILD_DIR ?= build
  SAN_FLAGS :=
endif

ifeq ($(V),1)
  Q :=
  say = @true
else
  Q := @
  say = @printf '  %-8s %s\n' '$(1)' '$(2)'
endif

CXX ?= g++
ifeq ($(origin CXX),default)
  CXX := g++
endif
CLANG ?= clang
CLANGXX ?= clang++
PROTOC ?= protoc
# DEBUG_INFO=-g1 keeps line tables only: GCC and clang emit the same code at
# every -g level, so CI builds with it and compiles about a quarter faster.
# The tests' own code (not the library they test) needs no -O2: -O1 halves
# the time of the largest test files. Benchmarks keep OPT.
DEBUG_INFO ?= -g
OPT ?= -O2 $(DEBUG_INFO)
TEST_OPT ?= -O1 $(DEBUG_INFO)

GEN_DIR := $(BUILD_DIR)/gen
OBJ_DIR := $(BUILD_DIR)/obj

# -MD, not -MMD: the generated protobuf headers come in through -isystem (their
# warnings are not ours), and -MMD leaves system headers out of the .d files,
# so an edited .proto would not rebuild the objects that include its header.
CPPFLAGS += -I. -isystem $(GEN_DIR) -MD -MP
CXXFLAGS += -std=c++20 $(OPT) -Wall -Wextra -Werror -pthread $(SAN_FLAGS)
# Generated protobuf code is not ours to fix: no -Werror there.
GEN_SAN_FLAGS ?= $(SAN_FLAGS)
GEN_CXXFLAGS := -std=c++20 $(OPT) -w -pthread $(GEN_SAN_FLAGS)
LDFLAGS += -pthread $(SAN_FLAGS)
LDLIBS += -lprotobuf -lsqlite3 -lz -lzstd
# The tests' HTTP client (tests/user/cmd/query_httpd_test.cc).
TEST_LDLIBS := -lgtest -lgtest_main -lcpp-httplib
BENCH_LDLIBS := -lbenchmark

# ---- deps ------------------------------------------------------------------
# Installs the Debian packages the build needs, once, and only the missing ones.
DEPS_SET ?= build
DEPS_STAMP := $(if $(filter arm64,$(ARCH)),$(BUILD_DIR)/.deps-ok,build/.deps-ok)
$(DEPS_STAMP): mk/ensure-deps.sh
	$(Q)bash mk/ensure-deps.sh $(DEPS_SET)
	$(Q)mkdir -p $(@D) && touch $@
deps: $(DEPS_STAMP)

# ---- protos ----------------------------------------------------------------
PROTO_SRCS := $(shell find protos -name '*.proto' 2>/dev/null | sort)
PROTO_CCS := $(PROTO_SRCS:protos/%.proto=$(GEN_DIR)/%.pb.cc)
PROTO_HS := $(PROTO_SRCS:protos/%.proto=$(GEN_DIR)/%.pb.h)
PROTO_OBJS := $(PROTO_SRCS:protos/%.proto=$(OBJ_DIR)/gen/%.pb.o)

# protoc writes every .pb.cc/.pb.h in one run, into a scratch folder; only the
# files whose text changed are copied into $(GEN_DIR), so editing or adding one
# .proto rebuilds only the objects that include what changed. The stamp stands
# for the whole set; a generated file older than the stamp is up to date (its
# text did not change), which the no-op recipe tells make without a rebuild:
# make looks at the file's time again after the recipe, finds it unchanged and
# rebuilds nothing that includes it.
PROTO_STAMP := $(GEN_DIR)/.protos
PROTO_SCRATCH := $(GEN_DIR)/.protoc-out
$(PROTO_STAMP): $(PROTO_SRCS) | $(DEPS_STAMP)
	$(call say,PROTOC,$(words $(PROTO_SRCS)) files)
	$(Q)rm -rf $(PROTO_SCRATCH) && mkdir -p $(PROTO_SCRATCH)
	$(Q)$(PROTOC) -Iprotos --cpp_out=$(PROTO_SCRATCH) $(PROTO_SRCS)
	$(Q)cd $(PROTO_SCRATCH) && find . -type f | while read -r f; do \
	  cmp -s "$$f" "$(abspath $(GEN_DIR))/$$f" || { mkdir -p "$(abspath $(GEN_DIR))/$$(dirname "$$f")" && cp "$$f" "$(abspath $(GEN_DIR))/$$f"; }; done
	$(Q)touch $(PROTO_STAMP)
$(PROTO_CCS) $(PROTO_HS): $(PROTO_STAMP)
	@:
protos: $(PROTO_STAMP)

$(OBJ_DIR)/gen/%.pb.o: $(GEN_DIR)/%.pb.cc | $(PROTO_STAMP)
	$(call say,CXX,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(CPPFLAGS) $(GEN_CXXFLAGS) -c $< -o $@

# ---- sources ---------------------------------------------------------------
# Every .cc under the source directories is part of the library, except a
# binary's main (*_main.cc), which becomes the binary named after it, and a
# plugin's sources (below).
SRC_DIRS := shm service user
ALL_SRCS := $(shell find $(SRC_DIRS) -name '*.cc' 2>/dev/null | sort)
MAIN_SRCS := $(filter %_main.cc,$(ALL_SRCS))
PLUGIN_SRCS := $(filter user/cmd/httpd/%,$(ALL_SRCS))
LIB_SRCS := $(filter-out $(MAIN_SRCS) $(PLUGIN_SRCS),$(ALL_SRCS))
LIB_OBJS := $(LIB_SRCS:%.cc=$(OBJ_DIR)/%.o)
LIB := $(BUILD_DIR)/libsluice.a
# sluice_probes_main.cc -> sluice-probes
BIN_NAME = $(subst _,-,$(patsubst %_main,%,$(basename $(notdir $(1)))))
BINS := $(foreach m,$(MAIN_SRCS),$(BUILD_DIR)/$(call BIN_NAME,$(m)))

# Tests, and the helpers they share that have a .cc (tests/**/*_test_util.cc).
TEST_SRCS := $(shell find tests -name '*_test.cc' -o -name '*_test_util.cc' 2>/dev/null | sort)
TEST_OBJS := $(TEST_SRCS:%.cc=$(OBJ_DIR)/%.o)
TEST_BIN := $(BUILD_DIR)/sluice_tests
FUZZ_SRCS := $(wildcard tests/fuzz/*_fuzzer.cc)
BENCH_SRCS := $(wildcard tests/bench/*_bench.cc)

# Area-specific rules (BPF objects and skeletons, vm-tests, ...).
-include $(sort $(wildcard mk/*.mk))

# Every C++ object may include generated headers: build them first.
$(OBJ_DIR)/%.o: %.cc | $(PROTO_STAMP) $(EXTRA_GENERATED)
	$(call say,CXX,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

# Debian builds libcpp-httplib with TLS and compression: its header must see
# the same switches (what `pkg-config --cflags cpp-httplib` says), or the
# classes it declares would not match the library's.
HTTPLIB_CPPFLAGS := -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT -DCPPHTTPLIB_BROTLI_SUPPORT
$(OBJ_DIR)/user/cmd/httpd/query_http_server.o $(OBJ_DIR)/tests/user/cmd/query_httpd_test.o: CPPFLAGS += $(HTTPLIB_CPPFLAGS)

# The HTTP server of `sluice query --httpd`, a plugin loaded when a server
# starts, so that cpp-httplib and the TLS libraries it links are not loaded
# at every start of sluice (user/cmd/httpd/query_http_server.h). It needs no
# symbol of the program that loads it: --no-undefined checks that, except in
# a sanitizer build, where the sanitizer's runtime is the program's.
QUERY_HTTPD_PLUGIN := $(BUILD_DIR)/sluice-query-httpd.so
$(PLUGIN_SRCS:%.cc=$(OBJ_DIR)/%.o): CXXFLAGS += -fPIC
$(QUERY_HTTPD_PLUGIN): $(PLUGIN_SRCS:%.cc=$(OBJ_DIR)/%.o)
	$(call say,LD,$@)
	$(Q)$(CXX) $(LDFLAGS) -shared $(if $(SAN_FLAGS),,-Wl,--no-undefined) -o $@ $^ -lcpp-httplib

$(LIB): $(LIB_OBJS) $(PROTO_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

define BIN_RULE
$(BUILD_DIR)/$(call BIN_NAME,$(1)): $(OBJ_DIR)/$(1:.cc=.o) $(LIB)
	$$(call say,LD,$$@)
	$(Q)$$(CXX) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach m,$(MAIN_SRCS),$(eval $(call BIN_RULE,$(m))))

$(TEST_OBJS): OPT = $(TEST_OPT)
$(TEST_BIN): $(TEST_OBJS) $(LIB)
	$(call say,LD,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(TEST_LDLIBS)

all: $(LIB) $(BINS) $(QUERY_HTTPD_PLUGIN) $(TEST_BIN)
.DEFAULT_GOAL := all
# The programs alone, without the test binary (what the arm64 scenarios
# without 50-kernel-tests run; .ci/run builds them beside the tests).
bins: $(BINS)

# ---- tests -----------------------------------------------------------------
# CI=true turns skips of kernel integration tests into failures
# (tests/kernel_test_util.h). GTEST_ARGS narrows a run, e.g.
# make test GTEST_ARGS=--gtest_filter='ProtoWriter*'.
GTEST_ARGS ?=
test: all
	$(Q)tests/check_test_data_tracked.sh
	$(Q)$(TEST_BIN) $(GTEST_ARGS)

# The kernel suites again from each tracefs state a machine is found in
# (docs/FTRACE_CONTROL.md, "Start states"); the state found is put back.
# START_STATES_FLAGS=-s skips the state the machine was found in when a
# `make test` from that state has just run (.ci/run).
START_STATES_FLAGS ?=
test-start-states: all
	$(Q)tests/tracefs_start_states.sh $(START_STATES_FLAGS) -b $(TEST_BIN)

# ---- run -------------------------------------------------------------------
# Builds only the sluice CLI (the test suite is built by `make test`).
RUN_OUT ?= /tmp/sluice-run.pftrace
run: $(BUILD_DIR)/sluice
	$(Q)$(BUILD_DIR)/sluice record -o $(RUN_OUT) -t 5s && $(BUILD_DIR)/sluice stats $(RUN_OUT)

# ---- fuzz ------------------------------------------------------------------
# The fuzzers and the library they test are built by clang with coverage
# instrumentation in build/fuzz/; `make fuzz` builds them all and runs each for
# a few seconds (FUZZ_SECONDS) so that CI keeps them building and alive.
FUZZ_SECONDS ?= 10
ifeq ($(SANITIZE),fuzzer)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.cc=$(BUILD_DIR)/%)
$(BUILD_DIR)/%_fuzzer: $(OBJ_DIR)/tests/fuzz/%_fuzzer.o $(LIB)
	$(call say,LD,$@)
	$(Q)$(CXX) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
# Kept, so that a second `make fuzz` does not rebuild them (pattern-rule
# intermediates are deleted otherwise).
.SECONDARY: $(FUZZ_SRCS:%.cc=$(OBJ_DIR)/%.o)
fuzz-build: $(FUZZ_BINS)
fuzz-run: fuzz-build
	$(Q)set -e; for f in $(FUZZ_BINS); do \
	  corpus=tests/fuzz/corpus/$$(basename $$f); mkdir -p $(BUILD_DIR)/corpus/$$(basename $$f); \
	  echo "  FUZZ     $$f ($(FUZZ_SECONDS)s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 $(BUILD_DIR)/corpus/$$(basename $$f) \
	     $$( [ -d $$corpus ] && echo $$corpus ) >$(BUILD_DIR)/$$(basename $$f).log 2>&1 \
	     || { tail -40 $(BUILD_DIR)/$$(basename $$f).log; exit 1; }; \
	done
else
# fuzz-build alone lets .ci/run build the fuzzers beside the tests, and run
# them later (make fuzz then only runs them).
fuzz fuzz-build: | $(DEPS_STAMP)
	$(Q)$(MAKE) --no-print-directory SANITIZE=fuzzer CXX=$(CLANGXX) $(if $(filter fuzz,$@),fuzz-run,fuzz-build)
endif

# ---- bench -----------------------------------------------------------------
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.cc=$(BUILD_DIR)/bench/%)
$(BUILD_DIR)/bench/%: $(OBJ_DIR)/tests/bench/%.o $(LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(BENCH_LDLIBS)
bench: $(BENCH_BINS)

clean:
	rm -rf build

.PHONY: all bins deps protos test test-start-states run fuzz fuzz-build fuzz-run bench clean

-include $(shell find $(OBJ_DIR) -name '*.d' 2>/dev/null)
