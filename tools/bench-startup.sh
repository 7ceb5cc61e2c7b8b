#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# How long each collector takes from exec to the first event it can record, beside perf and
# bpftrace where they do the same thing:
#   tools/bench-startup.sh [ROUNDS]      (default 9; as root; after `make`)
# Each figure is build/workloads/attach_time's: the ms from fork+exec until the command's
# file table first held every event attachment (perf events, BPF links by type) it holds
# once nothing has changed for two seconds, so probes opened and closed while starting do not
# count; for `tracekit caps` and `bpftrace --info` (they attach nothing) the time to exit.
# Rounds are interleaved (every command once per round, in a shuffled order); the figure is
# the median, with min and max. Figures, not a pass/fail test: this machine is shared and
# noisy. The issue's targets (27): caps <= 100 ms, cpu <= 10 ms, alloc -p <= 250 ms, record
# <= 400 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-9}
B=${TK_BUILD_DIR:-build}
TK=$(realpath "$B/tracekit")
AT=$(realpath "$B/workloads/attach_time")
SETTLE=${BENCH_SETTLE_MS:-2000}
TMP=$(mktemp -d)
IDLE=
MOUNTED=
cleanup() {
	[[ -n $IDLE ]] && kill "$IDLE" 2>/dev/null
	[[ -n $MOUNTED ]] && umount /sys/kernel/tracing
	rm -rf "$TMP"
}
trap cleanup EXIT

tools/install-deps.sh --bench
[[ $(id -u) -eq 0 ]] || { echo "bench-startup: run as root" >&2; exit 1; }
for f in "$TK" "$AT"; do
	[[ -x $f ]] || { echo "bench-startup: $f missing: run make" >&2; exit 1; }
done
LIBC=$(ldconfig -p | awk '/libc\.so\.6 .*x86-64|libc\.so\.6 .*AArch64/ { print $NF; exit }')
[[ -n $LIBC ]] || LIBC=$(ldd /bin/sleep | awk '/libc\.so/ { print $3 }')

# perf and bpftrace find tracepoints in tracefs (tracekit does not need it): mount it for
# the run where it is not
if [[ ! -d /sys/kernel/tracing/events ]]; then
	mount -t tracefs nodev /sys/kernel/tracing && MOUNTED=1
fi

# an idle process to attach to with -p: a python3 that allocates nothing while it sleeps
python3 -c 'import time; time.sleep(100000)' &
IDLE=$!
sleep 0.3

BT_ALLOC="uprobe:$LIBC:malloc { @[ustack] = sum(arg0); }"
# NAME|how|command line (run by bash -c so quoting stays readable)
ROWS=(
	"caps tracekit|exit|$TK caps"
	"caps bpftrace --info|exit|bpftrace --info"
	"cpu tracekit|settle|$TK cpu -F 99 -o $TMP/c.pb.gz"
	"cpu perf record -g -a|settle|perf record -q -F 99 -g -a -o $TMP/p.data"
	"cpu bpftrace profile|settle|bpftrace -e 'profile:hz:99 { @[kstack, ustack] = count(); }'"
	"off-cpu tracekit --off-cpu|settle|$TK cpu --off-cpu -F 99 -o $TMP/o.pb.gz"
	"off-cpu perf sched_switch -g|settle|perf record -q -e sched:sched_switch -g -a -o $TMP/s.data"
	"off-cpu bpftrace sched_switch|settle|bpftrace -e 'tracepoint:sched:sched_switch { @[kstack, ustack] = count(); }'"
	"alloc tracekit -- CMD|settle|$TK alloc -o $TMP/a.pb.gz -- sleep 100007"
	"alloc bpftrace -c CMD|settle|bpftrace -e '$BT_ALLOC' -c '/bin/sleep 100007'"
	"alloc -p tracekit|settle|$TK alloc -p $IDLE -o $TMP/ap.pb.gz"
	"alloc -p bpftrace|settle|bpftrace -p $IDLE -e '$BT_ALLOC'"
	"numa tracekit|settle|$TK numa -o $TMP/n.json"
	"numa perf migrate|settle|perf record -q -e migrate:mm_migrate_pages -a -o $TMP/m.data"
	"numa bpftrace migrate|settle|bpftrace -e 'tracepoint:migrate:mm_migrate_pages { @[comm] = count(); }'"
	"record tracekit -p|settle|$TK record -p $IDLE -o $TMP/rec"
)
declare -A MS

echo "bench-startup: $ROUNDS rounds, $(nproc) CPUs, kernel $(uname -r), settle ${SETTLE} ms"
for ((r = 1; r <= ROUNDS; r++)); do
	mapfile -t order < <(seq 0 $((${#ROWS[@]} - 1)) | shuf)
	for i in "${order[@]}"; do
		IFS='|' read -r name how cmd <<<"${ROWS[$i]}"
		rm -rf "$TMP/rec" "$TMP"/*.data "$TMP"/*.gz "$TMP"/*.json
		if [[ $how == exit ]]; then
			v=$("$AT" --exit bash -c "exec $cmd" 2>/dev/null) || v=
		else
			v=$("$AT" --settle "$SETTLE" bash -c "exec $cmd" 2>/dev/null) || v=
		fi
		[[ -n $v ]] || { echo "bench-startup: '$name' failed ($cmd)" >&2; exit 1; }
		pkill -f '^(/bin/)?sleep 100007$' 2>/dev/null || true
		MS[$name]+="$v "
	done
	printf '  round %d done\n' "$r"
done

stats() { tr ' ' '\n' | grep . | sort -g |
	awk '{a[NR]=$1} END {printf "%s (%s %s)\n", a[int((NR+1)/2)], a[1], a[NR]}'; }
echo
printf '%-32s %s\n' "command" "exec -> recording, ms: median (min max)"
for row in "${ROWS[@]}"; do
	name=${row%%|*}
	printf '%-32s %s\n' "$name" "$(stats <<<"${MS[$name]}")"
done
