#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The allocation profiling benchmark: what each mode of `tracekit alloc` costs a program
# that allocates, against bpftrace probing every malloc and free (memleak's method).
#   tools/bench-alloc.sh [ROUNDS]        (default 5; as root; after `make`)
# Workload: build/workloads/alloc_bench --loop tight (malloc+free at once) and --loop mixed
# (a ring of live blocks, realloc, calloc); it prints its own ns per malloc/free pair.
# Each round runs every configuration once, in a shuffled order, each beside an untraced run
# of the same size (before or after it, at random). The table gives medians (min max) of ns
# per pair, the slowdown as the median (min max) of the traced/untraced ratios of those
# pairs, and the added cost per intercepted call ((ratio - 1) x untraced median / 2 calls
# per pair).
# Configurations:
#   untraced     the workload alone
#   growth       tracekit alloc --mode growth -- CMD  (page faults, brk, mmap; no hooks)
#   preload      tracekit alloc -- CMD                (in-process sampler, 512 KiB mean)
#   sampled      tracekit alloc --no-preload -- CMD   (uprobes on the allocator, the
#                                                      sampler in BPF: what -p PID uses)
#   full         tracekit alloc --mode full -- CMD    (every allocation and free)
#   bpftrace     bpftrace counting every malloc and free of the workload
# Hooked configurations run fewer pairs (a trap costs microseconds here).
# Figures, not a pass/fail test: this machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
B=${TK_BUILD_DIR:-build}
TK=$B/tracekit
WL=$B/workloads/alloc_bench
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tools/install-deps.sh --bench
for f in "$TK" "$WL" "$B/libtkalloc.so" "$B/libtkagent.so"; do
	[[ -e $f ]] || { echo "bench-alloc: $f missing: run make" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "bench-alloc: run as root" >&2; exit 1; }
LIBC=$(ldd "$WL" | awk '$1 ~ /^libc\.so/ { print $3 }')
[[ -n $LIBC ]] || { echo "bench-alloc: cannot find the libc of $WL" >&2; exit 1; }

declare -A N=([tight.fast]=40000000 [tight.slow]=200000 [mixed.fast]=4000000 [mixed.slow]=200000)
CONFIGS=(untraced growth preload sampled full bpftrace)

# run CONFIG LOOP: prints the workload's ns per pair
run() {
	local cfg=$1 loop=$2 n line
	case $cfg in
	untraced | growth | preload) n=${N[$loop.fast]} ;;
	*) n=${N[$loop.slow]} ;;
	esac
	case $cfg in
	untraced) line=$("$WL" --loop "$loop" -n "$n") ;;
	growth) line=$("$TK" alloc --mode growth -o "$TMP/p.pb.gz" -- "$WL" --loop "$loop" -n "$n") ;;
	preload) line=$("$TK" alloc -o "$TMP/p.pb.gz" -- "$WL" --loop "$loop" -n "$n") ;;
	sampled) line=$("$TK" alloc --no-preload -o "$TMP/p.pb.gz" -- "$WL" --loop "$loop" -n "$n") ;;
	full) line=$("$TK" alloc --mode full -o "$TMP/p.pb.gz" -- "$WL" --loop "$loop" -n "$n" \
		2>/dev/null) ;;
	bpftrace) line=$(bpftrace -e "uprobe:$LIBC:malloc, uprobe:$LIBC:free { @[probe] = count(); }" \
		-c "$WL --loop $loop -n $n" 2>/dev/null | grep ns_per_pair) ;;
	esac
	sed -n 's/.*ns_per_pair=\([0-9.]*\).*/\1/p' <<<"$line" | tail -n1
}

# median min max of the numbers on stdin
stats() { sort -g | awk '{a[NR]=$1} END {printf "%s %s %s\n", a[int((NR+1)/2)], a[1], a[NR]}'; }

declare -A NS RATIO
echo "bench-alloc: $ROUNDS rounds, $(nproc) CPUs, kernel $(uname -r), libc $LIBC"
for ((r = 1; r <= ROUNDS; r++)); do
	for loop in tight mixed; do
		mapfile -t order < <(printf '%s\n' "${CONFIGS[@]:1}" | shuf)
		for c in "${order[@]}"; do
			# each traced run beside an untraced one of the same size, in a random order
			if ((RANDOM % 2)); then
				base=$(run untraced "$loop"); v=$(run "$c" "$loop")
			else
				v=$(run "$c" "$loop"); base=$(run untraced "$loop")
			fi
			[[ -n $v && -n $base ]] || { echo "bench-alloc: $c $loop printed no figure" >&2; exit 1; }
			NS[$c.$loop]+="$v "
			NS[untraced.$loop]+="$base "
			RATIO[$c.$loop]+="$(awk -v a="$v" -v b="$base" 'BEGIN { printf "%.4f", a / b }') "
		done
	done
	printf '  round %d done\n' "$r"
done

echo
for loop in tight mixed; do
	read -r base _ _ < <(tr ' ' '\n' <<<"${NS[untraced.$loop]}" | grep . | stats)
	echo "$loop loop (${N[$loop.fast]} pairs untraced/growth/preload, ${N[$loop.slow]} hooked)"
	printf '  %-10s %-28s %-28s %s\n' config "ns per pair (median min max)" \
		"slowdown (median of pairs)" "added ns per call"
	for c in "${CONFIGS[@]}"; do
		read -r m lo hi < <(tr ' ' '\n' <<<"${NS[$c.$loop]}" | grep . | stats)
		q="1 1 1"
		[[ $c != untraced ]] && q=$(tr ' ' '\n' <<<"${RATIO[$c.$loop]}" | grep . | stats)
		awk -v c="$c" -v m="$m" -v lo="$lo" -v hi="$hi" -v b="$base" -v q="$q" 'BEGIN {
			split(q, r, " ")
			add = (r[1] - 1) * b / 2
			if (c == "untraced") { s = "-"; a = "-" }
			else if (r[1] < 10) {
				s = sprintf("%+.1f %% (%+.1f %+.1f)", (r[1] - 1) * 100, (r[2] - 1) * 100,
					    (r[3] - 1) * 100)
				a = sprintf("%.1f", add)
			} else { s = sprintf("%.0fx (%.0f %.0f)", r[1], r[2], r[3]); a = sprintf("%.0f", add) }
			printf "  %-10s %-28s %-28s %s\n", c, sprintf("%.1f (%.1f %.1f)", m, lo, hi), s, a
		}'
	done
done
