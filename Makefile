# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# make            build/tracekit (dynamically linked), libtracekit (.a, .so, tracekit.pc)
#                 and the test programs
# make static     build/tracekit-static (one statically linked file)
# make test       install what the tests need, build, run every test tier
# make check      build, run the unit tests and their sanitizer builds only (the fast loop)
# make install    install into PREFIX (default /usr/local), under DESTDIR if given
# make uninstall  remove what make install put there
# make bench      time the user-space tables on synthetic input (tests/bench/)
# make V=1        show every command
# make ARCH=arm64 the arm64 cross build, into build/arm64/ (its own objects, skeletons and
#                 BPF objects; never mixed with the x86 ones): tracekit-static, the preload
#                 libraries, libtracekit (.a, .so). tools/install-deps.sh --arm64 installs
#                 the cross compiler and the arm64 libraries (make ARCH=arm64 deps).
#
# A BPF capability NAME is bpf/NAME.bpf.c + bpf/NAME.h + its loader user/STAGE/NAME.c: add
# NAME to BPF_APPS and the skeleton and its object follow (every library object waits for
# the skeletons, which are generated headers).

BPF_APPS := core_probe cpu_sample cpu_follow alloc_trace alloc_trace_sess alloc_trace_kctx numa_trace \
	unwind_check stacks_iter

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
# The architecture built for, by the kernel's name for it (the name of its vmlinux/ header,
# of -D__TARGET_ARCH_ that libbpf's bpf_tracing.h reads, of bpf/arch_*.h). x86 builds into
# build/ and skeletons/ as always; another into build/ARCH/, skeletons included, with
# Debian's cross compiler (CROSS_COMPILE) and the ARCH libraries of the multiarch tree.
# := and not ?=: an ARCH in the environment (a kernel build's) does not change this one.
ARCH := x86
ARCHES := x86 arm64
ifeq ($(filter $(ARCH),$(ARCHES)),)
$(error ARCH=$(ARCH): unknown (known: $(ARCHES)))
endif
VERSION := 0.1.0
VERSION_PARTS := $(subst ., ,$(VERSION))
MAJOR := $(word 1,$(VERSION_PARTS))
MINOR := $(word 2,$(VERSION_PARTS))
PATCH := $(word 3,$(VERSION_PARTS))

ifeq ($(ARCH),x86)
BUILD := build
SKEL := skeletons
else
BUILD := build/$(ARCH)
SKEL := $(BUILD)/skeletons
endif
OBJ := $(BUILD)/obj
# The other architectures' build folders, inside x86's (build/ARCH): x86 never reads their .d
OTHER_BUILDS := $(if $(filter x86,$(ARCH)),$(patsubst %,$(BUILD)/%,$(filter-out x86,$(ARCHES))))
ifeq ($(ARCH),arm64)
CROSS_COMPILE ?= aarch64-linux-gnu-
CLANG_TARGET := --target=aarch64-linux-gnu
# what the command line does not name: the cross compiler (make's default CC is cc)
ifeq ($(origin CC),default)
CC := $(CROSS_COMPILE)gcc
endif
endif

# Where `make install` puts things (DESTDIR, if given, is prepended to each). Debian's
# multiarch library directory: $(CC) -print-multiarch says which (aarch64-linux-gnu for the
# cross compiler of ARCH=arm64; a compiler that cannot say gets x86_64-linux-gnu).
PREFIX := /usr/local
MULTIARCH := $(or $(shell $(CC) -print-multiarch 2>/dev/null),x86_64-linux-gnu)
BINDIR = $(PREFIX)/bin
LIBDIR = $(PREFIX)/lib/$(MULTIARCH)
INCLUDEDIR = $(PREFIX)/include
MANDIR = $(PREFIX)/share/man
BASHCOMPDIR = $(PREFIX)/share/bash-completion/completions
PKGCONFIGDIR = $(LIBDIR)/pkgconfig
# libtkalloc.so and libtkagent.so: a directory of tracekit's own, not on the loader's path
PRELOAD_DIR = $(LIBDIR)/tracekit
DOCDIR = $(PREFIX)/share/doc/tracekit

CFLAGS ?= -g -O2
# snprintf truncation is deliberate in fixed-size report fields
WARN := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Wno-format-truncation -Werror
# user/STAGE/x.h is included as "STAGE/x.h", bpf/x.h as "bpf/x.h", the public headers as
# "tracekit/x.h" (include/)
CPPFLAGS := -D_GNU_SOURCE -DTRACEKIT_VERSION='"$(VERSION)"' -I. -Iuser -Iinclude -I$(SKEL) \
	-Itools -Itests/lib
