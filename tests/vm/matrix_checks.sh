# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The kernel matrix's checks (sourced by tests/vm/matrix.sh): each reads the files a run
# left, on the host or sent back by a guest, and reports through ok/fail/skip/expect,
# which matrix.sh defines, into the kernel K and test T it has set.
# expect() evals its condition: the single quotes are deliberate
# shellcheck shell=bash disable=SC2016,SC2034

# matrix.sh has them already; said again so that they are maps here too (and to shellcheck)
declare -gA ATT CELL

# ---- shared checks: they read files, wherever the run happened -----------------------

# the sum of the folded counts of lines whose frames match $2 (a regex), in file $1
folded_sum() {
	awk -v re="$2" '{ n = $NF; $NF = ""; sub(/ $/, ""); if ($0 ~ re) s += n } END { print s + 0 }' \
		"$1" 2>/dev/null || echo 0
}

# field of one caps entry, or "<missing>"
entry() { jq -r --arg k "$1" --arg f "$2" '.entries[$k][$f] // "<missing>"' "$3" 2>/dev/null; }
explain() { jq -r --arg k "$1" '.entries[$k] | "status=\(.status) value=\(.value) reason=\(.reason)"' "$2"; }

# stderr file $1 without libbpf's informational lines (-v), which would bury the reason
stderr_why() {
	awk '!/^libbpf: / || /fail|error|denied|invalid|refus|incompatib|unknown|cannot|unable/' \
		"$1" 2>/dev/null
}
# $1 exit status file or number, $2 stderr file: "exit N; stderr: ..."
why_rc() {
	local rc=$1
	[[ -f $rc ]] && rc=$(cat "$rc")
	echo "exit ${rc:-<none>}; stderr: $(stderr_why "$2" | head -c 1500 | tr '\n' ' ')"
}
rc_of() { cat "$1" 2>/dev/null || echo "<none>"; }

# caps: $1 caps JSON, $2 its rc, $3 its stderr, $4 the release it must report
check_caps_common() {
	local caps=$1 rc=$2 err=$3 release=$4 k s r
	T=caps
	[[ -f $rc ]] && rc=$(cat "$rc")
	expect "tracekit caps --json exits 0" '[[ $rc == 0 ]]' "$(why_rc "$rc" "$err")"
	if ! jq -e '.schema == "tracekit.caps/1"' "$caps" >/dev/null 2>&1; then
		fail "caps output is tracekit.caps/1 JSON" "$(head -c 2000 "$caps" 2>/dev/null)"
		return 1
	fi
	ok "caps output is tracekit.caps/1 JSON"
	r=$(jq -r '.kernel.release' "$caps")
	# a glob: a guest whose booted release is unknown passes "SERIES.*"
	expect "kernel.release" '[[ $r == $release ]]' "got $r, want $release"
	for k in "${NEEDED[@]}"; do
		s=$(entry "$k" status "$caps")
		expect "$k" '[[ $s == supported ]]' "$(explain "$k" "$caps")"
	done
	# the attach row: what caps chose and found
	ATT[$K/cpu]=$(jq -r '.backends.cpu.backend // "?"' "$caps")
	ATT[$K/alloc]=$(jq -r '.backends.alloc.backend // "?"' "$caps")
	ATT[$K/numa]="$(jq -r '.backends.numa.backend // "?"' "$caps") (the caps choice; no report)"
	ATT[$K/fentry]=$(entry bpf.prog.fentry status "$caps")
	ATT[$K/kprobe]=$(entry bpf.prog.kprobe status "$caps")
	ATT[$K/misplaced_*]=$(entry function.migrate_misplaced value "$caps" | sed s/^migrate_misplaced_//)
	return 0
}

# cpu: $1 test name (cpu, cpu-perf), $2 folded file, $3 the profile's JSON, $4 rc, $5 stderr,
# $6 the backend it must have used ("" any)
check_cpu() {
	local name=$1 folded=$2 json=$3 rc=$4 err=$5 want=$6 hot cold pct backend
	T=$name
	if [[ $rc != 0 ]]; then
		fail "$name: tracekit cpu exits 0" "$(why_rc "$rc" "$err")"
		return
	fi
	ok "$name: tracekit cpu exits 0"
	backend=$(jq -r '.backend // "?"' "$json" 2>/dev/null || echo "?")
	case $name in
	cpu | cpu-perf) ATT[$K/$name]=$backend ;;	# the attach row; nobtf-cpu has none
	esac
	if [[ -n $want ]]; then
		expect "$name: backend $want" '[[ $backend == "$want" ]]' "the profile says backend $backend;" \
			"stderr: $(stderr_why "$err" | grep '^tracekit: ' | head -c 600 | tr '\n' ' ')"
	fi
	hot=$(folded_sum "$folded" ';caller;hot(;|$)')
	cold=$(folded_sum "$folded" ';caller;cold(;|$)')
	if ((hot + cold < 100)); then
		fail "$name: hot and cold under caller" "only $hot + $cold samples under caller;" \
			"top: $(sort -t' ' -k2 -n -r "$folded" 2>/dev/null | head -n3 | tr '\n' '|')"
		return
	fi
	pct=$((100 * hot / (hot + cold)))
	expect "$name: hot $pct % of hot+cold under caller ($hot/$((hot + cold)), want 75 ± 10)" \
		'((pct >= 65 && pct <= 85))' "folded: $(tr '\n' '|' <"$folded" | head -c 800)"
}

