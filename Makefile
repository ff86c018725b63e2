# Build for block-layout pNFS over an iSCSI SAN.
# One plain Makefile: each part (proto blkmap mds client tools) is a static library built from
# every .c in its folder except the files a program lists as its own (PROG_<program> below);
# objects go under $(BUILD).

BUILD   ?= build
PREFIX  ?= /usr/local
# Where mount.fuse.pnfs (a link to pnfs) goes. mount(8) looks for helpers in /sbin only: with
# PREFIX=/usr on a merged /usr that is /usr/sbin; else MOUNT_HELPER_DIR=/sbin.
MOUNT_HELPER_DIR ?= $(PREFIX)/sbin
DESTDIR ?=
CC      ?= cc
SAN     ?=

PKGS := libiscsi libtirpc lmdb cunit devmapper fuse3
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wno-format-truncation
CFLAGS  ?= -O2 -g
ALL_CFLAGS = -std=c11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -I. -I$(BUILD)/gen $(PKG_CFLAGS) \
             -MMD -MP $(SAN_FLAGS)
# rpcgen's output is not ours to restyle: same standard, warnings it is known to trigger relaxed.
GEN_CFLAGS = -std=c11 -Wall -Werror -Wno-unused-variable -Wno-unused-but-set-variable \
             $(CFLAGS) -D_GNU_SOURCE -I. -I$(BUILD)/gen $(PKG_CFLAGS) -MMD -MP $(SAN_FLAGS)
LDLIBS  = $(PKG_LIBS) -lpthread -lm

