#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The off-CPU benchmark: what taking off-CPU time costs a context-switch-heavy program.
#   tools/bench-offcpu.sh [ROUNDS]      (default 9; as root; after `make`)
# The load: build/workloads/pingpong, two threads passing a byte over two pipes (every
# hop a blocking read), both pinned to CPU 0 (a million switches a second or more on an
# idle machine), and a steady time (unpinned, its time swings several-fold with where the scheduler puts the
# threads and how deep the idle CPU sleeps, more than any tracer costs). Each tracer
# watches the whole system while it runs; each traced run is paired with an untraced
# run right next to it (order shuffled), and the ratio of the pair is its slowdown.
# Medians (min max) over ROUNDS interleaved rounds, and each tracer's own CPU seconds
# (user+sys) over its run. Tracers:
#   tk-cpu      tracekit cpu -F 99                  (on-CPU only: the baseline it adds to)
#   tk-off      tracekit cpu -F 99 --off-cpu             (thinned past 2000 stacks/s a CPU)
#   tk-off-all  tracekit cpu -F 99 --off-cpu --off-cpu-stacks 0   (every switch-out's stacks)
#   offcputime  bcc's libbpf-tools offcputime (Debian's build; kernel and user stacks)
#   perf-cs     perf record -e context-switches -c 1 -g -a (perf's way without BPF: a
#               sample at every switch-out; Debian's perf has no --off-cpu, which needs
#               BUILD_BPF_SKEL)
# Two loads by default (BENCH_WORK_US, pingpong's WORK_US): 0, every hop a switch and
# nothing else (over a million switches a second here), and 4, about 4 us of work before
# each hop (about 200,000 a second), as a busy server's threads switch; BENCH_WORK_US= (empty)
# skips the loads and measures the waits below alone.
# BENCH_TRACERS: a subset of the names above (default all); BENCH_PINGPONG_ROUNDS: the
# round trips of the work=0 load (the others take about as long).
# Then waits that span the capture: cpu_offcpu_span with BENCH_SEED_THREADS (default
# "0 1000") more threads blocked on a condition variable before the capture, and
# `tracekit cpu --off-cpu -d 3 -p PID` (BENCH_SPAN_S): how many threads the task iterator
# found off the CPU and how long that took (the profile's note), the waits from before the
# capture (median min max: the window, 3 s), and what bcc's offcputime sees of them over the
# same 3 s.
# Figures, not a pass/fail test: this machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-9}
B=${TK_BUILD_DIR:-build}
TK=$B/tracekit
PP=$B/workloads/pingpong
N=${BENCH_PINGPONG_ROUNDS:-300000}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tools/install-deps.sh --bench
for f in "$TK" "$PP"; do
	[[ -x $f ]] || { echo "bench-offcpu: $f missing: run make" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "bench-offcpu: run as root" >&2; exit 1; }
SPAN=$B/workloads/cpu_offcpu_span
[[ -x $SPAN ]] || { echo "bench-offcpu: $SPAN missing: run make" >&2; exit 1; }
OFFCPUTIME=$(command -v offcputime || echo /usr/sbin/offcputime)

start_tracer() {
	case $1 in
	tk-cpu) "$TK" cpu -F 99 -o "$TMP/tk.json" 2>/dev/null & ;;
	tk-off) "$TK" cpu -F 99 --off-cpu -o "$TMP/tk.json" 2>/dev/null & ;;
	tk-off-all) "$TK" cpu -F 99 --off-cpu --off-cpu-stacks 0 -o "$TMP/tk.json" 2>/dev/null & ;;
	offcputime) "$OFFCPUTIME" >"$TMP/oc.out" 2>&1 & ;;
	perf-cs) perf record -q -e context-switches -c 1 -g -a -o "$TMP/perf.data" 2>/dev/null & ;;
	esac
	TPID=$!
}

# SIGINT, as a person ends it; SIGKILL after 60 s (a tracer writing a large file); reaped
stop_tracer() {
	local i
	kill -INT "$TPID" 2>/dev/null || true
	for ((i = 0; i < 600; i++)); do
		grep -qs '^State:[[:space:]]*[^Z[:space:]]' "/proc/$TPID/status" || break
		sleep 0.1
	done
	kill -KILL "$TPID" 2>/dev/null || true
	wait "$TPID" 2>/dev/null || true
}

# user+sys seconds of process $1 so far (its threads included), from /proc/PID/stat
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.3f\n", ($12 + $13) / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}