# unwinding without frame pointers: $1 test name (unwind, unwind-perf), $2 folded file, $3 rc,
# $4 stderr. unw_chain burns under main → run → stage_a → stage_b → qsort_r (glibc) → compare.
# off-CPU time of cpu_offcpu (30 ms in off_long, 10 ms in off_short in turn), --view off-cpu
# folded stacks: their counts are nanoseconds. The off_long share 75 ± 8 %.
check_offcpu() {
	local name=$1 folded=$2 rc=$3 err=$4 note=$5 lng shrt pct
	T=$name
	# the attach row: "sched_switch (tp_btf)" (or raw_tp, and why), from the profile's comment
	# (tp_btf, raw_tp and why, sched_switch samples or context-switches: the perf backend's)
	ATT[$K/$name]=$(sed -n '/^off-CPU time: /{ s///; s/^sched_switch (\(.*\))$/\1/
		s/^perf sched:sched_switch.*/sched_switch samples/; s/^perf context-switches.*/context-switches/
		p; }' "$note" 2>/dev/null | head -n1)
	if [[ $rc != 0 ]]; then
		fail "$name: tracekit cpu --off-cpu exits 0" "$(why_rc "$rc" "$err")"
		return
	fi
	ok "$name: tracekit cpu --off-cpu exits 0"
	lng=$(folded_sum "$folded" ';off_long(;|$)')
	shrt=$(folded_sum "$folded" ';off_short(;|$)')
	if ((lng + shrt < 500000000)); then
		fail "$name: waits under off_long and off_short" "only $lng + $shrt ns;" \
			"top: $(sort -t' ' -k2 -n -r "$folded" 2>/dev/null | head -n3 | tr '\n' '|')"
		return
	fi
	pct=$((100 * lng / (lng + shrt)))
	expect "$name: off_long $pct % of the waits under off_long+off_short (want 75 ± 8)" \
		'((pct >= 67 && pct <= 83))' "folded: $(tr '\n' '|' <"$folded" | head -c 800)"
}

