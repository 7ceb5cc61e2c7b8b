#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A long capture, not a CI test: whole-system `tracekit cpu` at 999 Hz while short
# processes come and go, then its figures. What it must show (issue 12's target):
# every loss counter 0 or explained, tracekit's RSS flat (start, end and highest printed),
# and every process that ran at least 10 ms named (its samples carry short_lived_hot).
#
#   tests/soak/soak.sh [MINUTES] [OUT]     (as root, after make; default 30 minutes)
#
# The capture rotates (--rotate SOAK_ROTATE seconds, default 60): a profile a period,
# OUT/soak.NNNN.json and .pb.gz, as a long capture is meant to run; SOAK_ROTATE=0 takes
# one profile of the whole run instead (its memory grows with every process it holds).
# RSS is flat when its end is within 25 % (or 8 MiB) of what it was once two periods
# had passed (from then on the session holds two periods' processes, no more).
#
# The load: one spawner after another runs build/workloads/cpu_short with a burn of
# 2 ms (not required to be named: ~2 samples) or 12 ms (required), alternately, two at a
# time, as fast as they go — 100,000+ processes in 30 minutes here. Their pids go to
# OUT/long.pids and OUT/short.pids. Figures: OUT/figures.txt (also on stdout); the
# profile: OUT/soak.json and OUT/soak.pb.gz. The figures are tests/soak/figures.sh's (again by
# hand: tests/soak/figures.sh OUT MINUTES ROTATE). Needs jq and mawk. Exit 0 when every figure is met,
# 1 when one is not (it says which), 2 on a usage or setup error.
set -euo pipefail

cd "$(dirname "$0")/../.."
MIN=${1:-30}
OUT=${2:-build/soak}
ROT=${SOAK_ROTATE:-60}
B=${TK_BUILD_DIR:-build}
TK=$B/tracekit
WL=$B/workloads/cpu_short

[[ $MIN =~ ^[0-9]+$ && $MIN -gt 0 ]] || { echo "soak: MINUTES must be a positive number" >&2; exit 2; }
[[ $ROT =~ ^[0-9]+$ ]] || { echo "soak: SOAK_ROTATE must be a number of seconds" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "soak: run as root (a whole-system capture)" >&2; exit 2; }
for f in "$TK" "$WL"; do
	[[ -x $f ]] || { echo "soak: $f missing: run make" >&2; exit 2; }
done
command -v jq >/dev/null && command -v mawk >/dev/null ||
	{ echo "soak: no jq or mawk (tools/install-deps.sh)" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/{long,short}.pids "$OUT"/rss.txt "$OUT"/soak.json "$OUT"/soak.pb.gz \
	"$OUT"/soak.[0-9]*.json "$OUT"/soak.[0-9]*.pb.gz

secs=$((MIN * 60))
rotate=()
((ROT > 0)) && rotate=(--rotate "$ROT")
"$TK" cpu -F 999 -d "$secs" "${rotate[@]}" -o "$OUT/soak.json" -o "$OUT/soak.pb.gz" \
	>"$OUT/tracekit.out" 2>"$OUT/tracekit.err" &
tk=$!
sleep 5	# attached, tables built
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# two spawners: $! of each short process is its pid (the workload execs in place). They
# stop 3 s before the capture does: a process started while tracekit writes its output
# after sampling stopped is not one it could name.
deadline=$(($(date +%s) + secs - 5 - 3))
spawner() {
	local which=$1 ms
	while kill -0 "$tk" 2>/dev/null && (($(date +%s) < deadline)); do
		if [[ $which == long ]]; then ms=12; else ms=2; fi
		"$WL" "$ms" >/dev/null &
		echo $! >>"$OUT/$which.pids"
		wait $! || true
		if [[ $which == long ]]; then which=short; else which=long; fi
	done
}
spawner long &
s1=$!
spawner short &
s2=$!

start_rss=$(rss "$tk")
echo "0 $start_rss" >"$OUT/rss.txt"
t0=$(date +%s)
while kill -0 "$tk" 2>/dev/null; do
	sleep 30
	kill -0 "$tk" 2>/dev/null && echo "$(($(date +%s) - t0)) $(rss "$tk")" >>"$OUT/rss.txt"
done
wait "$tk" || true
kill "$s1" "$s2" 2>/dev/null || true
wait 2>/dev/null || true
tests/soak/figures.sh "$OUT" "$MIN" "$ROT"
