#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What `tracekit serve` costs (the issue's targets: idle, no BPF program attached and ~0 CPU;
# a 10 s profile over HTTP costs what `tracekit cpu -d 10` costs), as medians with min and
# max over ROUNDS rounds:
#  1. idle: serve's own CPU seconds over 20 s with nothing asked, and its BPF objects;
#  2. a 10 s whole-system CPU profile at 99 Hz while fixed work keeps both CPUs busy
#     (build/workloads/bench_work 40 2), asked over HTTP (curl .../debug/pprof/profile?
#     seconds=10) and taken by `tracekit cpu -d 10`: the tracer's CPU seconds for it, and
#     the work's wall time over an untraced run (order shuffled).
#   tools/bench-serve.sh [ROUNDS]      (default 5; as root; after `make`)
# Figures, not a pass/fail test: this machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
B=${TK_BUILD_DIR:-build}
TK=$(realpath "$B/tracekit")
WORK=$(realpath "$B/workloads/bench_work")
TMP=$(mktemp -d)
SPID=
cleanup() {
	[[ -n $SPID ]] && kill "$SPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

tools/install-deps.sh --bench
[[ $(id -u) -eq 0 ]] || { echo "bench-serve: run as root" >&2; exit 1; }
for f in "$TK" "$WORK"; do
	[[ -x $f ]] || { echo "bench-serve: $f missing: run make" >&2; exit 1; }
done

stats() { sort -g | awk '{a[NR]=$1} END {printf "%s %s %s\n", a[int((NR+1)/2)], a[1], a[NR]}'; }
# user + system seconds of process PID so far
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15) / hz }' "/proc/$1/stat"; }
bpf_objects() { ls -l "/proc/$1/fd" | grep -cE 'anon_inode:(\[perf_event\]|bpf-)' || true; }

"$TK" serve --listen 127.0.0.1:0 2>"$TMP/serve.err" &
SPID=$!
for ((i = 0; i < 100; i++)); do
	URL=$(sed -n 's/.*listening on \(http[^ ,]*\).*/\1/p' "$TMP/serve.err")
	[[ -n $URL ]] && break
	sleep 0.1
done
[[ -n $URL ]] || { echo "bench-serve: serve did not start: $(cat "$TMP/serve.err")" >&2; exit 1; }
# the token it generated, as a header file for curl (-H @FILE: not in any argv)
TOKFILE=$(sed -n 's/.*token in \([^ ,]*\).*/\1/p' "$TMP/serve.err")
printf 'Authorization: Bearer %s\n' "$(cat "$TOKFILE")" >"$TMP/auth"

echo "bench-serve: $ROUNDS rounds, $(nproc) CPUs, kernel $(uname -r)"
sleep 1
c0=$(cpu_of "$SPID")
sleep 20
c1=$(cpu_of "$SPID")
echo "1/2 idle for 20 s: $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }') CPU" \
	"seconds, $(bpf_objects "$SPID") BPF objects or perf events open"

wall() {
	local t0 t1
	t0=$(date +%s%N)
	"$WORK" 40 2
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}

echo "2/2 a 10 s whole-system profile at 99 Hz while $WORK 40 2 runs: the tracer's CPU" \
	"seconds, the work's slowdown"
declare -A CPU SLOW
for ((r = 1; r <= ROUNDS; r++)); do
	base=$(wall)
	for m in $(printf '%s\n' http cli | shuf); do
		case $m in
		http)
			c0=$(cpu_of "$SPID")
			curl -s -H @"$TMP/auth" -o "$TMP/p.pb.gz" "$URL/debug/pprof/profile?seconds=10" &
			C=$!
			t=$(wall)
			wait "$C"
			c1=$(cpu_of "$SPID")
			CPU[http]+="$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }') "
			;;
		cli)
			/usr/bin/time -f '%U %S' -o "$TMP/time" "$TK" cpu -d 10 -o "$TMP/c.pb.gz" \
				2>/dev/null &
			C=$!
			t=$(wall)
			wait "$C"
			CPU[cli]+="$(awk '{ printf "%.3f", $1 + $2 }' "$TMP/time") "
			;;
		esac
		SLOW[$m]+="$(awk -v a="$t" -v b="$base" 'BEGIN { printf "%.4f", a / b }') "
	done
done
for m in http cli; do
	read -r cmed cmin cmax < <(tr ' ' '\n' <<<"${CPU[$m]}" | grep . | stats)
	read -r smed smin smax < <(tr ' ' '\n' <<<"${SLOW[$m]}" | grep . | stats)
	printf '  %-5s tracer CPU s %s (%s %s)   work slowdown %s (%s %s)\n' \
		"$([[ $m == http ]] && echo serve || echo cpu)" "$cmed" "$cmin" "$cmax" \
		"$smed" "$smin" "$smax"
done