# tracekit stacks on stacks_shape: $1 name, $2 the workload's line, $3 the JSON, $4 rc,
# $5 stderr, $6 the backend expected. The waiter names the mutex's holder, both whole to
# their thread's start; the D thread is in D; the backend is the one caps chose.
check_stacks() {
	local name=$1 shape=$2 json=$3 rc=$4 err=$5 want=$6 holder waiter dthread got how
	T=$name
	read -r _ _ _ _ _ _ _ _ _ holder _ waiter _ _ _ dthread _ <"$shape" 2>/dev/null
	if [[ $rc != 0 ]]; then
		fail "$name: tracekit stacks exits 0" "$(why_rc "$rc" "$err")"
		return
	fi
	ok "$name: tracekit stacks exits 0"
	how=$(jq -r '.backend_reason' "$json" 2>/dev/null)
	ATT[$K/$name]=$(sed -n 's/.*(\(iter[.s]*\/task\).*/\1/p' <<<"$how" | head -n1)
	[[ -z ${ATT[$K/$name]} ]] && ATT[$K/$name]=$(jq -r '.backend' "$json" 2>/dev/null)
	got=$(jq -r '.backend' "$json" 2>/dev/null)
	expect "$name: backend $got (want $want)" '[[ $got == "$want" ]]' "reason: $how"
	expect "$name: the waiter names the holder (tid $holder), both whole" \
		'jq -e --argjson w "${waiter:-0}" --argjson h "${holder:-0}" "
			([.snapshots[0].threads[] | select(.tid == \$w)][0] |
			 .holder_tid == \$h and .user_whole) and
			([.snapshots[0].threads[] | select(.tid == \$h)][0] | .user_whole)" \
			"$json" >/dev/null' \
		"shape: $(head -c 300 "$shape" 2>/dev/null); json: $(head -c 1500 "$json" 2>/dev/null)"
	expect "$name: the D thread (tid $dthread) is in D" \
		'jq -e --argjson d "${dthread:-0}" "
			[.snapshots[0].threads[] | select(.tid == \$d)][0].state == \"D\"" \
			"$json" >/dev/null' "json: $(head -c 600 "$json" 2>/dev/null)"
}

# waits that span the capture: $1 the JSON profile of cpu --off-cpu -d 2 -p cpu_offcpu_span,
# $2 rc, $3 stderr. Each blocked thread's wait, begun before the capture, is the window's:
# at least 2 s - 5 %, at most the profile's duration (from before the load to after the stop).
check_offspan() {
	local json=$1 rc=$2 err=$3 fn ns why dur
	T=off-cpu-span
	if [[ $rc != 0 ]]; then
		fail "off-cpu-span: tracekit cpu --off-cpu -p exits 0" "$(why_rc "$rc" "$err")"
		return
	fi
	why=$(jq -r '[.comments[] | select(test("off-CPU time: .*(were off the CPU|not seen)"))][0]
		// "no note"' "$json" 2>/dev/null)
	# the capture's own length (its duration) bounds them: TCG stops slowly after the 2 s
	dur=$(jq '.duration_nanos // 0' "$json" 2>/dev/null)
	dur=${dur:-0}
	for fn in blocked_read blocked_lock; do
		ns=$(jq --arg fn "$fn" '[.stacks[] | select(.off_cpu_began == "before_capture")
			| select(any(.frames[]; .name == $fn)) | .values[2]] | add // 0 | floor' \
			"$json" 2>/dev/null)
		ns=${ns:-0}
		expect "off-cpu-span: $fn waited $ns ns from before the capture (want 1.9 s to the $dur ns of the capture)" \
			'((ns >= 1900000000 && ns <= dur))' "$why"
	done
}

# tracekit record over a command: $1 rc, $2 stderr, $3 the manifest, $4 the allocation summary.
# Every collector is recorded (the stacks snapshots too), and the allocation profile names
# alloc_leak's leak_site.
check_record() {
	local rc=$1 err=$2 manifest=$3 alloc=$4 st
	T=record
	if [[ $rc != 0 ]]; then
		fail "record: tracekit record exits 0" "$(why_rc "$rc" "$err")"
		return
	fi
	ok "record: tracekit record exits 0"
	st=$(jq -r '[.collectors[] | .name + "=" + .status] | join(" ")' "$manifest" 2>/dev/null)
	expect "record: every collector recorded ($st)" \
		'[[ $st == "alloc=recorded cpu=recorded numa=recorded stacks=recorded" ]]' \
		"manifest: $(head -c 800 "$manifest" 2>/dev/null)"
	expect "record: the allocation profile names leak_site" 'grep -q leak_site "$alloc"' \
		"alloc.txt: $(head -c 600 "$alloc" 2>/dev/null)"
}