ifeq ($(SAN),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif

PARTS := proto blkmap mds client tools
# The release, from the VERSION file: `PROGRAM --version` prints it.
VERSION := $(shell cat VERSION)
# Programs: PROG_<program> lists its own sources, the entry <folder>/<name>_main.c first; they are
# linked with its part's library into $(BUILD)/bin/<program> and kept out of that library. A
# program may span several files: the pnfs command's own files are client/cli_*.c (and its
# FUSE mount, client/mount_main.c); what they call of the client is libpnfs.
PROG_blkmap       := blkmap/blkmap_main.c
PROG_pnfs-mds     := mds/mds_main.c
PROG_pnfs         := client/pnfs_main.c client/mount_main.c $(sort $(wildcard client/cli_*.c))
PROG_pnfs-extents := tools/extents_main.c
PROG_pnfs-admin   := tools/admin_main.c
PROGRAMS := $(foreach p,blkmap pnfs-mds pnfs pnfs-extents pnfs-admin,$(if $(wildcard $(firstword $(PROG_$(p)))),$(p)))
PROG_SRCS := $(foreach p,$(PROGRAMS),$(PROG_$(p)))
prog_objs = $(patsubst %.c,$(BUILD)/%.o,$(PROG_$(1)))
SCRIPTS  := san-lab vm-lab

# XDR: every proto/*.x compiles with rpcgen into $(BUILD)/gen/<name>.h and <name>_xdr.c
XDR_SRCS := $(wildcard proto/*.x)
XDR_HDRS := $(patsubst proto/%.x,$(BUILD)/gen/%.h,$(XDR_SRCS))
XDR_CSRC := $(patsubst proto/%.x,$(BUILD)/gen/%_xdr.c,$(XDR_SRCS))
XDR_OBJS := $(XDR_CSRC:.c=.o)
# Pieces a .x file #includes.
XDR_PARTS := $(wildcard proto/*.xi)

lib_srcs = $(filter-out %_main.c $(PROG_SRCS),$(wildcard $(1)/*.c))
lib_objs = $(patsubst %.c,$(BUILD)/%.o,$(call lib_srcs,$(1)))
LIB_proto  := $(BUILD)/lib/libproto.a
LIB_blkmap := $(BUILD)/lib/libblkmap.a
LIB_mds    := $(BUILD)/lib/libmds.a
LIB_client := $(BUILD)/lib/libpnfs.a
LIB_tools  := $(BUILD)/lib/libtools.a
# Link order: a part before the parts it uses.
LINK_proto  := $(LIB_proto)
LINK_blkmap := $(LIB_blkmap) $(LINK_proto)
LINK_mds    := $(LIB_mds) $(LINK_blkmap)
LINK_client := $(LIB_client) $(LINK_blkmap)
LINK_tools  := $(LIB_tools) $(LIB_client) $(LIB_mds) $(LINK_blkmap)
LINK_all    := $(LIB_tools) $(LIB_client) $(LIB_mds) $(LINK_blkmap)

# Tests: every tests/<part>/*.c goes into one CUnit runner; fuzz targets and benchmarks are apart.
TEST_SRCS  := tests/harness.c tests/oom.c tests/lab.c $(wildcard $(addprefix tests/,$(addsuffix /*.c,$(PARTS) integration kernel)))
TEST_OBJS  := $(patsubst %.c,$(BUILD)/%.o,$(TEST_SRCS))
TEST_RUNNER := $(BUILD)/bin/pnfs-tests
# Suites run in this many worker processes (most of a run waits on daemons and timeouts).
TEST_JOBS ?= 3
BENCH_LIB  := tests/bench/benchlab.c
BENCH_SRCS := $(filter-out $(BENCH_LIB),$(wildcard tests/bench/*.c))
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bin/bench-%,$(BENCH_SRCS))
FUZZ_SRCS  := $(wildcard tests/fuzz/*.c)

.PHONY: all deps test test-only asan test-oom bench demo install clean fuzz check-deps
.DEFAULT_GOAL := all

all: check-deps $(addprefix $(BUILD)/bin/,$(PROGRAMS) $(SCRIPTS)) $(TEST_RUNNER) $(BENCH_BINS)

check-deps:
	@pkg-config --exists $(PKGS) 2>/dev/null || { \
	  echo "missing build dependencies (pkg-config: $(PKGS)); run 'make deps' first" >&2; exit 1; }

deps:
	@tools/install-deps

# make test / make demo install what is missing first, then build in a fresh make so that
# pkg-config sees the newly installed packages.
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory test-only

test-only:
	@PNFS_BIN=$(CURDIR)/$(BUILD)/bin PNFS_TOP=$(CURDIR) $(TEST_RUNNER) -j $(TEST_JOBS) $(TESTS)

asan: deps
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 all
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(MAKE) --no-print-directory BUILD=build/asan SAN=1 test-only

# Allocation failures: a runner under ASan whose libraries call tests/oom.c's allocators (the
# archives' references renamed by objcopy; the code compiles as always), each unit case run once
# per allocation it makes with that one failing. Programs the cases start come from the plain build.
OOM_ALLOCS := malloc calloc realloc strdup strndup asprintf vasprintf posix_memalign aligned_alloc
OOM_TESTS  ?= proto blkmap client mds tools
OOM_CASE_SECONDS ?= 2
test-oom: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory BUILD=build/oom SAN=1 OOM=1 build/oom/bin/pnfs-tests
	@PNFS_BIN=$(CURDIR)/$(BUILD)/bin PNFS_TOP=$(CURDIR) PNFS_OOM_CASE_SECONDS=$(OOM_CASE_SECONDS) \
	  ASAN_OPTIONS=detect_leaks=1:exitcode=86:abort_on_error=0 LSAN_OPTIONS=exitcode=23 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86 \
	  build/oom/bin/pnfs-tests --oom $(or $(TESTS),$(OOM_TESTS))

bench: deps
	@$(MAKE) --no-print-directory all
	@PNFS_BIN=$(CURDIR)/$(BUILD)/bin PNFS_TOP=$(CURDIR) tests/bench/run $(BENCH)

demo: deps
	@$(MAKE) --no-print-directory all
	@PNFS_BIN=$(CURDIR)/$(BUILD)/bin PNFS_TOP=$(CURDIR) tools/demo

# libFuzzer targets need clang; they get their own object tree.
# clang does not know gcc's -Wno-format-truncation: tell it not to fail on unknown -W options.
fuzz:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang \
	  WARN="$(WARN) -Wno-unknown-warning-option" \
	  SAN_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" fuzz-bins

FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/bin/fuzz-%,$(FUZZ_SRCS))
fuzz-bins: $(FUZZ_BINS)
$(BUILD)/bin/fuzz-%: $(BUILD)/tests/fuzz/%.o $(LINK_all)
	@mkdir -p $(dir $@)
	$(CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

# --- objects -------------------------------------------------------------------------------
# rpcgen names the include guard after its output file, so write to stdout, not to "x.h.tmp".
$(BUILD)/gen/%.h: proto/%.x $(XDR_PARTS)
	@mkdir -p $(dir $@)
	rpcgen -h $< > $@.tmp && mv $@.tmp $@

# Generated sources are kept (make would delete them as intermediates and regenerate every run).
.SECONDARY: $(XDR_HDRS) $(XDR_CSRC)

$(BUILD)/gen/%_xdr.c: proto/%.x $(XDR_PARTS) $(BUILD)/gen/%.h
	@mkdir -p $(dir $@)
	cd $(BUILD)/gen && rpcgen -c -o $*_xdr.c.tmp $(CURDIR)/$< && \
	  sed -e 's|#include "$(CURDIR)/proto/$*.h"|#include "$*.h"|' $*_xdr.c.tmp > $*_xdr.c && rm -f $*_xdr.c.tmp

$(BUILD)/gen/%_xdr.o: $(BUILD)/gen/%_xdr.c
	$(CC) $(GEN_CFLAGS) -c -o $@ $<

# Every object may include a generated XDR header: generate them first.
$(BUILD)/%.o: %.c | $(XDR_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIB_proto): $(call lib_objs,proto) $(XDR_OBJS)
$(LIB_blkmap): $(call lib_objs,blkmap)
$(LIB_mds): $(call lib_objs,mds)
$(LIB_client): $(call lib_objs,client)
$(LIB_tools): $(call lib_objs,tools)
$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^$(if $(OOM), && objcopy $(foreach f,$(OOM_ALLOCS),--redefine-sym $(f)=oom_$(f)) $@)

$(BUILD)/bin/blkmap: $(call prog_objs,blkmap) $(LINK_blkmap)
$(BUILD)/bin/pnfs-mds: $(call prog_objs,pnfs-mds) $(LINK_mds)
$(BUILD)/bin/pnfs: $(call prog_objs,pnfs) $(LINK_client)
$(BUILD)/bin/pnfs-extents: $(call prog_objs,pnfs-extents) $(LINK_tools)
$(BUILD)/bin/pnfs-admin: $(call prog_objs,pnfs-admin) $(LINK_tools)
$(addprefix $(BUILD)/bin/,$(PROGRAMS)):
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bin/san-lab: tools/san-lab VERSION
	@mkdir -p $(dir $@)
	sed 's/^SAN_LAB_VERSION=.*/SAN_LAB_VERSION=$(VERSION)/' $< > $@ && chmod 755 $@

$(BUILD)/bin/vm-lab: tools/vm-lab VERSION
	@mkdir -p $(dir $@)
	sed 's/^VM_LAB_VERSION=.*/VM_LAB_VERSION=$(VERSION)/' $< > $@ && chmod 755 $@

# The version for the C programs: rewritten only when VERSION says something new.
$(BUILD)/gen/version.h: VERSION
	@mkdir -p $(dir $@)
	printf '#define PNFS_VERSION "%s"\n' '$(VERSION)' > $@
$(BUILD)/proto/log.o: $(BUILD)/gen/version.h

$(TEST_RUNNER): $(TEST_OBJS) $(LINK_all)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -Wl,--wrap=CU_assertImplementation -o $@ $(TEST_OBJS) $(LINK_all) $(LDLIBS)

BENCH_LIB_OBJS := $(BUILD)/tests/bench/benchlab.o
$(BUILD)/bin/bench-%: $(BUILD)/tests/bench/%.o $(BENCH_LIB_OBJS) $(LINK_all)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

# bench-layoutget speaks NFSv4.1 to a real pnfs-mds through the tests' client.
BENCH_NC_OBJS := $(BUILD)/tests/mds/nfsclient.o $(BUILD)/tests/mds/layout_util.o
$(BUILD)/bin/bench-layoutget: $(BUILD)/tests/bench/layoutget.o $(BENCH_LIB_OBJS) $(BENCH_NC_OBJS) $(LINK_all)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $(BUILD)/tests/bench/layoutget.o $(BENCH_LIB_OBJS) $(BENCH_NC_OBJS) $(LINK_all) $(LDLIBS)
# bench-metadata reads pnfs-mds's metrics (commits) with the tests' helper.
$(BUILD)/bin/bench-metadata: $(BUILD)/tests/bench/metadata.o $(BENCH_LIB_OBJS) $(BENCH_NC_OBJS) $(LINK_all)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $(BUILD)/tests/bench/metadata.o $(BENCH_LIB_OBJS) $(BENCH_NC_OBJS) $(LINK_all) $(LDLIBS)

# --- install -------------------------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 755 $(addprefix $(BUILD)/bin/,$(PROGRAMS) $(SCRIPTS)) $(DESTDIR)$(PREFIX)/bin/
	for m in $(wildcard docs/man/*.1); do install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man1/; done
	for m in $(wildcard docs/man/*.8); do install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man8/; done
	install -d $(DESTDIR)$(MOUNT_HELPER_DIR)
	ln -sf $(PREFIX)/bin/pnfs $(DESTDIR)$(MOUNT_HELPER_DIR)/mount.fuse.pnfs

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
