#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Run every test tier on what `make all static` built, and end with one line:
#   tests: N passed, N failed, N skipped
# Tiers: unit (cmocka), unit under ASan+UBSan, integration (root, real kernel),
# --help of every shipped binary and the man pages and bash completion against it
# (tests/install/check-docs.sh, check-completion.sh), the static binary, the kernel matrix
# (tests/vm/matrix.sh: every collector on this kernel and, statically linked, in QEMU
# guests on others), fuzz targets (short runs), make install into a stage
# (tests/install/check-install.sh; the preload part as root), the arm64 cross build beside
# the x86 one (tests/install/check-cross.sh; skipped without the cross compiler).
#   TK_FUZZ_SECONDS   seconds per fuzz target (default 10; 0 skips fuzzing)
#   TK_TIERS          space-separated subset of: unit san integration help static vm fuzz
#                     install cross
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
export TK_BUILD_DIR=${TK_BUILD_DIR:-build}
B=$TK_BUILD_DIR
FUZZ_SECONDS=${TK_FUZZ_SECONDS:-10}
TIERS=${TK_TIERS:-unit san integration help static vm fuzz install cross}

passed=0 failed=0 skipped=0
failures=()

tier() { [[ " $TIERS " == *" $1 "* ]]; }

# Run one cmocka binary and add its counts.
run_cmocka() {
	local bin=$1 out rc p f s e
	out=$("$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test.*/\1/p' <<<"$out" | tail -n1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test.*/\1/p' <<<"$out" | tail -n1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) test.*/\1/p' <<<"$out" | tail -n1)
	e=$(sed -n 's/^\[  ERROR   \] \([0-9][0-9]*\) test.*/\1/p' <<<"$out" | tail -n1)
	p=${p:-0} f=$((${f:-0} + ${e:-0})) s=${s:-0}
	if ((rc != 0 && f == 0)); then
		f=1	# crashed or aborted before its summary
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	((f > 0)) && failures+=("$bin")
}

# A tier that is run but finds nothing to run fails: an empty build is not a pass.
none_found() {
	local name=$1 dir=$2 count=$3
	((count > 0)) && return 0
	echo "[  FAILED  ] no $name test binaries in $dir: run make"
	failed=$((failed + 1))
	failures+=("no $name test binaries in $dir")
}

# Run a script that ends with "NAME: N passed, N failed, N skipped" and add its counts.
run_counted() {
	local name=$1 out rc p f s
	shift
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	p=$(sed -n "s/^$name: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1/p" \
		<<<"$out" | tail -n1)
	f=$(sed -n "s/^$name: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\2/p" \
		<<<"$out" | tail -n1)
	s=$(sed -n "s/^$name: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\3/p" \
		<<<"$out" | tail -n1)
	p=${p:-0} f=${f:-0} s=${s:-0}
	((rc != 0 && f == 0)) && f=1	# ended before its summary
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	((f > 0)) && failures+=("$1")
}

check() {
	local name=$1
	shift
	if "$@"; then
		echo "[       OK ] $name"
		passed=$((passed + 1))
	else
		echo "[  FAILED  ] $name"
		failed=$((failed + 1))
		failures+=("$name")
	fi
}

if tier unit; then
	echo "== unit tests"
	n=0
	for t in "$B"/tests/unit/test_*; do [[ -x $t ]] && { run_cmocka "$t"; n=$((n + 1)); }; done
	none_found unit "$B/tests/unit" $n
fi
if tier san; then
	echo "== unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	n=0
	for t in "$B"/tests/unit-san/test_*; do
		[[ -x $t ]] && { run_cmocka "$t"; n=$((n + 1)); }
	done
	none_found "sanitizer unit" "$B/tests/unit-san" $n
fi
if tier integration; then
	echo "== integration tests (real kernel)"
	if [[ $(id -u) -ne 0 ]]; then
		echo "skip: integration tests need root"
	else
		# a container of another Debian release (another glibc build) for test_unwind
		TK_OTHER_ROOT=$(tests/lib/mkroot.sh trixie "$B/roots/trixie") && export TK_OTHER_ROOT
		# Debian's own CPythons for test_python and test_stacks_py: bullseye 3.9, trixie
		# 3.13, sid 3.14
		for s in bullseye trixie sid; do
			tests/lib/mkroot.sh "$s" "$B/roots/$s-py" python3-minimal >/dev/null || true
		done
		export TK_PY_ROOTS="$B/roots"
	fi
	n=0
	for t in "$B"/tests/integration/test_*; do
		[[ -x $t ]] && { run_cmocka "$t"; n=$((n + 1)); }
	done
	none_found integration "$B/tests/integration" $n
	# the older kernels' paths on this one (user/core/kfeat.h): preallocated hash maps,
	# slot programs for want of attach cookies, entry/return uprobes for want of sessions
	if [[ -x $B/tests/integration/test_alloc_bpf ]]; then
		echo "-- again as on a 5.10 kernel (TK_KFEAT_OFF, TK_ALLOC_NO_SESSIONS)"
		TK_KFEAT_OFF=runtime_alloc_maps,attach_cookie TK_ALLOC_NO_SESSIONS=1 \
			run_cmocka "$B/tests/integration/test_alloc_bpf"
		TK_KFEAT_OFF=runtime_alloc_maps run_cmocka "$B/tests/integration/test_cpu"
		# arm64 has no exceptions:page_fault_user: growth by the page-faults perf event
		echo "-- growth as on arm64 5.10 (TK_KFEAT_OFF=...,page_fault_user)"
		TK_KFEAT_OFF=runtime_alloc_maps,attach_cookie,page_fault_user TK_TEST_FILTER=test_growth \
			run_cmocka "$B/tests/integration/test_alloc_bpf"
	fi
fi

help_ok() {
	local out
	out=$("$1" --help 2>&1) || return 1
	[[ -n $out ]] || return 1
}
if tier help; then
	echo "== every shipped binary answers --help and exits 0"
	for b in "$B"/tracekit "$B"/tracekit-static "$B"/workloads/*; do
		[[ -f $b && -x $b ]] || continue
		[[ $b == *.so || $b == *.d ]] && continue	# libraries and dependency files
		check "--help: $b" help_ok "$b"
	done
	echo "== the man pages and the bash completion say what --help says"
	run_counted docs tests/install/check-docs.sh "$B"
	run_counted completion tests/install/check-completion.sh "$B"
fi

static_ok() {
	local bin=$B/tracekit-static
	[[ -x $bin ]] || { echo "no $bin (make static)"; return 1; }
	# one file with no dynamic section: nothing to load on another host
	if readelf -d "$bin" 2>/dev/null | grep -q 'NEEDED'; then
		echo "$bin needs shared libraries"
		return 1
	fi
	local out
	out=$("$bin" caps --json) || return 1
	grep -q '"schema": "tracekit.caps/1"' <<<"$out"
}
if tier static; then
	echo "== the static binary"
	check "tracekit-static is self-contained and runs caps" static_ok
fi

if tier vm; then
	echo "== the kernel matrix: this kernel, and tracekit-static in QEMU guests on others"
	out=$(tests/vm/matrix.sh 2>&1)
	rc=$?
	printf '%s\n' "$out"
	p=$(sed -n 's/^vm: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\1/p' <<<"$out" | tail -n1)
	f=$(sed -n 's/^vm: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\2/p' <<<"$out" | tail -n1)
	s=$(sed -n 's/^vm: .* failed, \([0-9][0-9]*\) skipped.*/\1/p' <<<"$out" | tail -n1)
	if ((rc == 77)) && [[ ${CI:-} == true || ${CI:-} == 1 ]]; then
		# matrix.sh fails what it cannot have under CI itself; a 77 that gets here anyway
		# (nothing could be tested) must not pass CI either
		echo "[  FAILED  ] the kernel matrix tested nothing (exit 77 under CI=$CI)"
		failed=$((failed + 1))
		failures+=("tests/vm/matrix.sh (nothing tested)")
	elif ((rc == 77)); then
		skipped=$((skipped + 1))
	else
		p=${p:-0} f=${f:-0} s=${s:-0}
		((rc != 0 && f == 0)) && f=1
		passed=$((passed + p))
		failed=$((failed + f))
		skipped=$((skipped + s))
		((f > 0)) && failures+=("tests/vm/matrix.sh")
	fi
fi

fuzz_one() {
	local f=$1 name corpus
	name=$(basename "$f")
	corpus=tests/fuzz/corpus/$name
	local work
	work=$(mktemp -d)
	[[ -d $corpus ]] && cp -r "$corpus"/. "$work"/
	"$f" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=0 "$work" >"$work.log" 2>&1
	local rc=$?
	if ((rc != 0)); then
		tail -n 40 "$work.log"
	else
		grep -E '^(#[0-9]+|Done)' "$work.log" | tail -n 1
	fi
	rm -rf "$work" "$work.log"
	return $rc
}
if tier fuzz; then
	if ((FUZZ_SECONDS > 0)); then
		echo "== fuzz targets, ${FUZZ_SECONDS}s each"
		n=0
		for f in "$B"/fuzz/fuzz_*; do
			[[ -x $f ]] && { check "fuzz: $(basename "$f")" fuzz_one "$f"; n=$((n + 1)); }
		done
		none_found fuzz "$B/fuzz" $n
	else
		echo "== fuzz targets skipped (TK_FUZZ_SECONDS=0)"
	fi
fi

if tier install; then
	echo "== make install into a stage (DESTDIR, PREFIX=/usr), and what it installed"
	run_counted install tests/install/check-install.sh "$B"
fi

if tier cross; then
	echo "== the arm64 cross build beside this one (make ARCH=arm64 BUILD=$B/arm64)"
	run_counted cross tests/install/check-cross.sh "$B"
fi

echo
if ((${#failures[@]})); then
	echo "failed:"
	printf '  %s\n' "${failures[@]}"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