check_unwind() {
	local name=$1 folded=$2 rc=$3 err=$4 burn whole
	T=$name
	if [[ $rc != 0 ]]; then
		fail "$name: tracekit cpu exits 0" "$(why_rc "$rc" "$err")"
		return
	fi
	burn=$(folded_sum "$folded" ';burn$')
	whole=$(folded_sum "$folded" ';main;run;stage_a;stage_b;qsort_r;.*;burn$')
	expect "$name: $whole of $burn samples in burn carry the chain to main (want >= 97 %)" \
		'((burn >= 100 && whole * 100 >= burn * 97))' \
		"top: $(sort -t' ' -k2 -n -r "$folded" 2>/dev/null | head -n3 | tr '\n' '|')"
}

# Python frames: $1 test name, $2 folded file, $3 rc, $4 stderr. tests/workloads/py/pywork.py
# mix on Debian's python3.11: leaf_hot and leaf_cold 3:1 under drive_a/drive_b → handler, and
# leaf_hot's samples whole from _start through Py_BytesMain and the interpreter loop.
check_python() {
	local name=$1 folded=$2 rc=$3 err=$4 txt=${5:-} hot cold whole pct cut
	T=$name
	if [[ $rc != 0 ]]; then
		fail "$name: tracekit cpu exits 0" "$(why_rc "$rc" "$err")"
		return
	fi
	hot=$(folded_sum "$folded" ';handler;leaf_hot(;|$)')
	cold=$(folded_sum "$folded" ';handler;leaf_cold(;|$)')
	whole=$(folded_sum "$folded" \
		';_start;.*;Py_BytesMain;.*;_PyEval_EvalFrameDefault;.*;drive_[ab];handler;leaf_hot(;|$)')
	if ((hot + cold < 100)); then
		fail "$name: Python frames leaf_hot and leaf_cold" "only $hot + $cold samples;" \
			"top: $(sort -t' ' -k2 -n -r "$folded" 2>/dev/null | head -n3 | tr '\n' '|')"
		return
	fi
	pct=$((100 * hot / (hot + cold)))
	expect "$name: leaf_hot $pct % of the two leaves ($hot/$((hot + cold)), want 75 ± 8)" \
		'((pct >= 67 && pct <= 83))' "top: $(sort -t' ' -k2 -n -r "$folded" | head -n3 | tr '\n' '|')"
	# on failure: the heaviest leaf_hot stacks that are not whole, and the run's losses
	cut=$(grep ';handler;leaf_hot' "$folded" | grep -v ';_start;' | sort -t' ' -k2 -n -r |
		head -n3 | tr '\n' '|')
	expect "$name: $whole of $hot leaf_hot samples whole to _start (want >= 97 %)" \
		'((whole * 100 >= hot * 97))' "not whole: $cut" \
		"$([[ -n $txt ]] && grep -E -o '(python|unwind)_[a-z_]+=[1-9][0-9]*' "$txt" | tr '\n' ' ')"
}

# Whether kernel release $1 (uname -r) is at least $2.$3.
release_ge() {
	awk -v r="$1" -v maj="$2" -v min="$3" 'BEGIN {
		split(r, v, /[.+-]/); exit !(v[1] + 0 > maj || (v[1] + 0 == maj && v[2] + 0 >= min)) }'
}

# How the alloc run whose -v stderr is $1 attached: "in-process sampler", "uprobe
# sessions", "uprobes and uretprobes" or "?"
alloc_how() {
	grep -o -m1 -E 'in-process sampler|uprobe sessions|uprobes and uretprobes' "$1" 2>/dev/null ||
		echo "?"
}

