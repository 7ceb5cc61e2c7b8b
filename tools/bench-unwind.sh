#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The unwinding benchmark: user stacks by CFI (.eh_frame) in the kernel and in the perf_event
# fallback, against frame pointers and `perf record --call-graph dwarf`, on this machine.
#   tools/bench-unwind.sh [ROUNDS]        (default 5; as root; after `make`)
# Prints, as medians (min max) over ROUNDS rounds, each configuration in a shuffled order:
#  1. whole chains without frame pointers: build/workloads/unw_chain 3 at 999 Hz under
#     tracekit (bpf, --backend perf, --unwind fp) and perf record --call-graph dwarf; the
#     share of samples with `burn` on the stack that also carry main;run;stage_a;stage_b;
#  2. a real server: Debian's redis-server (127.0.0.1 only) under redis-benchmark, 8 s at
#     999 Hz with -p PID, tracekit and then perf record + perf script (or the other way
#     round) on the same server: (a) the share of samples reaching main or start_thread,
#     (b) the tools' own CPU seconds (user+sys, GNU time), (c) their peak RSS;
#  3. the cost per sample in the sampled task at 9999 Hz, --unwind fp and --unwind cfi, each
#     traced run paired with an untraced one (before or after it, at random): fixed work
#     (build/workloads/bench_work 12 1) and a deep stack (build/workloads/unw_chain -v 2,
#     which prints the work it did); t = the task's CPU time (user+sys by wait4: it holds
#     the sampling interrupts, not the time other work kept it off a CPU), µs per sample =
#     (t_traced - t_untraced for the same work) / the task's samples; wall time beside it;
#  4. start-up: from starting `tracekit cpu -F 99 --unwind fp|cfi -- date +%s.%N` to the
#     command running (it is released once sampling runs), less date's own start-up; the
#     whole run's wall time; with build/workloads/attach_time (if built), to the sampling
#     events open;
#  5. once: a 3-second whole-system capture at 99 Hz (no -p) while redis-server, a python3
#     loop and a perl loop run, and the unwinding lines of `go tool pprof -comments`.
# Then a table of each figure, its target, met or not. Paths in the folded stacks are
# compared by frame name: tracekit's from -o x.folded, perf's folded here from perf script
# (leaf first, one frame per line; "(inlined)" entries dropped: a physical chain like
# tracekit's). Figures, not a pass/fail test: this machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C	# a '.' in $EPOCHREALTIME and in printf
ROUNDS=${1:-5}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS]" >&2; exit 2; }
B=${TK_BUILD_DIR:-build}
TK=$B/tracekit
CHAIN=$B/workloads/unw_chain
WORK=$B/workloads/bench_work
ATTACH=$B/workloads/attach_time	# optional: start-up to the sampling events open
TMP=$(mktemp -d)
BG=()	# background processes of ours still running: killed on exit

