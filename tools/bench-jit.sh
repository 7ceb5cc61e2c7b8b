#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Whole stacks through JIT code: the share of a JIT leaf's samples that carry its caller
# and reach the native start (_start, __libc_start_main, start_thread or clone3), for
# node and a JVM, on both backends, read back with go tool pprof.
#   tools/bench-jit.sh [ROUNDS]        (default 3; as root; after `make`)
# Rows (each round runs every row once, in a shuffled order; medians (min max)):
#   node --perf-basic-prof   tests/workloads/jit_chain.js, 5 s, with
#                            --interpreted-frames-native-stack --no-turbo-inlining
#   node --perf-prof         the same, named from the jitdump it writes (no perf map)
#   java (asked)             tests/workloads/JitChain.java, 5 s, -XX:+PreserveFramePointer,
#                            the chain not inlined; tracekit asks the JVM for its perf map
# each as `tracekit cpu --backend bpf|perf -F 499 --user-only -o X.pb.gz -- CMD`, leaf
# leafHot, caller handler; and the frames of JIT code left unnamed (jit_unnamed_frames).
# The node and java of this machine are used (Debian's nodejs and openjdk-17-jdk-headless
# on a fresh one); their versions are printed. Target: >= 95 % on every row.
# Figures, not a pass/fail test: this machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
ROUNDS=${1:-3}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS]" >&2; exit 2; }
B=${TK_BUILD_DIR:-build}
TK=$B/tracekit
TMP=$(mktemp -d)
chmod 755 "$TMP"
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

tools/install-deps.sh
[[ -x $TK ]] || { echo "bench-jit: $TK missing: run make" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "bench-jit: run as root" >&2; exit 1; }
for t in node java javac go python3; do
	command -v "$t" >/dev/null || { echo "bench-jit: $t missing (tools/install-deps.sh)" >&2
					exit 1; }
done
SCRIPT=$(realpath tests/workloads/jit_chain.js)
mkdir -p "$TMP/classes"
javac -d "$TMP/classes" tests/workloads/JitChain.java
chmod -R a+rX "$TMP/classes"
NODE_FLAGS="--interpreted-frames-native-stack --no-turbo-inlining"
JAVA_FLAGS="-XX:+PreserveFramePointer -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,JitChain::*"

# share PB: "LEAF_SAMPLES WHOLE_SAMPLES JIT_UNNAMED" of leafHot <- handler ... start
share() {
	HOME=${HOME:-/tmp} go tool pprof -traces -sample_index=samples "$1" 2>/dev/null |
		python3 -c '
import re, sys
roots = {"_start", "__libc_start_main", "start_thread", "clone3", "clone", "__clone"}
def fn(name, f):
    return re.search(r"[:~^+*.]" + f + r"([ (]|$)", name) is not None
leaf = whole = 0
for block in sys.stdin.read().split("-----------+")[1:]:
    frames, n = [], 0
    for line in block.split("\n")[1:]:
        s = line.strip()
        if not s or re.match(r"^[a-z_]+:  ", s):
            continue
        m = re.match(r"^(\d+)\s+(.*)$", s)
        if m and not frames:
            n, s = int(m.group(1)), m.group(2)
        frames.append(s)
    if frames and fn(frames[0], "leafHot"):
        leaf += n
        if len(frames) >= 3 and fn(frames[1], "handler") and frames[-1] in roots:
            whole += n
print(leaf, whole, end=" ")'
	HOME=${HOME:-/tmp} go tool pprof -comments "$1" 2>/dev/null |
		sed -n 's/^lost: jit_unnamed_frames=//p' | head -1
}

# run ROW BACKEND: one capture, its figures appended to $TMP/ROW.BACKEND
run() {
	local row=$1 be=$2 pb=$TMP/$1.$2.pb.gz cmd
	case $row in
	node-map) cmd="sh -c 'cd $TMP && exec node --perf-basic-prof $NODE_FLAGS $SCRIPT 5000'" ;;
	node-jitdump) cmd="sh -c 'cd $TMP && exec node --perf-prof $NODE_FLAGS $SCRIPT 5000'" ;;
	java) cmd="java $JAVA_FLAGS -cp $TMP/classes JitChain 5000" ;;
	esac
	eval "$TK cpu --backend $be -F 499 --user-only -o $pb -- $cmd" >/dev/null 2>"$TMP/err"
	share "$pb" >>"$TMP/$row.$be"
	rm -f "$TMP"/jit-*.dump "$TMP"/isolate-*.log
}

stats() { sort -g | awk '{a[NR]=$1} END {printf "%s %s %s\n", a[int((NR+1)/2)], a[1], a[NR]}'; }
mmm() {
	local m lo hi
	read -r m lo hi < <(tr ' ' '\n' <<<"$1" | grep . | stats)
	printf "${2:-%.1f} (${2:-%.1f} ${2:-%.1f})" "$m" "$lo" "$hi"
}

echo "node $(node --version), $(java -version 2>&1 | head -1)"
ROWS=(node-map node-jitdump java)
for ((r = 1; r <= ROUNDS; r++)); do
	for job in $(for row in "${ROWS[@]}"; do for be in bpf perf; do echo "$row.$be"; done
		     done | shuf); do
		run "${job%.*}" "${job#*.}"
	done
	echo "round $r of $ROUNDS done" >&2
done

printf '\n%-22s %-5s %-22s %-18s %-14s %s\n' "runtime" "back" "whole chains %" \
	"leaf samples" "JIT unnamed" "target >= 95 %"
for row in "${ROWS[@]}"; do
	for be in bpf perf; do
		pct="" leaf="" unnamed=""
		while read -r l w u; do
			pct+=" $(awk -v l="$l" -v w="$w" 'BEGIN { printf "%.2f", l ? 100 * w / l : 0 }')"
			leaf+=" $l"
			unnamed+=" ${u:-0}"
		done <"$TMP/$row.$be"
		med=$(tr ' ' '\n' <<<"$pct" | grep . | stats | cut -d' ' -f1)
		case $row in
		node-map) name="node --perf-basic-prof" ;;
		node-jitdump) name="node --perf-prof" ;;
		java) name="java (asked)" ;;
		esac
		printf '%-22s %-5s %-22s %-18s %-14s %s\n' "$name" "$be" "$(mmm "$pct")" \
			"$(mmm "$leaf" %.0f)" "$(mmm "$unnamed" %.0f)" \
			"$(awk -v m="$med" 'BEGIN { print (m >= 95) ? "met" : "NOT met" }')"
	done
done