# alloc: $1 dir with alloc_{full,sampled,growth}.{out,rc,stderr.out}, $2 the kernel's release
# (uname -r): uprobe sessions (BPF_TRACE_UPROBE_SESSION) came in 6.13, so from there on the
# allocator's uprobes must be sessions, before it entry/return pairs
check_alloc() {
	local dir=$1 release=$2 v name how want s src
	if release_ge "$release" 6 13; then
		want="uprobe sessions"
	else
		want="uprobes and uretprobes"
	fi
	for name in full sampled growth; do
		T=alloc-$name
		if [[ $(rc_of "$dir/alloc_$name.rc") != 0 ]]; then
			fail "alloc $name exits 0" "$(why_rc "$dir/alloc_$name.rc" "$dir/alloc_$name.stderr.out")"
			continue
		fi
		ok "alloc $name exits 0"
		case $name in
		full)
			v=$(folded_sum "$dir/alloc_full.out" ';leak_site$')
			expect "alloc full: leak_site 1048576 bytes in use" '[[ $v == 1048576 ]]' "got $v"
			# full always traps in the kernel: the uprobes' kind is always to see
			how=$(alloc_how "$dir/alloc_full.stderr.out")
			expect "alloc full: $want (kernel $release)" '[[ $how == "$want" ]]' \
				"$(grep -i 'backend' "$dir/alloc_full.stderr.out" | head -c 500)"
			;;
		sampled)
			v=$(folded_sum "$dir/alloc_sampled.out" ';leak_site$')
			expect "alloc sampled: leak_site within 5 % ($v of 16777216)" \
				'((v >= 16777216 * 95 / 100 && v <= 16777216 * 105 / 100))' "got $v of 16777216"
			how=$(alloc_how "$dir/alloc_sampled.stderr.out")
			case $how in
			"in-process sampler") ATT[$K/alloc]="${ATT[$K/alloc]:-?} preload" ;;
			"uprobe sessions") ATT[$K/alloc]="${ATT[$K/alloc]:-?} sessions" ;;
			"uprobes and uretprobes") ATT[$K/alloc]="${ATT[$K/alloc]:-?} u(ret)probes" ;;
			esac
			# a preloaded sampler (the host's dynamic workload) has no uprobes to check
			if [[ $how != "in-process sampler" ]]; then
				expect "alloc sampled: $want (kernel $release)" '[[ $how == "$want" ]]' \
					"$(grep -i 'backend' "$dir/alloc_sampled.stderr.out" | head -c 500)"
			fi
			;;
		growth)
			v=$(folded_sum "$dir/alloc_growth.out" ';leak_site;\\[page fault\\]$')
			expect "alloc growth: leak_site's page faults ($v of 4194304)" \
				'((v >= 4194304 * 75 / 100 && v <= 4194304 + 65536))' "got $v of 4194304"
			# the fault source by what the kernel has (caps), not by the architecture:
			# the tracepoint, or the page-faults perf event where there is none (arm64)
			s=$(entry tracepoint.page_fault_user status "$dir/caps.out")
			if [[ $s == supported ]]; then
				src="the raw tracepoint page_fault_user" ATT[$K/growth]="raw_tp page_fault_user"
			else
				src="the software perf event page-faults" ATT[$K/growth]="perf page-faults"
			fi
			expect "alloc growth: page faults by $src (caps: tracepoint.page_fault_user $s)" \
				'grep -qF "page faults by $src" "$dir/alloc_growth.stderr.out"' \
				"$(grep -i 'backend' "$dir/alloc_growth.stderr.out" | head -c 500)"
			;;
		esac
	done
}

# ---- numa report (docs/numa-json.md) ------------------------------------------------
# Pages of one reason in a "reasons"/"by_reason" object: a number, or an object with
# pages (or succeeded).
JQ_PAGES='def pages: if type == "number" then . elif type == "object" then (.pages // .succeeded // 0) else 0 end;'
numa_reason() { jq -r --arg r "$2" "$JQ_PAGES"' .reasons[$r] | pages' "$1" 2>/dev/null || echo 0; }
numa_proc_reason() {
	jq -r --argjson p "$2" --arg r "$3" "$JQ_PAGES"' [.processes[]? | select(.pid == $p) |
		.by_reason[$r] | pages] | add // 0' "$1" 2>/dev/null || echo 0
}
numa_pair() {
	jq -r --argjson s "$2" --argjson d "$3" \
		'[.pairs[]? | select(.src == $s and .dst == $d) | .pages] | add // 0' "$1" 2>/dev/null || echo 0
}
numa_total() {
	jq -r "$JQ_PAGES"' [.reasons // {} | to_entries[] | .value | pages] | add // 0' "$1" 2>/dev/null ||
		echo 0
}
# how many misplaced-page migrations were timed
numa_latency_count() {
	jq -r '(.latency // {}) | if type == "object" then (.count // 0) else 0 end' "$1" 2>/dev/null ||
		echo 0
}
# a /proc/vmstat counter's growth between two files of "name value" lines
vmstat_delta() {
	awk -v k="$1" 'FNR == NR { if ($1 == k) a = $2; next } $1 == k { b = $2 } END { print b - a }' \
		"$2" "$3" 2>/dev/null || echo 0
}
# |a - b| <= max(64, 2 % of b)
close_to() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; t = b * 0.02; if (t < 64) t = 64; exit !(d <= t) }'; }