cleanup() {
	local p
	for p in "${BG[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${BG[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tools/install-deps.sh --bench
for f in "$TK" "$CHAIN" "$WORK"; do
	[[ -x $f ]] || { echo "bench-unwind: $f missing: run make" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "bench-unwind: run as root" >&2; exit 1; }
PY=$(command -v /usr/bin/python3 || command -v python3 || true)	# not a pyenv shim if it can
[[ -n $PY ]] || { echo "bench-unwind: python3 missing" >&2; exit 1; }
for t in perf /usr/bin/time redis-server redis-benchmark redis-cli go perl; do
	command -v "$t" >/dev/null ||
		{ echo "bench-unwind: $t missing (tools/install-deps.sh --bench)" >&2; exit 1; }
done

# median min max of the numbers on stdin
stats() { sort -g | awk '{a[NR]=$1} END {printf "%s %s %s\n", a[int((NR+1)/2)], a[1], a[NR]}'; }
# "median (min max)" of the words of $1, printed with format $2 (default %.3f)
mmm() {
	local m lo hi
	read -r m lo hi < <(tr ' ' '\n' <<<"$1" | grep . | stats)
	printf "${2:-%.3f} (${2:-%.3f} ${2:-%.3f})" "$m" "$lo" "$hi"
}
med() { tr ' ' '\n' <<<"$1" | grep . | stats | cut -d' ' -f1; }
calc() { awk "BEGIN { printf \"%.6g\", $* }"; }

# timed OUT CMD...: run CMD under GNU time, "user+sys maxrss_kb" into OUT; fail loudly
timed() {
	local out=$1
	shift
	if ! /usr/bin/time -o "$TMP/time" -f '%U %S %M' "$@" >"$TMP/cmd.out" 2>"$TMP/cmd.err"; then
		echo "bench-unwind: failed: $*" >&2
		cat "$TMP/cmd.err" >&2
		exit 1
	fi
	# the last line: GNU time puts "Command exited with non-zero status" before it
	tail -n1 "$TMP/time" | awk '{ printf "%.3f %d\n", $1 + $2, $3 }' >"$out"
}

# perf script output (stdin) to folded stacks, root first, "(inlined)" entries dropped
perf_fold() {
	awk '
	function flush(  s, i) {
		if (hdr) { s = comm; for (i = n; i >= 1; i--) s = s ";" f[i]; print s " 1" }
		n = 0; hdr = 0
	}
	/^[^ \t]/ { flush(); comm = $1; hdr = 1; next }
	/^[ \t]*$/ { flush(); next }
	/\(inlined\)$/ { next }
	{
		l = $0
		sub(/^[ \t]*[0-9a-f]+ /, "", l); sub(/ \([^()]*\)$/, "", l); sub(/\+0x[0-9a-f]+$/, "", l)
		f[++n] = l
	}
	END { flush() }'
}

# chain_share FOLDED: "share hits total" over the samples with a frame "burn"
chain_share() {
	awk '{
		n = $NF; s = substr($0, 1, length($0) - length($NF) - 1); k = split(s, f, ";")
		for (i = 2; i <= k; i++) if (f[i] == "burn") break
		if (i > k) next
		tot += n
		if (index(";" s ";", ";main;run;stage_a;stage_b;")) h += n
	} END { if (tot) printf "%.4f %d %d\n", h / tot, h, tot; else print "0 0 0" }' "$1"
}

# reach_share FOLDED: "share hits total": samples with a frame "main" or "start_thread"
reach_share() {
	awk '{
		n = $NF; s = substr($0, 1, length($0) - length($NF) - 1); k = split(s, f, ";")
		tot += n
		for (i = 2; i <= k; i++) if (f[i] == "main" || f[i] == "start_thread") { h += n; break }
	} END { if (tot) printf "%.4f %d %d\n", h / tot, h, tot; else print "0 0 0" }' "$1"
}

# --- redis ---------------------------------------------------------------------------------
PORT=$((17000 + $$ % 1000))
RPID='' BPID=''
redis_start() {
	local i
	redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
		--dir "$TMP" --logfile "$TMP/redis.log" &
	RPID=$!
	BG+=("$RPID")
	for ((i = 0; i < 50; i++)); do
		# ours answers, not another server on that port
		grep -q "^process_id:$RPID" <<<"$(redis-cli -h 127.0.0.1 -p "$PORT" info server \
			2>/dev/null | tr -d '\r')" && break
		sleep 0.1
	done
	if ((i == 50)); then
		echo "bench-unwind: redis-server on 127.0.0.1:$PORT did not start:" >&2
		cat "$TMP/redis.log" >&2
		exit 1
	fi
	# bounded (-n), but more than the round lasts: it is killed after
	redis-benchmark -h 127.0.0.1 -p "$PORT" -n 2000000 -c 20 -t set,get,incr -q \
		>/dev/null 2>&1 &
	BPID=$!
	BG+=("$BPID")
	sleep 1
}
redis_stop() {
	kill "$BPID" "$RPID" 2>/dev/null || true
	wait "$BPID" "$RPID" 2>/dev/null || true
	local keep=() p
	for p in "${BG[@]}"; do
		[[ $p == "$RPID" || $p == "$BPID" ]] || keep+=("$p")
	done
	BG=("${keep[@]}")
	RPID='' BPID=''
}