# pingpong's time under load $1 (WORK_US), pinned
pp_time() { taskset -c 0 "$PP" "${ROUNDS_OF[$1]}" "$1" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p'; }
stats() { sort -g | awk '{a[NR]=$1} END {printf "%s %s %s\n", a[int((NR+1)/2)], a[1], a[NR]}'; }

read -r -a TRACERS <<<"${BENCH_TRACERS:-tk-cpu tk-off tk-off-all offcputime perf-cs}"
read -r -a LOADS <<<"${BENCH_WORK_US-0 4}"
declare -A SLOW CPU BASE RATE ROUNDS_OF
echo "bench-offcpu: $ROUNDS rounds, $(nproc) CPUs, kernel $(uname -r)"
for l in "${LOADS[@]}"; do
	# about the same time for each load: fewer round trips with work between them
	ROUNDS_OF[$l]=$(awk -v n="$N" -v w="$l" 'BEGIN { printf "%d", n / (1 + w) }')
	RATE[$l]=$(taskset -c 0 "$PP" "${ROUNDS_OF[$l]}" "$l" | sed -n 's/.*switches_per_s=\([0-9]*\).*/\1/p')
	echo "  load work=${l}us: pingpong ${ROUNDS_OF[$l]} round trips, ${RATE[$l]} switches a second untraced"
done
SPAN_S=${BENCH_SPAN_S:-3}
for ((r = 1; r <= ROUNDS && ${#LOADS[@]}; r++)); do
	mapfile -t order < <(for l in "${LOADS[@]}"; do printf "$l %s\n" "${TRACERS[@]}"; done | shuf)
	for lt in "${order[@]}"; do
		l=${lt%% *} t=${lt#* }
		((RANDOM % 2)) && base=$(pp_time "$l")
		start_tracer "$t"
		sleep 2	# attached, tables built
		c0=$(cpu_s "$TPID")
		traced=$(pp_time "$l")
		c1=$(cpu_s "$TPID")
		stop_tracer
		[[ -v base ]] || base=$(pp_time "$l")
		SLOW[$l $t]+="$(awk -v a="$traced" -v b="$base" 'BEGIN { printf "%.4f", a / b }') "
		CPU[$l $t]+="$(awk -v a="$c0" -v b="$c1" -v w="$traced" 'BEGIN { printf "%.3f", (b - a) / w }') "
		BASE[$l]+="$base "
		unset base
	done
	printf '  round %d done\n' "$r"
done
for l in "${LOADS[@]}"; do
	read -r base _ _ < <(tr ' ' '\n' <<<"${BASE[$l]}" | grep . | stats)
	echo
	echo "load work=${l}us (${RATE[$l]} switches a second untraced; untraced median $base s):"
	printf '%-12s %-28s %s\n' tracer "slowdown (median min max)" "tracer CPU s per s (median min max)"
	for t in "${TRACERS[@]}"; do
		read -r m lo hi < <(tr ' ' '\n' <<<"${SLOW[$l $t]}" | grep . | stats)
		read -r cm clo chi < <(tr ' ' '\n' <<<"${CPU[$l $t]}" | grep . | stats)
		printf '%-12s %-28s %s\n' "$t" "$m ($lo $hi)" "$cm ($clo $chi)"
	done
done

# waits that span the capture
echo
echo "waits begun before the capture (cpu_offcpu_span, cpu --off-cpu -d $SPAN_S -p):"
printf '%-9s %-34s %-30s %s\n' blocked "found by the iterator" "their waits, s (med min max)" \
	"offcputime sees"
for n in ${BENCH_SEED_THREADS:-0 1000}; do
	"$SPAN" 60 "$n" >"$TMP/span.out" &
	spid=$!
	for ((i = 0; i < 300; i++)); do grep -q ready "$TMP/span.out" && break; sleep 0.1; done
	"$TK" cpu --off-cpu -d "$SPAN_S" -p "$spid" -o "$TMP/span.json" 2>/dev/null
	found=$(jq -r '.comments[] | select(test("were off the CPU when")) |
		capture("(?<n>[0-9]+) threads.* in (?<ms>[0-9]+) ms") | "\(.n) threads in \(.ms) ms"' \
		"$TMP/span.json")
	waits=$(jq -r '[.stacks[] | select(.off_cpu_began == "before_capture")
		| select(any(.frames[]; .name | test("^blocked_(read|lock|cond)$")))
		| {tid, ns: .values[2]}] | group_by(.tid) | map(map(.ns) | add / 1e6 | round / 1e3) | .[]' \
		"$TMP/span.json" | stats)
	seen=0
	if [[ -x $OFFCPUTIME ]]; then
		"$OFFCPUTIME" -p "$spid" "$SPAN_S" >"$TMP/oc.out" 2>&1 || true
		seen=$(grep -c 'blocked_\(read\|lock\|cond\)' "$TMP/oc.out" || true)
	fi
	printf '%-9s %-34s %-30s %s\n' "$((n + 2))" "$found" "$waits" "$seen stacks of them"
	kill -KILL "$spid"
	wait "$spid" 2>/dev/null || true
done