# the common part of a numa run: $1 JSON, $2 rc, $3 stderr; returns 1 when nothing to check
check_numa_report() {
	local json=$1 rc=$2 err=$3 backend
	if [[ $rc != 0 ]]; then
		fail "tracekit numa exits 0" "$(why_rc "$rc" "$err")"
		return 1
	fi
	ok "tracekit numa exits 0"
	if ! jq -e 'type == "object" and has("backend")' "$json" >/dev/null 2>&1; then
		fail "numa report is JSON with a backend" "$(head -c 1500 "$json" 2>/dev/null)"
		return 1
	fi
	backend=$(jq -r .backend "$json")
	expect "numa backend bpf" '[[ $backend == bpf ]]' "backend $backend; missing: $(jq -c .missing "$json")"
	ATT[$K/numa]="$backend: $(jq -r '.attach // "?"' "$json")"
	return 0
}

# numa_move in a guest: $1 the guest's sections folder
check_numa_move() {
	local d=$1 json=$1/numa_move.json.out pid v tot mig
	T=numa-move
	if [[ -e $d/move_skip.out ]]; then
		skip "numa move" "$(cat "$d/move_skip.out")"
		return
	fi
	if [[ $(rc_of "$d/move.rc") != 0 ]]; then
		fail "numa_move exits 0" "$(why_rc "$d/move.rc" "$d/move.stderr.out")"
	else
		ok "numa_move exits 0 ($(grep -o 'moved=[0-9]*' "$d/move.out" | head -n1))"
	fi
	check_numa_report "$json" "$(rc_of "$d/numa_move.rc")" "$d/numa_move.stderr.out" || return
	pid=$(sed -n 's/^pid=\([0-9][0-9]*\).*/\1/p' "$d/move.out" | head -n1)
	v=$(numa_proc_reason "$json" "${pid:-0}" syscall_or_cpuset)
	expect "numa move: numa_move (pid $pid) syscall_or_cpuset $v pages >= $MOVE_PAGES" \
		'((v >= MOVE_PAGES))' "processes: $(jq -c '.processes' "$json" | head -c 800)"
	v=$(numa_pair "$json" 0 1)
	if jq -e '(.pairs // []) | length > 0' "$json" >/dev/null 2>&1; then
		expect "numa move: node 0 → 1 $v pages >= $MOVE_PAGES" '((v >= MOVE_PAGES))' \
			"pairs: $(jq -c .pairs "$json")"
	elif [[ $(cat "$d/ftrace_direct.out" 2>/dev/null) == 0 ]]; then
		# node pairs come from fexit, which needs ftrace's direct calls (arm64 before 6.4)
		expect "numa move: no node pairs without fexit (no register_ftrace_direct), and missing says so" \
			'jq -e "any(.missing[]?; test(\"node pairs\"))" "$json" >/dev/null' \
			"missing: $(jq -c .missing "$json" | head -c 600)"
	else
		fail "numa move: node 0 → 1 pairs" "the guest has ftrace's direct calls (fexit), the report no pairs:" \
			"$(jq -r '[.missing[]? | select(test("node pairs"))] | join("; ") | .[0:300]' "$json")"
	fi
	tot=$(numa_total "$json")
	mig=$(vmstat_delta pgmigrate_success "$d/vmstat_move0.out" "$d/vmstat_move1.out")
	expect "numa move: all reasons $tot pages ≈ vmstat pgmigrate_success +$mig" \
		'((mig >= MOVE_PAGES)) && close_to "$tot" "$mig"' "reasons: $(jq -c .reasons "$json")"
}