echo "bench-unwind: $ROUNDS rounds, $(nproc) CPUs, kernel $(uname -r), $("$TK" --version 2>&1 | head -n1)"
declare -A CH SH CPU RSS COST WCOST SLOW ST TOT EV

# --- 1 -------------------------------------------------------------------------------------
CHAIN_S=3
echo "1/5 whole chains without frame pointers: $CHAIN $CHAIN_S at 999 Hz"
for ((r = 1; r <= ROUNDS; r++)); do
	mapfile -t order < <(printf '%s\n' tk-bpf tk-perf tk-fp perf-dwarf | shuf)
	for c in "${order[@]}"; do
		rm -f "$TMP/c.folded"
		case $c in
		tk-bpf) timed "$TMP/t" "$TK" cpu -F 999 -o "$TMP/c.folded" -- "$CHAIN" "$CHAIN_S" ;;
		tk-perf) timed "$TMP/t" "$TK" cpu -F 999 --backend perf -o "$TMP/c.folded" -- \
			"$CHAIN" "$CHAIN_S" ;;
		tk-fp) timed "$TMP/t" "$TK" cpu -F 999 --unwind fp -o "$TMP/c.folded" -- \
			"$CHAIN" "$CHAIN_S" ;;
		perf-dwarf)
			timed "$TMP/t" perf record -q -F 999 --call-graph dwarf -o "$TMP/c.data" -- \
				"$CHAIN" "$CHAIN_S"
			perf script -i "$TMP/c.data" 2>/dev/null | perf_fold >"$TMP/c.folded"
			rm -f "$TMP/c.data" ;;
		esac
		read -r share _ tot < <(chain_share "$TMP/c.folded")
		((tot > 0)) || { echo "bench-unwind: $c: no sample with burn" >&2; exit 1; }
		CH[$c]+="$share "
		CH[$c.n]+="$tot "
	done
	printf '  round %d done\n' "$r"
done

# --- 2 -------------------------------------------------------------------------------------
echo "2/5 redis-server under redis-benchmark (127.0.0.1:$PORT), 8 s at 999 Hz, -p PID"
for ((r = 1; r <= ROUNDS; r++)); do
	redis_start
	mapfile -t order < <(printf '%s\n' tk perf | shuf)
	for c in "${order[@]}"; do
		case $c in
		tk)
			timed "$TMP/t" "$TK" cpu -d 8 -F 999 -p "$RPID" -o "$TMP/r.folded"
			read -r cpu rss <"$TMP/t"
			CPU[tk]+="$cpu "; RSS[tk]+="$rss "
			read -r share _ tot < <(reach_share "$TMP/r.folded")
			SH[tk]+="$share "; SH[tk.n]+="$tot "
			tkcpu=$cpu tkshare=$share ;;
		perf)
			timed "$TMP/t" perf record -q -F 999 --call-graph dwarf -p "$RPID" \
				-o "$TMP/r.data" -- sleep 8
			read -r cpu rss <"$TMP/t"
			CPU[rec]+="$cpu "; RSS[rec]+="$rss "
			timed "$TMP/t" sh -c 'exec perf script -i "$1" >"$2" 2>/dev/null' _ \
				"$TMP/r.data" "$TMP/r.script"
			read -r cpu2 rss2 <"$TMP/t"
			CPU[script]+="$cpu2 "; RSS[script]+="$rss2 "
			perfcpu=$(calc "$cpu + $cpu2")
			CPU[perf]+="$perfcpu "
			perf_fold <"$TMP/r.script" >"$TMP/p.folded"
			read -r share _ tot < <(reach_share "$TMP/p.folded")
			SH[perf]+="$share "; SH[perf.n]+="$tot "
			perfshare=$share
			rm -f "$TMP/r.data" "$TMP/r.script" ;;
		esac
	done
	redis_stop
	CPU[ratio]+="$(calc "$tkcpu / $perfcpu") "
	SH[diff]+="$(calc "$tkshare - $perfshare") "
	printf '  round %d done\n' "$r"
