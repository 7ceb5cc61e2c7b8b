#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The CPU profiling benchmark: tracekit against perf and bpftrace on this machine.
#   tools/bench-cpu.sh [ROUNDS]        (default 9; as root; after `make`)
# Prints, as medians with min and max over ROUNDS interleaved rounds:
#  1. slowdown: wall time of a fixed-work workload (build/workloads/bench_work) while
#     each tracer samples the whole system, over an untraced run right next to it;
#  2. the tracer's own CPU seconds (user+sys) and peak RSS for a 10-second whole-system
#     capture while both CPUs are busy;
#  3. start-up: exec to the sampler attached: build/workloads/attach_time --settle, the
#     time until the tracer first held every perf event and BPF link it holds once settled
#     (probes a tool opens and closes while it starts do not count).
# Figures, not a pass/fail test: this machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-9}
B=${TK_BUILD_DIR:-build}
TK=$B/tracekit
WORK=$B/workloads/bench_work
ATTACH=$B/workloads/attach_time
NCPU=$(nproc)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tools/install-deps.sh --bench
for f in "$TK" "$WORK" "$ATTACH"; do
	[[ -x $f ]] || { echo "bench-cpu: $f missing: run make" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "bench-cpu: run as root" >&2; exit 1; }

BPFTRACE_PROG='profile:hz:999 { @[kstack, ustack] = count(); }'

# start_tracer NAME: whole-system sampling in the background; sets TPID
start_tracer() {
	case $1 in
	tk99) "$TK" cpu -F 99 -o "$TMP/tk.pb.gz" & ;;
	tk999) "$TK" cpu -F 999 -o "$TMP/tk.pb.gz" & ;;
	perf999) perf record -q -F 999 -g -a -o "$TMP/perf.data" 2>/dev/null & ;;
	bpftrace999) bpftrace -e "$BPFTRACE_PROG" >"$TMP/bt.out" 2>&1 & ;;
	esac
	TPID=$!
}

# stop_tracer: SIGINT (what a person types), again every 5 s (bpftrace can miss one that
# arrives while it attaches), SIGKILL after 30 s; then reap it
stop_tracer() {
	local i
	for ((i = 0; i < 300; i++)); do
		# gone, or a zombie waiting to be reaped
		grep -qs '^State:[[:space:]]*[^Z[:space:]]' "/proc/$TPID/status" || break
		((i % 50 == 0)) && { kill -INT "$TPID" 2>/dev/null || true; }
		sleep 0.1
	done
	kill -KILL "$TPID" 2>/dev/null || true
	wait "$TPID" 2>/dev/null || true
}

# wall seconds of the fixed work
work_time() {
	local t0 t1
	t0=$(date +%s%N)
	"$WORK" 12 1
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}

# median min max of the numbers on stdin
stats() { sort -g | awk '{a[NR]=$1} END {printf "%s %s %s\n", a[int((NR+1)/2)], a[1], a[NR]}'; }

TRACERS=(none tk99 tk999 perf999 bpftrace999)
declare -A WALL CPU RSS START

echo "bench-cpu: $ROUNDS rounds, $NCPU CPUs, kernel $(uname -r)"
echo "1/3 slowdown of fixed work ($WORK 12 1) under whole-system sampling, each traced run"
echo "    paired with an untraced run next to it (order shuffled), ratio of the pair"
for ((r = 1; r <= ROUNDS; r++)); do
	mapfile -t order < <(printf '%s\n' "${TRACERS[@]:1}" | shuf)
	for t in "${order[@]}"; do
		if ((RANDOM % 2)); then
			base=$(work_time)
			start_tracer "$t"
			sleep 1.5	# attached well before this (see start-up below)
			traced=$(work_time)
		else
			start_tracer "$t"
			sleep 1.5
			traced=$(work_time)
		fi
		stop_tracer
		[[ -v base ]] || base=$(work_time)
		WALL[$t]+="$(awk -v a="$traced" -v b="$base" 'BEGIN { printf "%.4f", a / b }') "
		WALL[none]+="$base "
		unset base
	done
	printf '  round %d done\n' "$r"
done

echo "2/3 tracer CPU and peak RSS, 10 s whole-system capture, both CPUs busy"
cpu_of() {
	# "user+sys maxrss_kb" of the command
	/usr/bin/time -o "$TMP/time" -f '%U %S %M' "$@" >/dev/null 2>&1 || true
	# the last line: GNU time puts "Command exited with non-zero status" before it
	tail -n1 "$TMP/time" | awk '{ printf "%.3f %d\n", $1 + $2, $3 }'
}
for ((r = 1; r <= ROUNDS; r++)); do
	mapfile -t order < <(printf '%s\n' tk99 tk999 perf999 bpftrace999 | shuf)
	for t in "${order[@]}"; do
		"$WORK" 1000 "$NCPU" &
		load=$!
		case $t in
		tk99) res=$(cpu_of "$TK" cpu -F 99 -d 10 -o "$TMP/tk.pb.gz") ;;
		tk999) res=$(cpu_of "$TK" cpu -F 999 -d 10 -o "$TMP/tk.pb.gz") ;;
		perf999) res=$(cpu_of perf record -q -F 999 -g -a -o "$TMP/perf.data" -- sleep 10) ;;
		bpftrace999) res=$(cpu_of timeout -s INT 10 bpftrace -e "$BPFTRACE_PROG") ;;
		esac
		kill "$load" 2>/dev/null || true
		wait "$load" 2>/dev/null || true
		CPU[$t]+="${res% *} "
		RSS[$t]+="${res#* } "
	done
	printf '  round %d done\n' "$r"
done

echo "3/3 start-up: exec to the sampler attached (attach_time --settle 2000)"
for ((r = 1; r <= ROUNDS; r++)); do
	START[tk99]+="$("$ATTACH" --settle 2000 "$TK" cpu -F 99 -o "$TMP/tk.pb.gz") "
	START[perf999]+="$("$ATTACH" --settle 2000 perf record -q -F 999 -g -a -o "$TMP/perf.data" \
		2>/dev/null) "
	START[bpftrace999]+="$("$ATTACH" --settle 2000 bpftrace -e "$BPFTRACE_PROG" 2>/dev/null) "
done

echo
read -r base _ _ < <(tr ' ' '\n' <<<"${WALL[none]}" | grep . | stats)
printf '%-12s %-26s %-22s %-20s %s\n' tracer "slowdown (median min max)" "CPU s (10 s capture)" \
	"peak RSS MiB" "start-up ms"
for t in "${TRACERS[@]:1}"; do
	read -r m lo hi < <(tr ' ' '\n' <<<"${WALL[$t]}" | grep . | stats)
	slow="$m ($lo $hi)"
	read -r m lo hi < <(tr ' ' '\n' <<<"${CPU[$t]}" | grep . | stats)
	cpu="$m ($lo $hi)"
	read -r m lo hi < <(tr ' ' '\n' <<<"${RSS[$t]}" | grep . | stats)
	rss=$(awk -v m="$m" -v lo="$lo" -v hi="$hi" \
		'BEGIN { printf "%.1f (%.1f %.1f)", m / 1024, lo / 1024, hi / 1024 }')
	st="-"
	if [[ -n ${START[$t]:-} ]]; then
		read -r m lo hi < <(tr ' ' '\n' <<<"${START[$t]}" | grep . | stats)
		st="$m ($lo $hi)"
	fi
	printf '%-12s %-26s %-22s %-20s %s\n' "$t" "$slow" "$cpu" "$rss" "$st"
done
echo "untraced fixed work: median ${base} s"