# numa_balance in a guest: $1 the guest's sections folder
check_numa_balance() {
	local d=$1 json=$1/numa_bal.json.out pid v n1 mig lat
	T=numa-balance
	if [[ $(rc_of "$d/balance.rc") != 0 ]]; then
		fail "numa_balance exits 0" "$(why_rc "$d/balance.rc" "$d/balance.stderr.out")"
		return
	fi
	# the truth first: did balancing move the pages at all (the guest, not tracekit)
	n1=$(sed -n 's/.*node1_after=\([0-9][0-9]*\).*/\1/p' "$d/balance.out")
	mig=$(vmstat_delta numa_pages_migrated "$d/vmstat_bal0.out" "$d/vmstat_bal1.out")
	expect "numa balancing moved numa_balance's pages to node 1 (${n1:-?} of $BAL_PAGES, numa_pages_migrated +$mig)" \
		'((${n1:-0} >= BAL_PAGES * 9 / 10 && mig >= BAL_PAGES * 9 / 10))' \
		"$(tr '\n' ' ' <"$d/balance.out")"
	if [[ -e $d/numa_skip.out ]]; then
		skip "numa balancing report" "$(cat "$d/numa_skip.out")"
		return
	fi
	check_numa_report "$json" "$(rc_of "$d/numa_bal.rc")" "$d/numa_bal.stderr.out" || return
	pid=$(sed -n 's/^pid=\([0-9][0-9]*\).*/\1/p' "$d/balance.out" | head -n1)
	v=$(numa_proc_reason "$json" "${pid:-0}" numa_misplaced)
	expect "numa balance: numa_balance (pid $pid) numa_misplaced $v pages > 0" '((v > 0))' \
		"processes: $(jq -c '.processes' "$json" | head -c 800)"
	v=$(numa_reason "$json" numa_misplaced)
	expect "numa balance: numa_misplaced $v pages ≈ vmstat numa_pages_migrated +$mig" \
		'close_to "$v" "$mig"' "reasons: $(jq -c .reasons "$json")"
	# timed between migrate:mm_migrate_pages_start and mm_migrate_pages; where the guest's
	# tracefs has no start (5.10) the report must say so instead
	if [[ $(rc_of "$d/migrate_start_format.rc") == 0 ]] &&
		grep -q '^name: mm_migrate_pages_start$' "$d/migrate_start_format.out"; then
		lat=$(numa_latency_count "$json")
		expect "numa balance: misplaced-page migrations timed ($lat)" '((lat > 0))' \
			"latency: $(jq -c '.latency' "$json" | head -c 500); missing: $(jq -c .missing "$json")"
	else
		expect "numa balance: latency null, missing names mm_migrate_pages_start (not in tracefs)" \
			'jq -e ".latency == null and any(.missing[]; startswith(\"migrate:mm_migrate_pages_start: not in this kernel\"))" "$json" >/dev/null' \
			"latency: $(jq -c '.latency' "$json" | head -c 300); missing: $(jq -c .missing "$json")"
	fi
	# sched:sched_skip_vma_numa (6.7+) by the guest's own tracefs: a "skip_vma" object, or
	# null and a missing[] line
	if [[ $(rc_of "$d/skip_vma_format.rc") == 0 ]] &&
		grep -q '^name: sched_skip_vma_numa$' "$d/skip_vma_format.out"; then
		expect "numa balance: skip_vma is an object ($(jq -c .skip_vma "$json" | head -c 200))" \
			'jq -e "(.skip_vma | type) == \"object\" and .have.skip_vma" "$json" >/dev/null' \
			"missing: $(jq -c .missing "$json")"
	else
		expect "numa balance: skip_vma null, missing names sched_skip_vma_numa (not in tracefs)" \
			'jq -e ".skip_vma == null and any(.missing[]; startswith(\"sched_skip_vma_numa: not in this kernel\"))" "$json" >/dev/null' \
			"skip_vma: $(jq -c .skip_vma "$json"); missing: $(jq -c .missing "$json")"
	fi
}