done

# --- 3 -------------------------------------------------------------------------------------
WORK_UNITS=12
CHAIN_T=2
# the task's own time: CPU seconds (user+sys from wait4, which holds the sampling interrupts:
# no IRQ time accounting here; not the time it waited for a CPU that other work held)
cat >"$TMP/rusage.py" <<'PY'
import os, sys, time
t = time.time()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
print("task %.6f %.6f" % (ru.ru_utime + ru.ru_stime, time.time() - t), flush=True)
sys.exit(os.waitstatus_to_exitcode(status))
PY
# cost_run CFG WL: "cpu_s wall_s work samples" of WL bench (fixed work: 1) or chain (hot units
# done in CHAIN_T s); CFG untraced, fp or cfi; samples: the workload's own (its comm)
cost_run() {
	local cfg=$1 wl=$2 out n=0 work=1 comm c w
	local -a cmd
	if [[ $wl == bench ]]; then
		cmd=("$PY" "$TMP/rusage.py" "$WORK" "$WORK_UNITS" 1)
	else
		cmd=("$PY" "$TMP/rusage.py" "$CHAIN" -v "$CHAIN_T")
	fi
	comm=$(basename "${cmd[2]}")
	if [[ $cfg == untraced ]]; then
		out=$("${cmd[@]}")
	else
		out=$("$TK" cpu -F 9999 --unwind "$cfg" -o "$TMP/s.folded" -- "${cmd[@]}")
		n=$(awk -v c="$comm" 'index($0, c ";") == 1 { n += $NF } END { print n + 0 }' \
			"$TMP/s.folded")
	fi
	[[ $wl == chain ]] && work=$(sed -n 's/^rounds=[0-9]* hot_units=\([0-9]*\)$/\1/p' <<<"$out")
	read -r _ c w < <(grep '^task ' <<<"$out")
	echo "$c $w $work $n"
}
echo "3/5 cost per sample at 9999 Hz: $WORK $WORK_UNITS 1 (fixed work), $CHAIN -v $CHAIN_T" \
	"(work rate); the task's CPU time"
for ((r = 1; r <= ROUNDS; r++)); do
	for wl in bench chain; do
		mapfile -t order < <(printf '%s\n' fp cfi | shuf)
		for c in "${order[@]}"; do
			if ((RANDOM % 2)); then
				read -r bc bw bk _ < <(cost_run untraced "$wl")
				read -r tc tw tk n < <(cost_run "$c" "$wl")
			else
				read -r tc tw tk n < <(cost_run "$c" "$wl")
				read -r bc bw bk _ < <(cost_run untraced "$wl")
			fi
			[[ -n $tc && -n $bc && -n $tk && -n $bk && ${n:-0} -gt 0 ]] ||
				{ echo "bench-unwind: $wl $c printed no figure" >&2; exit 1; }
			# the traced work at the untraced pace: what sampling added, per sample
			SLOW[$wl.$c]+="$(calc "($tc / $tk) / ($bc / $bk)") "
			COST[$wl.$c]+="$(calc "($tc - $tk * $bc / $bk) / $n * 1e6") "
			WCOST[$wl.$c]+="$(calc "($tw - $tk * $bw / $bk) / $n * 1e6") "
			COST[$wl.$c.n]+="$n "
			COST[$wl.untraced]+="$(calc "$bk / $bc") "
		done
	done
	printf '  round %d done\n' "$r"
done

# --- 4 -------------------------------------------------------------------------------------
echo "4/5 start-up: tracekit cpu -F 99 --unwind fp|cfi -- date +%s.%N, 3 runs a round" \
	"$([[ -x $ATTACH ]] && echo "(and $ATTACH)")"