ALL_CFLAGS = -std=gnu11 $(CFLAGS) $(WARN) $(CPPFLAGS) -MMD -MP
# libstdc++: its C++ ABI demangler names C++ functions. libdw (CFI for the unwind tables)
# builds on libelf, so it comes first; statically it also needs what its decompressors use
# (lzma, bz2; zlib and zstd libelf needs too).
LIBS := -lbpf -ldw -lelf -lz -lnuma -lm -lstdc++
STATIC_LIBS := -l:libbpf.a -l:libdw.a -l:libelf.a -l:liblzma.a -l:libbz2.a -l:libz.a \
	-l:libzstd.a -l:libnuma.a -lpthread -lm -lstdc++

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf \
	-Wall -Werror -MMD -MP

LIB_SRCS := $(sort $(wildcard user/*/*.c))
LIB_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(LIB_SRCS))
LIB := $(BUILD)/libtracekit.a
# The shared library: the same sources compiled again as PIC (the objects above are PIE,
# for the programs), exporting the functions the public headers declare and nothing else
# ($(BUILD)/libtracekit.map, made from them by tools/gen-exports.sh: the tk_ functions the
# modules share stay local), linked against the shared libbpf, libdw, libelf... so none of
# theirs is re-exported.
PIC_OBJ := $(BUILD)/pic
PIC_LIB_OBJS := $(patsubst %.c,$(PIC_OBJ)/%.o,$(LIB_SRCS))
SONAME := libtracekit.so.$(MAJOR)
SHLIB := $(BUILD)/libtracekit.so.$(MAJOR).$(MINOR).$(PATCH)
SHLIB_LINKS := $(BUILD)/$(SONAME) $(BUILD)/libtracekit.so
PC := $(BUILD)/tracekit.pc
# Man pages: tools/man/NAME.8.scd → build/man/NAME.8. scdoc, because it is one small C
# program in Debian (the scdoc package) and needs no toolchain (pandoc pulls in Haskell,
# asciidoctor Ruby), its source is plain text that reads well in review, and its output
# is clean man(7).
MAN_SRCS := $(sort $(wildcard tools/man/*.8.scd))
MANPAGES := $(patsubst tools/man/%.scd,$(BUILD)/man/%,$(MAN_SRCS))
SCDOC ?= scdoc
SKELS := $(patsubst %,$(SKEL)/%.skel.h,$(BPF_APPS))

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
INTEG_SRCS := $(sort $(wildcard tests/integration/test_*.c))
INTEG_BINS := $(patsubst tests/integration/%.c,$(BUILD)/tests/integration/%,$(INTEG_SRCS))
TEST_HELPER_SRCS := $(sort $(wildcard tests/lib/*.c))
TEST_HELPER_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(TEST_HELPER_SRCS))
WORKLOAD_SRCS := $(sort $(wildcard tests/workloads/*.c))
WORKLOAD_CXX_SRCS := $(sort $(wildcard tests/workloads/*.cc))
WORKLOADS := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(WORKLOAD_SRCS)) \
	$(patsubst tests/workloads/%.cc,$(BUILD)/workloads/%,$(WORKLOAD_CXX_SRCS))
WORKLOAD_LIBS := $(patsubst tests/workloads/lib/%.c,$(BUILD)/workloads/lib%.so,\
	$(sort $(wildcard tests/workloads/lib/*.c)))
# docs/examples/NAME.c → build/examples/NAME, built against the public headers only
EXAMPLES := $(patsubst docs/examples/%.c,$(BUILD)/examples/%,$(sort $(wildcard docs/examples/*.c)))
PUBLIC_HEADERS := $(sort $(wildcard include/tracekit/*.h))

BENCH_SRCS := $(sort $(wildcard tests/bench/bench_*.c))
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZERS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
# Libraries `tracekit alloc -- CMD` preloads: preload/NAME.c → build/libNAME.so, next to
# build/tracekit. They run inside the command: they link no libtracekit, only libc.
PRELOAD_SRCS := $(sort $(wildcard preload/*.c))
PRELOADS := $(patsubst preload/%.c,$(BUILD)/lib%.so,$(PRELOAD_SRCS))

# The same library and unit tests once more under AddressSanitizer and UBSan.
# clang 14 does not know -Wno-format-truncation
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	-Wno-unknown-warning-option
SAN_OBJ := $(BUILD)/san
SAN_LIB_OBJS := $(patsubst %.c,$(SAN_OBJ)/%.o,$(LIB_SRCS))
SAN_HELPER_OBJS := $(patsubst %.c,$(SAN_OBJ)/%.o,$(TEST_HELPER_SRCS))
SAN_UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit-san/%,$(UNIT_SRCS))
FUZZ_OBJ := $(BUILD)/fuzzobj
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_OBJ)/%.o,$(LIB_SRCS))

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all static guest tests test check bench deps clean fuzz vmlinux run vmtest install uninstall FORCE

ifeq ($(ARCH),x86)
all: $(BUILD)/tracekit $(PRELOADS) $(SHLIB_LINKS) $(PC) $(MANPAGES) tests
else
# A cross build: what runs on the target. Not the dynamic tracekit (its HTTP server,
# libmicrohttpd, would pull gnutls's arm64 -dev tree in), not the tests (nothing here runs
# them: the arm64 guests run tracekit-static and static workloads).
all: $(BUILD)/tracekit-static $(PRELOADS) $(LIB) $(SHLIB_LINKS) $(PC)
endif

# the benchmark programs are built with the tests (not run): an API change that breaks them
# shows at once
tests: $(UNIT_BINS) $(SAN_UNIT_BINS) $(INTEG_BINS) $(WORKLOAD_LIBS) $(WORKLOADS) $(FUZZERS) \
	$(EXAMPLES) $(BUILD)/examples/headers.ok $(BENCH_BINS)

static: $(BUILD)/tracekit-static

# What a guest of the kernel matrix runs (tests/vm/matrix.sh): tracekit-static and the
# workloads, all statically linked; with ARCH=arm64 BUILD=build/arm64, the arm64 guests'.
GUEST_WORKLOADS := $(patsubst %,$(BUILD)/workloads/%,alloc_leak_static cpu_split_static \
	cpu_offcpu_static cpu_offcpu_span_static unw_chain_static stacks_shape_static numa_balance \
	numa_move)
guest: $(BUILD)/tracekit-static $(GUEST_WORKLOADS)

# What runs here, or installs, is for this machine's architecture: a cross build stops at
# once with why, rather than running tests it did not build or installing x86's names.
ifneq ($(ARCH),x86)
test check run vmtest install uninstall bench fuzz tests: cross-refuse
endif
.PHONY: cross-refuse
cross-refuse:
	@echo "make $(MAKECMDGOALS): not with ARCH=$(ARCH), a cross build (make ARCH=$(ARCH) builds" \
		"$(BUILD)/ for an $(ARCH) host; README, Building)" >&2; exit 2

deps:
	$(Q)tools/install-deps.sh $(if $(filter-out x86,$(ARCH)),--$(ARCH))

# The README's first command: the capability report of this machine, a CPU profile of a
# bundled workload whose answer is known (hot 75 %, cold 25 % under main → caller).
# Then who leaks: 64 MiB leaked from leak_site() beside churn that frees at once.
run: deps
	$(Q)$(MAKE) --no-print-directory $(BUILD)/tracekit $(PRELOADS) $(BUILD)/workloads/cpu_split \
		$(BUILD)/workloads/alloc_leak
	$(Q)$(BUILD)/tracekit caps
	@echo
	@echo '$$ tracekit cpu -F 499 -- $(BUILD)/workloads/cpu_split 3'
	$(Q)$(BUILD)/tracekit cpu -F 499 -- $(BUILD)/workloads/cpu_split 3
	@echo
	@echo '$$ tracekit alloc -- $(BUILD)/workloads/alloc_leak -d 2 --leak-bytes 67108864'
	$(Q)$(BUILD)/tracekit alloc -- $(BUILD)/workloads/alloc_leak -d 2 --leak-bytes 67108864

# The README's test command: install (the arm64 compiler, libraries and QEMU too), build
# this architecture's tree and what the arm64 guests of the kernel matrix run, run every
# tier, print a summary.
test: deps
	$(Q)tools/install-deps.sh --arm64
	$(Q)$(MAKE) --no-print-directory all static
	$(Q)$(MAKE) --no-print-directory ARCH=arm64 BUILD=$(BUILD)/arm64 guest
	$(Q)TK_BUILD_DIR=$(BUILD) tests/run.sh

# The fast loop while changing code: the unit tests and their sanitizer builds, with no
# package installs, no QEMU guests, no fuzzing (about a minute here from a built tree).
check:
	$(Q)$(MAKE) --no-print-directory all
	$(Q)TK_BUILD_DIR=$(BUILD) TK_TIERS="unit san" tests/run.sh

# The kernel matrix alone (tests/vm/matrix.sh; `make test` runs it as its vm tier): every
# collector on this kernel, then in two-node QEMU guests on Debian's 5.10, 6.1, 6.12 and sid's newest kernels,
# x86-64 and arm64 (the arm64 guests run what make ARCH=arm64 BUILD=build/arm64 guest builds).
VM_WORKLOADS := $(patsubst %,$(BUILD)/workloads/%,cpu_split alloc_leak cpu_split_static unw_chain \
	unw_chain_static stacks_shape_static \
	alloc_leak_static numa_balance $(if $(wildcard tests/workloads/numa_move.c),numa_move))
vmtest: deps
	$(Q)tools/install-deps.sh --arm64
	$(Q)$(MAKE) --no-print-directory $(BUILD)/tracekit $(PRELOADS) static $(VM_WORKLOADS) guest
	$(Q)$(MAKE) --no-print-directory ARCH=arm64 BUILD=$(BUILD)/arm64 guest
	$(Q)TK_BUILD_DIR=$(BUILD) tests/vm/matrix.sh

# vmlinux/x86/vmlinux.h from this machine's kernel; with ARCH=arm64 vmlinux/arm64/vmlinux.h
# from Debian's arm64 cloud kernel image (downloaded, never installed: the script says how)
vmlinux:
	$(Q)tools/gen-vmlinux-h.sh $(if $(filter-out x86,$(ARCH)),--arch $(ARCH))

# What the build writes the install directories into (tracekit.pc, the preload directory
# compiled into libtracekit) depends on this file, which changes only when they do: `make
# install PREFIX=/usr` after `make` rebuilds those few files and nothing else.
INSTALL_CONFIG := $(BUILD)/install-config
INSTALL_CONFIG_NOW := VERSION=$(VERSION) PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) \
	INCLUDEDIR=$(INCLUDEDIR) PRELOAD_DIR=$(PRELOAD_DIR) BINDIR=$(BINDIR) DOCDIR=$(DOCDIR)
$(INSTALL_CONFIG): FORCE | $(OBJ)
	$(Q)if [ "$$(cat $@ 2>/dev/null)" != '$(INSTALL_CONFIG_NOW)' ]; then \
		printf '%s\n' '$(INSTALL_CONFIG_NOW)' > $@; fi

# The preload libraries' installed directory, compiled into the allocation sessions
# (user/alloc/alloc_command.c, tk_alloc__find_preload_dir), absolute and relative to the
# executable's parent directory (PREFIX/bin/.. → lib/MULTIARCH/tracekit, which holds in a
# DESTDIR stage too).
# The sanitizer and fuzz builds are never installed: their objects do not wait for it.
PRELOAD_REL = $(patsubst $(patsubst %/,%,$(dir $(BINDIR)))/%,%,$(PRELOAD_DIR))
ALLOC_SESSION_OBJS := $(foreach d,$(OBJ) $(PIC_OBJ) $(SAN_OBJ) $(FUZZ_OBJ),\
	$(d)/user/alloc/alloc_command.o)
$(ALLOC_SESSION_OBJS): CPPFLAGS += -DTK_PRELOAD_DIR='"$(PRELOAD_DIR)"' \
	-DTK_PRELOAD_REL='"$(PRELOAD_REL)"'
$(OBJ)/user/alloc/alloc_command.o $(PIC_OBJ)/user/alloc/alloc_command.o: $(INSTALL_CONFIG)

# --- install -----------------------------------------------------------------------
# tracekit goes to bin, not sbin, though it is mostly run as root and its pages are in
# section 8 (system administration): 'tracekit caps' is meant to be run by anyone (it
# says, unprivileged, what is missing), CAP_BPF + CAP_PERFMON let a user who is not root
# run every command, and Debian's PATH for users has no sbin. perf is in /usr/bin for the
# same reason; bpftool, which can do nothing unprivileged, is in /usr/sbin.
#
# The public headers stand alone (include/tracekit/*.h, checked by headers.ok): they go
# to include/tracekit/ and nothing else does.
DOCS := $(sort $(wildcard docs/*.md))
COMPLETION := tools/completion/tracekit
INSTALL := install

install: $(BUILD)/tracekit $(PRELOADS) $(LIB) $(SHLIB_LINKS) $(PC) $(MANPAGES)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -D -m 0755 $(BUILD)/tracekit $(DESTDIR)$(BINDIR)/tracekit
	$(Q)$(INSTALL) -D -m 0644 $(SHLIB) $(DESTDIR)$(LIBDIR)/$(notdir $(SHLIB))
	$(Q)ln -sf $(notdir $(SHLIB)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	$(Q)ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libtracekit.so
	$(Q)$(INSTALL) -D -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/libtracekit.a
	$(Q)$(INSTALL) -D -m 0644 $(PC) $(DESTDIR)$(PKGCONFIGDIR)/tracekit.pc
	$(Q)$(INSTALL) -D -m 0644 -t $(DESTDIR)$(PRELOAD_DIR) $(PRELOADS)
	$(Q)$(INSTALL) -D -m 0644 -t $(DESTDIR)$(INCLUDEDIR)/tracekit $(PUBLIC_HEADERS)
	$(Q)$(INSTALL) -D -m 0644 -t $(DESTDIR)$(MANDIR)/man8 $(MANPAGES)
	$(Q)$(INSTALL) -D -m 0644 $(COMPLETION) $(DESTDIR)$(BASHCOMPDIR)/tracekit
	$(Q)$(INSTALL) -D -m 0644 -t $(DESTDIR)$(DOCDIR) $(DOCS)

# Only what install puts there; the directories that are tracekit's own go whole.
uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(DESTDIR)$(BINDIR)/tracekit $(DESTDIR)$(LIBDIR)/$(notdir $(SHLIB)) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libtracekit.so \
		$(DESTDIR)$(LIBDIR)/libtracekit.a $(DESTDIR)$(PKGCONFIGDIR)/tracekit.pc \
		$(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MANPAGES))) \
		$(DESTDIR)$(BASHCOMPDIR)/tracekit
	$(Q)rm -rf $(DESTDIR)$(PRELOAD_DIR) $(DESTDIR)$(INCLUDEDIR)/tracekit $(DESTDIR)$(DOCDIR)

# Not a test: numbers to compare before and after a change, on an otherwise idle machine.
bench: $(BENCH_BINS)
	$(Q)for b in $(BENCH_BINS); do $$b || exit 1; done

# --- BPF: object -> linked object -> skeleton --------------------------------
$(BUILD)/bpf/%.tmp.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(BUILD)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -c $< -o $@

$(BUILD)/bpf/%.bpf.o: $(BUILD)/bpf/%.tmp.bpf.o
	$(call msg,GEN-OBJ,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

# Every BPF header too: x86's skeletons live outside build/, and with build/ removed (its
# dependency files with it) make would otherwise keep a skeleton older than a header its
# object includes.
$(SKEL)/%.skel.h: $(BUILD)/bpf/%.bpf.o $(wildcard bpf/*.h) | $(SKEL)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

# Skeletons are generated headers: every library object waits for them (order only; the
# dependency files name the skeleton each object really includes).
$(LIB_OBJS) $(PIC_LIB_OBJS) $(SAN_LIB_OBJS) $(FUZZ_LIB_OBJS) \
	$(patsubst %.c,$(OBJ)/%.o,$(INTEG_SRCS)): | $(SKELS)

# --- user space -----------------------------------------------------------
$(OBJ)/%.o: %.c | $(OBJ)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(PIC_OBJ)/%.o: %.c | $(OBJ)
	$(call msg,CC-PIC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@

# -z defs: every symbol the library uses comes from itself or a library it names
$(BUILD)/libtracekit.map: $(PUBLIC_HEADERS) tools/gen-exports.sh | $(OBJ)
	$(call msg,GEN,$@)
	$(Q)tools/gen-exports.sh $(PUBLIC_HEADERS) > $@

$(SHLIB): $(PIC_LIB_OBJS) $(BUILD)/libtracekit.map
	$(call msg,LINK-SO,$@)
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=$(BUILD)/libtracekit.map \
		-Wl,-z,defs -Wl,--as-needed $(PIC_LIB_OBJS) $(LIBS) -o $@

# libtracekit.so → libtracekit.so.0 → libtracekit.so.0.1.0, as Debian lays them out
$(BUILD)/$(SONAME): $(SHLIB)
	$(call msg,LN,$@)
	$(Q)ln -sf $(notdir $<) $@
$(BUILD)/libtracekit.so: $(BUILD)/$(SONAME)
	$(call msg,LN,$@)
	$(Q)ln -sf $(notdir $<) $@

# tracekit.pc: libdir and includedir as ${prefix}/... when under PREFIX (so
# pkg-config --define-prefix can relocate it)
$(PC): user/tracekit.pc.in $(INSTALL_CONFIG)
	$(call msg,GEN,$@)
	$(Q)sed -e '/^#/d' -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
		-e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|g' \
		-e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|g' $< > $@

# The pages name the installed directories (FILES) and carry the version; their date is
# their source's last commit, so the same source gives the same page.
$(BUILD)/man/%.8: tools/man/%.8.scd $(INSTALL_CONFIG)
	$(call msg,SCDOC,$@)
	$(Q)command -v $(SCDOC) >/dev/null || { echo "$(SCDOC) not found: apt-get install scdoc" \
		"(tools/install-deps.sh)" >&2; exit 1; }
	$(Q)mkdir -p $(@D)
	$(Q)sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@PRELOAD_DIR@|$(PRELOAD_DIR)|g' \
		-e 's|@PRELOAD_REL@|$(PRELOAD_REL)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' $< | \
		SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct -- $< 2>/dev/null | grep . || \
		date +%s) $(SCDOC) > $@ || { echo "$<: scdoc failed (the line is the source's)" >&2; \
		exit 1; }

SERVE_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(sort $(wildcard tools/serve/*.c)))
TOOL_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(sort $(wildcard tools/*.c))) $(SERVE_OBJS)
# `tracekit serve` is libmicrohttpd's HTTP server: the dynamic binary only, loaded by dlopen
# when serve starts (tools/serve/serve_mhd.c), so no other command maps gnutls. A static
# libmicrohttpd would pull in gnutls and its crypto stack for nothing served over TLS here;
# tracekit-static says so instead (tools/static/serve_none.c). serve is tools/serve/.
STATIC_TOOL_OBJS := $(filter-out $(SERVE_OBJS),$(TOOL_OBJS)) $(OBJ)/tools/static/serve_none.o

$(BUILD)/tracekit: $(TOOL_OBJS) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBS) -o $@

$(BUILD)/tracekit-static: $(STATIC_TOOL_OBJS) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -static $^ $(STATIC_LIBS) -o $@

$(BUILD)/tests/unit/%: $(OBJ)/tests/unit/%.o $(TEST_HELPER_OBJS) $(LIB)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -lcmocka $(LIBS) -o $@

$(BUILD)/tests/integration/%: $(OBJ)/tests/integration/%.o $(TEST_HELPER_OBJS) $(LIB)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -lcmocka $(LIBS) -o $@

# --- the API's example programs (docs/examples/): only the public headers, as an embedder
$(BUILD)/examples/%: docs/examples/%.c $(LIB) $(PUBLIC_HEADERS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 $(CFLAGS) $(WARN) -Iinclude $< $(LIB) $(LIBS) -o $@
# every public header stands alone, in C and in C++
$(BUILD)/examples/headers.ok: $(PUBLIC_HEADERS)
	$(call msg,HEADERS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)for h in $(PUBLIC_HEADERS); do \
		echo "#include \"$${h#include/}\"" | $(CC) -std=c99 -Wall -Werror -Iinclude \
			-fsyntax-only -x c - || exit 1; \
		echo "#include \"$${h#include/}\"" | $(CLANG)++ -Wall -Werror -Iinclude \
			-fsyntax-only -x c++ - || exit 1; \
	done
	$(Q)touch $@

$(BUILD)/bench/%: $(OBJ)/tests/bench/%.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBS) -o $@

# --- preloaded libraries ------------------------------------------------------
# The markers' uprobes walk frame pointers from the marker's entry: every function that calls
# a marker keeps its frame pointer. The fast paths call nothing but jump (musttail) to the
# allocator or to their slow path, so they need no frame (-momit-leaf-frame-pointer), and the
# slow path's frame sits right under the allocation's caller (preload/tkalloc.c).
# clang for musttail. -fno-builtin: no malloc+memset turned into a call of calloc in calloc.
PRELOAD_CFLAGS := -std=gnu11 -g -O2 -fPIC -fvisibility=hidden -fno-builtin \
	-fno-omit-frame-pointer -momit-leaf-frame-pointer \
	$(WARN) -D_GNU_SOURCE -Iuser -Ipreload -MMD -MP
$(PRELOADS): $(BUILD)/lib%.so: preload/%.c | $(OBJ)
	$(call msg,CC-SO,$@)
	$(Q)$(CLANG) $(CLANG_TARGET) $(PRELOAD_CFLAGS) -Wno-unknown-warning-option -MF $@.d -shared $< \
		-Wl,-z,defs -Wl,-z,now -Wl,--as-needed -ldl -lpthread -lm -o $@
# test_preload runs preload_check under both libraries, and checks counts with libm
$(BUILD)/tests/unit/test_preload $(BUILD)/tests/unit-san/test_preload: | $(PRELOADS) \
	$(BUILD)/workloads/preload_check
$(BUILD)/tests/unit/test_preload $(BUILD)/tests/unit-san/test_preload: LIBS += -lm

# --- sanitizers --------------------------------------------------------------
$(SAN_OBJ)/%.o: %.c | $(OBJ)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(ALL_CFLAGS) $(SAN) -c $< -o $@

$(BUILD)/tests/unit-san/%: $(SAN_OBJ)/tests/unit/%.o $(SAN_HELPER_OBJS) $(SAN_LIB_OBJS)
	$(call msg,LINK-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) $(SAN) $^ -lcmocka $(LIBS) -o $@

# --- fuzz targets (libFuzzer) -----------------------------------------------
$(FUZZ_OBJ)/%.o: %.c | $(OBJ)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(ALL_CFLAGS) $(SAN) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/%: $(FUZZ_OBJ)/tests/fuzz/%.o $(FUZZ_LIB_OBJS)
	$(call msg,LINK-FZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) $(SAN) -fsanitize=fuzzer $^ $(LIBS) -o $@

fuzz: $(FUZZERS)

# --- workloads: small programs with known behaviour --------------------------
WORKLOAD_CFLAGS := -g -O2 -Wall -Werror -D_GNU_SOURCE
# Per-workload compiler and flags: WORKLOAD_CC_NAME, WORKLOAD_CFLAGS_NAME, WORKLOAD_LIBS_NAME.
include tests/workloads/flags.mk
$(BUILD)/workloads/%: tests/workloads/%.c | $(OBJ)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(if $(WORKLOAD_CC_$*),$(WORKLOAD_CC_$*) $(CLANG_TARGET),$(CC)) $(WORKLOAD_CFLAGS) \
		$(WORKLOAD_CFLAGS_$*) -MMD -MP -MF $@.d $< $(WORKLOAD_LIBS_$*) -o $@

$(BUILD)/workloads/%: tests/workloads/%.cc | $(OBJ)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG)++ $(CLANG_TARGET) -g -O2 -Wall -Werror $(WORKLOAD_CFLAGS_$*) -MMD -MP -MF $@.d $< \
		$(WORKLOAD_LIBS_$*) -o $@

# Shared libraries for workloads: tests/workloads/lib/NAME.c → build/workloads/libNAME.so
$(BUILD)/workloads/lib%.so: tests/workloads/lib/%.c | $(OBJ)
	$(call msg,CC-SO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(if $(WORKLOAD_CC_lib$*),$(WORKLOAD_CC_lib$*) $(CLANG_TARGET),$(CC)) $(WORKLOAD_CFLAGS) \
		$(WORKLOAD_CFLAGS_lib$*) -fPIC \
		-shared -MMD -MP -MF $@.d $< -o $@

$(BUILD)/bpf $(OBJ) $(SKEL):
	$(Q)mkdir -p $@

clean:
	$(call msg,CLEAN,)
	$(Q)rm -rf $(BUILD) $(SKEL)

-include $(wildcard $(BUILD)/bpf/*.d)
# (not into build/roots/: container roots, whose etc/*.d are directories)
# (nor into another architecture's build/ARCH/, whose rules name its own objects)
-include $(shell find $(BUILD) -path $(BUILD)/roots -prune $(foreach b,$(OTHER_BUILDS),-o -path $(b) -prune) \
	-o -name '*.d' -type f -print 2>/dev/null)
