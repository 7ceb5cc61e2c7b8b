#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Install the Debian packages tracekit's build and tests need. Idempotent: a
# machine that already has every package installs nothing and touches no list.
#   tools/install-deps.sh            build + test dependencies
#   tools/install-deps.sh --bench    and what the benchmarks compare against
#   tools/install-deps.sh --check    only report what is missing (exit 1 if any)
#   tools/install-deps.sh --arm64    and the arm64 cross build's (make ARCH=arm64): adds
#                                    the arm64 architecture to dpkg (dpkg --add-architecture)
# Options combine (--arm64 --check, --bench --arm64).
set -euo pipefail

# make/gcc/clang/llvm: host and BPF compilers; bpftool + libbpf-dev: skeletons and the
# CO-RE loader; libelf/zlib/zstd: ELF reading and the static link; libdw-dev: the CFI
# (.eh_frame, .debug_frame) the unwind tables are built from, with liblzma-dev and
# libbz2-dev for its static link (libdw.a's decompressors need them); libnuma-dev:
# topology; libcmocka-dev: unit tests; libclang-rt-14-dev: ASan/UBSan/libFuzzer
# runtimes; libjemalloc-dev: a real jemalloc for allocator-detection tests and the
# alloc fallback; libstdc++-12-dev: the C++ allocation workload; scdoc: the man pages
# (tools/man/*.8.scd, built by make).
PKGS=(
	make gcc clang llvm pkg-config libstdc++-12-dev scdoc
	bpftool libbpf-dev
	libelf-dev zlib1g-dev libzstd-dev
	libdw-dev liblzma-dev libbz2-dev
	libnuma-dev
	libcmocka-dev
	libclang-rt-14-dev
	libjemalloc-dev
	qemu-system-x86 busybox-static cpio jq
	golang-go
	redis-server redis-tools python3 debootstrap
	libc6-dbg procps
	libmicrohttpd-dev
	chromium prometheus curl
	nodejs openjdk-17-jdk-headless
)
# golang-go: `go tool pprof` reads back every pprof the tests write. redis-server,
# redis-tools (redis-benchmark) and python3: real programs built without frame pointers
# that the unwinding tests and benchmark profile; debootstrap: a root of another Debian
# release, a container with another glibc build for them (tests/lib/mkroot.sh).
# libc6-dbg: the names of libc's local functions (start_thread, __libc_start_call_main),
# which the unwinding tests look for at the root of a stack; procps: pgrep, for the
# processes those tests start in a container. A minimal Debian has neither.
# libmicrohttpd-dev: the HTTP server under `tracekit serve`. chromium (headless): record's
# index.html is opened in a real browser, offline; prometheus (and its promtool): serve's
# /metrics is checked by promtool and scraped by a real Prometheus. Debian's prometheus
# package starts a service on :9090 where an init system runs; the tests start their own
# on a port of theirs and never use that one. curl: the tests' HTTP client (bad requests,
# headers, a client that leaves mid-capture, a unix socket). nodejs and
# openjdk-17-jdk-headless: real JITs (V8, HotSpot) whose stacks the JIT tests walk and name
# (tests/integration/test_jit_runtimes.c, tools/bench-jit.sh): Debian's node 18 and JDK 17
# (javac compiles the Java workload at test time; about 200 MB installed, no service).
# The benchmarks' peers and measuring tools (libbpf-tools: bcc's offcputime, built by Debian).
BENCH_PKGS=(linux-perf bpftrace time libbpf-tools)
# The arm64 cross build (make ARCH=arm64 → build/arm64/): Debian's cross compiler (its C++
# library too: libstdc++'s demangler is linked in), and the arm64 builds of the libraries
# tracekit links, from the same archive as the amd64 ones. Every one is Multi-Arch: same,
# installed beside its amd64 twin under /usr/lib/aarch64-linux-gnu, which the cross gcc
# searches. The static link takes libbpf.a libdw.a libelf.a liblzma.a libbz2.a libz.a
# libzstd.a libnuma.a from these -dev packages; the shared library links their .so.
# qemu-system-arm: the arm64 guests (qemu-system-aarch64, TCG).
ARM64_PKGS=(
	gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
	libbpf-dev:arm64 libelf-dev:arm64 libdw-dev:arm64 zlib1g-dev:arm64 libzstd-dev:arm64
	liblzma-dev:arm64 libbz2-dev:arm64 libnuma-dev:arm64
	qemu-system-arm
)
check=0
arm64=0
for a in "$@"; do
	case $a in
	--bench) PKGS+=("${BENCH_PKGS[@]}") ;;
	--check) check=1 ;;
	--arm64) arm64=1 PKGS+=("${ARM64_PKGS[@]}") ;;
	*)
		echo "install-deps: unknown option '$a' (--bench, --arm64, --check)" >&2
		exit 64
		;;
	esac
done

# Installed for this machine's architecture (or for all): with a foreign architecture added
# (arm64, for the cross build), dpkg-query lists a Multi-Arch: same package once per
# architecture. A name with :ARCH (libbpf-dev:arm64) is installed for that one.
ARCH=$(dpkg --print-architecture)
missing=()
for p in "${PKGS[@]}"; do
	want="$ARCH|all"
	[[ $p == *:* ]] && want=${p##*:}
	dpkg-query -W -f='${Status} ${Architecture}\n' "$p" 2>/dev/null |
		grep -qxE "install ok installed ($want)" || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi
if ((check)); then
	echo "missing packages: ${missing[*]}" >&2
	exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "install-deps: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# dpkg must know the architecture before apt's lists have its packages
if ((arm64)) && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "install-deps: dpkg --add-architecture arm64" >&2
	dpkg --add-architecture arm64
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