# start_run CFG: "ms_to_command ms_total"
start_run() {
	local t0 t1 out
	t0=$EPOCHREALTIME
	if [[ $1 == base ]]; then
		out=$(date +%s.%N)
	else
		out=$("$TK" cpu -F 99 --unwind "$1" -o "$TMP/st.folded" -- date +%s.%N)
	fi
	t1=$EPOCHREALTIME
	awk -v t0="$t0" -v c="$out" -v t1="$t1" 'BEGIN { printf "%.2f %.2f\n", (c - t0) * 1e3, (t1 - t0) * 1e3 }'
}
for ((r = 1; r <= ROUNDS; r++)); do
	for ((k = 0; k < 3; k++)); do
		mapfile -t order < <(printf '%s\n' base fp cfi | shuf)
		for c in "${order[@]}"; do
			read -r s t < <(start_run "$c")
			ST[$c]+="$s "
			TOT[$c]+="$t "
		done
		# and to its sampler attached (every event and BPF link it keeps), as tools/bench-cpu.sh
		# measures it
		[[ -x $ATTACH ]] || continue
		mapfile -t order < <(printf '%s\n' fp cfi | shuf)
		for c in "${order[@]}"; do
			v=$("$ATTACH" --settle 2000 "$TK" cpu -F 99 --unwind "$c" -o "$TMP/at.folded" \
				-- sleep 100 2>/dev/null) ||
				{ echo "bench-unwind: $ATTACH failed on tracekit --unwind $c" >&2; exit 1; }
			EV[$c]+="$v "
		done
	done
done
base_ms=$(med "${ST[base]}")
for c in fp cfi; do
	for s in ${ST[$c]}; do ST[$c.net]+="$(calc "$s - $base_ms") "; done
done

# --- 5 -------------------------------------------------------------------------------------
echo "5/5 table memory: whole-system capture, tracekit cpu -F 99 -d 3 -o x.pb.gz (no -p)"
redis_start
"$PY" -c 'import time
t = time.time() + 6
while time.time() < t: sum(i * i for i in range(1000))' &
BG+=($!)
perl -e '$t = time + 6; while (time < $t) { $x = join(",", map { $_ * 2 } 1 .. 100) }' &
BG+=($!)
sleep 0.5
timed "$TMP/t" "$TK" cpu -F 99 -d 3 -o "$TMP/x.pb.gz"
read -r wscpu wsrss <"$TMP/t"
redis_stop
for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
BG=()
go tool pprof -comments "$TMP/x.pb.gz" >"$TMP/comments" 2>&1 ||
	{ echo "bench-unwind: go tool pprof -comments failed:" >&2; cat "$TMP/comments" >&2; exit 1; }
TABLES=$(grep -E '^unwind tables:' "$TMP/comments" || echo "unwind tables: (no such comment)")
UNWOUND=$(grep -E '^unwinding:' "$TMP/comments" || echo "unwinding: (no such comment)")

# --- report --------------------------------------------------------------------------------
echo
echo "1. whole chains (samples with burn that carry main;run;stage_a;stage_b), median (min max)"
printf '  %-12s %-26s %s\n' config "share" "samples with burn"
for c in tk-bpf tk-perf tk-fp perf-dwarf; do
	printf '  %-12s %-26s %s\n' "$c" "$(mmm "${CH[$c]}" %.4f)" "$(mmm "${CH[$c.n]}" %.0f)"
done
echo
echo "2. redis-server, 8 s at 999 Hz, -p PID, median (min max)"
printf '  %-22s %-26s %-22s %-24s %s\n' tool "reach main|start_thread" samples "CPU s (user+sys)" \
	"peak RSS MiB"
for c in tk perf; do
	rs=$( [[ $c == tk ]] && echo tk || echo rec )
	printf '  %-22s %-26s %-22s %-24s %s\n' \
		"$( [[ $c == tk ]] && echo "tracekit bpf" || echo "perf record+script")" \
		"$(mmm "${SH[$c]}" %.4f)" "$(mmm "${SH[$c.n]}" %.0f)" "$(mmm "${CPU[$c]}" %.2f)" \
		"$(mmm "$(for x in ${RSS[$rs]}; do calc "$x / 1024"; echo; done)" %.1f) $( [[ $c == perf ]] && echo '(record)')"
