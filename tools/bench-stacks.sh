#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The stacks benchmark: every thread's stack of a 1000-thread process, and what taking
# them costs the process.
#   tools/bench-stacks.sh [ROUNDS]      (default 5; as root; after `make`)
# The target: build/workloads/stacks_shape -t 1000 -n (1004 threads: a busy main thread
# bumping a counter, a mutex holder in read(), its waiter, a nanosleep loop and 1000
# threads in pthread_cond_wait; no D thread, on which gdb and eu-stack hang). Tools:
#   tk-bpf    tracekit stacks -p PID --backend bpf   (task iterator; nothing stopped)
#   tk-proc   tracekit stacks -p PID --backend proc  (/proc files; nothing stopped)
#   gdb       gdb -batch -nx -p PID -ex 'thread apply all bt'   (ptrace: stops the process)
#   eu-stack  eu-stack -p PID                                   (ptrace, a thread at a time)
# For each: wall time (median, min, max over ROUNDS), the threads it printed, and the target's
# counter while it ran: its rate against the same length of time just before (the
# throughput kept, 100 % = unchanged), and its longest stand-still (a stop shows as hundreds
# of ms; this machine's noise is tens). With BENCH_HUNG=1, gdb and eu-stack are also run,
# 15 s at most, on the same target with its D thread (a vfork parent): they hang.
# With two CPUs or more the target runs on CPU 1 and the tools and the watcher on CPU 0
# (BENCH_PIN=0: unpinned), so that what a tool costs the target is its stops, not its
# share of a CPU the target needs.
# Figures, not a pass/fail test: this machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
B=${TK_BUILD_DIR:-build}
TK=$B/tracekit
WL=$B/workloads/stacks_shape
TMP=$(mktemp -d)
WPID=
cleanup() {
	[[ -n $WPID ]] && kill -9 "$WPID" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

for f in "$TK" "$WL"; do
	[[ -x $f ]] || { echo "bench-stacks: $f missing: run make" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "bench-stacks: run as root" >&2; exit 1; }

PIN_TARGET=() PIN_TOOL=()
if [[ ${BENCH_PIN:-1} == 1 ]] && (($(nproc) >= 2)) && command -v taskset >/dev/null; then
	PIN_TARGET=(taskset -c 1) PIN_TOOL=(taskset -c 0)
fi

start_target() {
	"${PIN_TARGET[@]}" "$WL" -t 1000 "$@" >"$TMP/wl.out" &
	WPID=$!
	for _ in $(seq 100); do
		[[ -s $TMP/wl.out ]] && break
		sleep 0.1
	done
	read -r _ _ _ PROGRESS _ < "$TMP/wl.out"
	sleep 0.5
}

# run.py TOOL PID PROGRESS_ADDR TIMEOUT -- CMD...: one run, watched; prints
# "wall_s threads rate_kept_pct longest_still_ms status"
cat > "$TMP/run.py" <<'PY'
import os, subprocess, sys, threading, time
tool, pid, addr, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 16), float(sys.argv[4])
cmd = sys.argv[6:]
fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
def counter():
    return int.from_bytes(os.pread(fd, 8, addr), "little")
def watch(stop, out):
    last, since, longest, first = counter(), time.monotonic(), 0.0, None
    t0 = time.monotonic()
    while not stop.is_set():
        v, now = counter(), time.monotonic()
        if v != last:
            longest = max(longest, now - since)
            last, since = v, now
        time.sleep(0.0005)
    longest = max(longest, time.monotonic() - since)
    out.append((last, time.monotonic() - t0, longest))
# the baseline: the counter's rate over a second without any tool
v0, t0 = counter(), time.monotonic(); time.sleep(1.0); base = (counter() - v0) / (time.monotonic() - t0)
stop, res = threading.Event(), []
v0 = counter()
th = threading.Thread(target=watch, args=(stop, res)); th.start()
t0 = time.monotonic()
try:
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=limit)
    wall, status, out = time.monotonic() - t0, "ok", p.stdout.decode(errors="replace")
except subprocess.TimeoutExpired as e:
    wall, status, out = time.monotonic() - t0, "hung", ""
stop.set(); th.join()
last, dur, longest = res[0]
rate = (last - v0) / dur
if tool.startswith("tk"):
    threads = sum(1 for l in out.splitlines() if l.startswith("    pid "))
elif tool == "gdb":
    threads = sum(1 for l in out.splitlines() if l.startswith("Thread "))
else:
    threads = sum(1 for l in out.splitlines() if l.startswith("TID "))
print(f"{wall:.3f} {threads} {100 * rate / base:.0f} {longest * 1000:.0f} {status}")
PY

median() { sort -n | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "%s (%s-%s)", m, a[1], a[NR]}'; }

bench() {	# NAME TIMEOUT CMD...
	local name=$1 limit=$2 i line
	shift 2
	: > "$TMP/$name.res"
	for ((i = 0; i < ROUNDS; i++)); do
		line=$("${PIN_TOOL[@]}" python3 "$TMP/run.py" "$name" "$WPID" "$PROGRESS" "$limit" \
			-- "$@")
		echo "$line" >> "$TMP/$name.res"
	done
	printf '%-9s wall s %-22s threads %-5s throughput kept %% %-14s longest stand-still ms %s\n' \
		"$name" "$(cut -d' ' -f1 "$TMP/$name.res" | median)" \
		"$(cut -d' ' -f2 "$TMP/$name.res" | sort -n | tail -1)" \
		"$(cut -d' ' -f3 "$TMP/$name.res" | median)" \
		"$(cut -d' ' -f4 "$TMP/$name.res" | median)"
	grep -q hung "$TMP/$name.res" && echo "          ($(grep -c hung "$TMP/$name.res") of $ROUNDS hung)"
	return 0
}

start_target -n
echo "target: stacks_shape -t 1000 -n, pid $WPID, $(ls /proc/$WPID/task | wc -l) threads; $ROUNDS rounds;" \
	"${PIN_TARGET[*]:-unpinned}${PIN_TOOL:+ (tools: ${PIN_TOOL[*]})}"
bench tk-bpf 60 "$TK" stacks -p "$WPID" --backend bpf
bench tk-proc 60 "$TK" stacks -p "$WPID" --backend proc
command -v gdb >/dev/null && bench gdb 60 gdb -batch -nx -p "$WPID" -ex "thread apply all bt"
command -v eu-stack >/dev/null && bench eu-stack 60 eu-stack -p "$WPID"
kill -9 "$WPID"; wait "$WPID" 2>/dev/null || true; WPID=
if [[ ${BENCH_HUNG:-0} == 1 ]]; then
	start_target -v
	echo "target with a D thread (vfork parent), pid $WPID"
	ROUNDS=1
	bench tk-bpf 60 "$TK" stacks -p "$WPID" --backend bpf
	command -v gdb >/dev/null && bench gdb 15 gdb -batch -nx -p "$WPID" -ex "thread apply all bt"
	command -v eu-stack >/dev/null && bench eu-stack 15 eu-stack -p "$WPID"
fi
