#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# How long `tracekit caps` takes: N runs (default 21), median and range of the
# wall time of the whole command, and of the snapshot as it reports itself.
#   tools/bench-caps.sh [N] [-- extra caps args]
set -euo pipefail
n=${1:-21}
shift || true
[[ ${1:-} == -- ]] && shift
bin=${TRACEKIT:-build/tracekit}
walls=() snaps=()
for ((i = 0; i < n; i++)); do
	t0=$(date +%s%N)
	out=$("$bin" caps --json "$@")
	t1=$(date +%s%N)
	walls+=($(((t1 - t0) / 1000)))
	snaps+=("$(sed -n 's/^  "elapsed_ms": \([0-9.]*\),/\1/p' <<<"$out")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)], a[1], a[NR]}'; }
read -r wm wlo whi < <(median "${walls[@]}")
read -r sm slo shi < <(median "${snaps[@]}")
printf 'tracekit caps, %d runs: wall median %.1f ms (min %.1f, max %.1f); snapshot median %s ms (min %s, max %s)\n' \
	"$n" "$(awk "BEGIN{print $wm/1000}")" "$(awk "BEGIN{print $wlo/1000}")" "$(awk "BEGIN{print $whi/1000}")" "$sm" "$slo" "$shi"