done
printf '  %-22s %-26s %-22s %-24s %s\n' "  perf record" - - "$(mmm "${CPU[rec]}" %.2f)" ""
printf '  %-22s %-26s %-22s %-24s %s\n' "  perf script" - - "$(mmm "${CPU[script]}" %.2f)" \
	"$(mmm "$(for x in ${RSS[script]}; do calc "$x / 1024"; echo; done)" %.1f)"
echo "  tracekit CPU / perf CPU, per round: $(mmm "${CPU[ratio]}" %.3f)"
echo "  tracekit share - perf share, per round: $(mmm "${SH[diff]}" %+.4f)"
echo
echo "3. cost per sample in the sampled task at 9999 Hz (untraced paired), median (min max)"
echo "   from the task's CPU time (user+sys); the wall-time figure beside it for reference"
printf '  %-20s %-26s %-24s %-24s %s\n' "workload, unwind" "slowdown (CPU time)" \
	"µs per sample (CPU)" "µs per sample (wall)" samples
for wl in bench chain; do
	for c in fp cfi; do
		printf '  %-20s %-26s %-24s %-24s %s\n' \
			"$( [[ $wl == bench ]] && echo bench_work || echo unw_chain), $c" \
			"$(mmm "${SLOW[$wl.$c]}" %.4f)" "$(mmm "${COST[$wl.$c]}" %.2f)" \
			"$(mmm "${WCOST[$wl.$c]}" %.2f)" "$(mmm "${COST[$wl.$c.n]}" %.0f)"
	done
	d=$(calc "$(med "${COST[$wl.cfi]}") - $(med "${COST[$wl.fp]}")")
	COST[$wl.diff]=$d
	printf '  %-20s %s\n' "  cfi - fp (medians)" "$(printf '%+.2f µs per sample' "$d")"
done
echo "  untraced: bench_work $(mmm "${COST[bench.untraced]}" %.4f) work/CPU s (1 = $WORK_UNITS units);" \
	"unw_chain $(mmm "${COST[chain.untraced]}" %.0f) hot units/CPU s"
echo "  (the cpu-clock timer interrupt alone costs ~8-10 µs a sample on this VM)"
echo
echo "4. start-up: tracekit start to the command running, less date's own start-up" \
	"($(printf %.2f "$base_ms") ms), median (min max)"
printf '  %-8s %-26s %-26s %s\n' unwind "to the command, ms" "whole run of -- date, ms" \
	"to $(nproc) sampling events open, ms"
for c in fp cfi; do
	ev="- (no $ATTACH: make it)"
	[[ -n ${EV[$c]:-} ]] && ev=$(mmm "${EV[$c]}" %.1f)
	printf '  %-8s %-26s %-26s %s\n' "$c" "$(mmm "${ST[$c.net]}" %.1f)" "$(mmm "${TOT[$c]}" %.1f)" \
		"$ev"
done
st_diff=$(calc "$(med "${ST[cfi.net]}") - $(med "${ST[fp.net]}")")
tot_diff=$(calc "$(med "${TOT[cfi]}") - $(med "${TOT[fp]}")")
printf '  cfi - fp (medians): %+.1f ms to the command, %+.1f ms whole run\n' "$st_diff" "$tot_diff"
echo
echo "5. whole-system capture, 3 s at 99 Hz (redis-server + benchmark, python3, perl running):"
echo "  tracekit CPU $(printf %.2f "$wscpu") s, peak RSS $(calc "$wsrss / 1024" | xargs printf %.1f) MiB"
echo "  $TABLES"
echo "  $UNWOUND"

# --- figures against targets ----------------------------------------------------------------
echo
printf '%-52s %-12s %-22s %s\n' figure value target result
row() {	# NAME VALUE TARGET OK(1|0|-)
	local res=info
	[[ $4 == 1 ]] && res=met
	[[ $4 == 0 ]] && res="NOT MET"
	printf '%-52s %-12s %-22s %s\n' "$1" "$2" "$3" "$res"
}
ge() { awk -v a="$1" -v b="$2" 'BEGIN { print (a >= b) ? 1 : 0 }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b) ? 1 : 0 }'; }
for c in tk-bpf tk-perf; do
	v=$(med "${CH[$c]}")
	row "1 chain share, tracekit $c" "$(printf %.4f "$v")" ">= 0.97" "$(ge "$v" 0.97)"
