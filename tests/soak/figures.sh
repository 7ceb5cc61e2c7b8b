#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The figures of a soak (tests/soak/soak.sh) from what it left in OUT: the processes it ran
# (long.pids, short.pids), tracekit's RSS every 30 s (rss.txt), the profiles (soak.json, or
# soak.NNNN.json a period each). Run by soak.sh; again by hand on an OUT to recompute them.
#
#   tests/soak/figures.sh OUT MINUTES ROTATE_SECONDS
#
# Prints the figures (and into OUT/figures.txt); a line starting FAIL for each target not met.
# Exit 0 when all are met, 1 when one is not.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$1
MIN=$2
ROT=$3
start_rss=$(head -n1 "$OUT/rss.txt" | awk '{ print $2 }')
end_rss=$(tail -n1 "$OUT/rss.txt" | awk '{ print $2 }')

{
	nlong=$(wc -l <"$OUT/long.pids")
	nshort=$(wc -l <"$OUT/short.pids")
	echo "soak: $MIN min whole-system at 999 Hz; $((nlong + nshort)) processes ($nlong of 12 ms, $nshort of 2 ms)"
	if ((ROT > 0)); then
		files=("$OUT"/soak.[0-9]*.json)
	else
		files=("$OUT/soak.json")
	fi
	if [[ ! -s ${files[0]} ]]; then
		echo "FAIL: no profile written ($(tail -n3 "$OUT/tracekit.err"))"
		exit 1
	fi
	# the JSON of a long capture is gigabytes on one line: jq reads only what comes
	# before "stacks", and tests/soak/stacks.awk streams the stacks
	: >"$OUT/heads.json"
	for f in "${files[@]}"; do
		head -c 1048576 "$f" | awk '{ i = index($0, ",\"stacks\":["); if (i) print substr($0, 1, i - 1) "}" }' >>"$OUT/heads.json"
	done
	# the periods' counters added up, their notes as the last period has them
	jq -s '{ samples: (map(.samples) | add), periods: length,
		 losses: (reduce (.[].losses | to_entries[]) as $e ({}; .[$e.key] += $e.value)),
		 comments: .[-1].comments,
		 from_records: (map(.comments[] | capture("^(?<n>[0-9]+) processes were gone") | .n | tonumber) | add // 0) }' \
		"$OUT/heads.json" >"$OUT/head.json"
	mawk -v named=short_lived_hot -v pids="$OUT/named.all" -f tests/soak/stacks.awk \
		"${files[@]}" >"$OUT/stacks.txt"
	entries=$(awk '$1 == "entries" { print $2 }' "$OUT/stacks.txt")
	echo "profiles: ${#files[@]} ($( ((ROT > 0)) && echo "a period of $ROT s each" || echo "the whole run"))"
	echo "samples: $(jq .samples "$OUT/head.json") in $entries distinct (pid, tid, stack) entries (summed over the periods)"
	echo "processes named from MMAP2 records (gone before /proc could be read): $(jq .from_records "$OUT/head.json")"
	echo "losses:"
	jq -r '.losses | to_entries[] | "  \(.key) \(.value)"' "$OUT/head.json"
	echo "notes (of the last profile):"
	jq -r '.comments[]' "$OUT/head.json" | sed 's/^/  # /'
	# every counter that is not 0, with its cause; one without a known cause fails the soak
	echo "why the counters that are not 0 are:"
	jq -r '.losses | to_entries[] | select(.value > 0) | "\(.key) \(.value)"' "$OUT/head.json" |
	while read -r name n; do
		case $name in
		truncated_stacks | unwind_depth_limit)
			why="stacks deeper than 127 frames, cut there" ;;
		unsymbolized_frames)
			# counted once per frame of each distinct stack, as the counter is
			nosym=$(awk '$1 == "nosym" { print $2 }' "$OUT/stacks.txt")
			unknown=$(awk '$1 == "unknown" { print $2 }' "$OUT/stacks.txt")
			mods=$(awk '$1 == "module" { print $3, $2 }' "$OUT/stacks.txt" | sort -rn | head -n4 |
				awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $2 }')
			why="$nosym in files with no symbol for them (module+0xOFFSET: stripped binaries without debug files, such as $mods); $unknown at no known mapping ([unknown]: frame-pointer walks through code built without frame pointers, taken before the process's unwind entry was written)" ;;
		processes_without_maps)
			why="processes gone before /proc could be read whose image began before the capture and was never read (no MMAP2 records describe it)" ;;
		unwind_process_unknown)
			why="samples of a process's first milliseconds, before user space wrote its unwind entry: walked by frame pointer" ;;
		unwind_no_mapping)
			why="walks that reached an address in no file mapping of the process's entry (JIT code, or a frame-pointer walk gone astray): stopped there" ;;
		unwind_bad_frame)
			why="walks whose next frame did not move up the stack (frame-pointer fallbacks through code without frame pointers): stopped there" ;;
		unwind_table_not_loaded)
			why="frames of objects whose tables did not fit --unwind-mem (see the unwind tables note) or were not built yet: frame pointer" ;;
		unwind_fp_no_cfi)
			why="frames of objects with no CFI at all: frame pointer" ;;
		unwind_no_cfi_for_address | unwind_unsupported_cfi)
			why="frames no CFI row describes (PLT stubs, hand-written code, rows tracekit cannot evaluate): frame pointer (docs/unwinding.md)" ;;
		unwind_stack_read_fault)
			why="user stack reads that faulted (a page not present at sampling time): the walk stops" ;;
		perf_lost_records)
			why="MMAP2/COMM/FORK/EXIT records the kernel dropped, its ring full" ;;
		*)
			why="" ;;
		esac
		if [[ -n $why ]]; then
			echo "  $name $n: $why"
		else
			echo "FAIL: $name $n has no known cause"
		fi
	done
	max_rss=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$OUT/rss.txt")
	# warm: two periods in (the whole run: the first minute, when the unwind tables are built)
	warm_at=$(( ROT > 0 ? 2 * ROT : 60 ))
	warm_rss=$(awk -v t="$warm_at" '$1 >= t { print $2; exit }' "$OUT/rss.txt")
	warm_rss=${warm_rss:-$end_rss}
	echo "tracekit RSS: ${start_rss} KiB at 5 s, ${warm_rss} KiB at ${warm_at} s, ${end_rss} KiB at the end, highest ${max_rss} KiB"
	echo "  RSS every 30 s (KiB): $(awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }' "$OUT/rss.txt")"
	# flat: from the warm figure on, the later half of the run no higher than the earlier
	# half, by its median and by its peak (a period's file is built and written at its
	# end: the samples that fall there are its peaks), within 25 % or 8 MiB
	read -r med1 max1 med2 max2 < <(awk -v t="$warm_at" '$1 >= t { v[n++] = $2 }
		function med(a, lo, hi,   i, j, k, b, m) {
			m = 0; for (i = lo; i < hi; i++) b[m++] = a[i]
			for (i = 1; i < m; i++) { k = b[i]; for (j = i - 1; j >= 0 && b[j] > k; j--) b[j + 1] = b[j]; b[j + 1] = k }
			return m ? b[int((m - 1) / 2)] : 0 }
		function mx(a, lo, hi,   i, r) { r = 0; for (i = lo; i < hi; i++) if (a[i] > r) r = a[i]; return r }
		END { h = int(n / 2); print med(v, 0, h), mx(v, 0, h), med(v, h, n), mx(v, h, n) }' "$OUT/rss.txt")
	echo "  from ${warm_at} s: earlier half median ${med1} KiB, peak ${max1} KiB; later half median ${med2} KiB, peak ${max2} KiB"
	echo "  growth from ${warm_at} s to the end: $(((end_rss - warm_rss) * 1024 / (nlong + nshort))) B a process, $(((end_rss - warm_rss) * 1024 / (entries > 0 ? entries : 1))) B an entry"
	if ((med2 > med1 * 5 / 4 && med2 - med1 > 8192)) || ((max2 > max1 * 5 / 4 && max2 - max1 > 8192)); then
		echo "FAIL: RSS grew"
	fi
	# every 12 ms process named: a stack of its pid with short_lived_hot
	sort -u "$OUT/named.all" >"$OUT/named.pids"
	sort -u "$OUT/long.pids" >"$OUT/long.sorted"
	unnamed=$(comm -23 "$OUT/long.sorted" "$OUT/named.pids" | wc -l)
	echo "12 ms processes named: $((nlong - unnamed)) of $nlong"
	if ((unnamed > 0)); then
		echo "FAIL: $unnamed processes that ran 12 ms have no named sample (first: $(comm -23 \
			"$OUT/long.sorted" "$OUT/named.pids" | head -n5 | tr '\n' ' '))"
	fi
} | tee "$OUT/figures.txt"
# the figures are checked where they are printed: a FAIL line fails the soak
! grep -q '^FAIL' "$OUT/figures.txt"