done
row "1 chain share, tracekit tk-fp" "$(printf %.4f "$(med "${CH[tk-fp]}")")" "- (frame pointers)" -
row "1 chain share, perf --call-graph dwarf" "$(printf %.4f "$(med "${CH[perf-dwarf]}")")" "-" -
tks=$(med "${SH[tk]}"); pfs=$(med "${SH[perf]}")
row "2a redis reach main|start_thread, tracekit" "$(printf %.4f "$tks")" \
	"$(printf '>= perf - 0.03 (%.4f)' "$(calc "$pfs - 0.03")")" "$(ge "$tks" "$(calc "$pfs - 0.03")")"
row "2a redis reach main|start_thread, perf" "$(printf %.4f "$pfs")" "-" -
cr=$(med "${CPU[ratio]}")
row "2b redis CPU s tracekit / (perf record+script)" "$(printf %.3f "$cr")" "<= 0.5" "$(le "$cr" 0.5)"
row "2b   tracekit CPU s" "$(printf %.2f "$(med "${CPU[tk]}")")" "-" -
row "2b   perf record + perf script CPU s" "$(printf %.2f "$(med "${CPU[perf]}")")" "-" -
rt=$(calc "$(med "${RSS[tk]}") / 1024")
row "2c redis peak RSS tracekit, MiB" "$(printf %.1f "$rt")" "<= 64" "$(le "$rt" 64)"
row "2c redis peak RSS perf record, MiB" "$(printf %.1f "$(calc "$(med "${RSS[rec]}") / 1024")")" "-" -
for wl in bench chain; do
	n=$( [[ $wl == bench ]] && echo bench_work || echo unw_chain)
	row "3 µs/sample in the task, $n, fp" "$(printf %.2f "$(med "${COST[$wl.fp]}")")" "-" -
	row "3 µs/sample in the task, $n, cfi" "$(printf %.2f "$(med "${COST[$wl.cfi]}")")" "-" -
	row "3 µs/sample, $n, cfi - fp (the tables' cost)" "$(printf %+.2f "${COST[$wl.diff]}")" "-" -
done
sc=$(med "${ST[cfi.net]}")
row "4 start-up to the command, --unwind cfi, ms" "$(printf %.1f "$sc")" "< 50" "$(le "$sc" 49.999)"
row "4 start-up to the command, --unwind fp, ms" "$(printf %.1f "$(med "${ST[fp.net]}")")" "-" -
if [[ -n ${EV[cfi]:-} ]]; then
	row "4 start-up to the sampling events open, cfi, ms" "$(printf %.1f "$(med "${EV[cfi]}")")" "-" -
	row "4 start-up to the sampling events open, fp, ms" "$(printf %.1f "$(med "${EV[fp]}")")" "-" -
fi
row "4 cfi - fp, whole run of -- date, ms" "$(printf %+.1f "$tot_diff")" "-" -
row "5 whole-system tracekit peak RSS, MiB" "$(printf %.1f "$(calc "$wsrss / 1024")")" "-" -
tl=$(sed -n 's/.*rows (\([0-9.]*\) of \([0-9.]*\) MiB).*; \([0-9.]*\) MiB reserved.*/\1\/\2 MiB, \3 res/p' <<<"$TABLES")
row "5 unwind tables used/budget, reserved" "${tl:-?}" "-" -
ou=$(sed -n 's/.*: \([0-9]*\) stacks, \([0-9]*\) reached.*/\1 \2/p' <<<"$UNWOUND")
if [[ -n $ou ]]; then
	read -r a b <<<"$ou"
	row "5 stacks reaching their outermost frame" "$(calc "$b / $a" | xargs printf %.3f)" "-" -
fi
