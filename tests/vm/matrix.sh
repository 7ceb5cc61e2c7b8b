#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The kernel matrix: every collector on every kernel tracekit is tested on.
#   host    this machine's kernel (6.18 here), build/tracekit and the dynamic workloads
#   5.10    Debian's 5.10 cloud kernel (bullseye)          } in two-node QEMU guests,
#   6.1     Debian's 6.1 cloud kernel (bookworm)           } build/tracekit-static and
#   6.12    Debian's 6.12 cloud kernel (bookworm-backports)} static workloads
#   newest  the newest cloud kernel in Debian sid (7.x)    }
#   arm64/5.10 arm64/6.1 arm64/6.12 arm64/newest  the same series' cloud-arm64 kernels, in
#           two-node qemu-system-aarch64 guests (-cpu max with pointer authentication and
#           BTI), running BUILD/arm64/tracekit-static and BUILD/arm64/workloads (make
#           ARCH=arm64 BUILD=BUILD/arm64 guest: cross-built, static, no frame pointers where
#           the x86 ones have none)
# (tests/vm/vm.sh fetches them; its header says from where.) Guests boot one after another:
# TCG uses both cores. One guest boot per kernel runs one payload that exercises every
# collector; the checks run here, on the host, with jq and awk, on what the guest sent
# back. What a kernel has is read from the guest itself (its /proc/kallsyms, its tracefs
# formats, uname -r), never from a table of series:
#   caps    `tracekit caps --json`: CO-RE works there, the report names what the kernel
#           really has (fentry, kprobes, migrate_misplaced_page or _folio as kallsyms
#           has it, the split field of mm_migrate_pages as its format has it, two nodes)
#   cpu     `tracekit cpu -F 499` on cpu_split (hot 75 % / cold 25 % under caller):
#           hot within 10 points of 75 %, with the chosen backend and --backend perf
#   unwind  `tracekit cpu` on unw_chain (no frame pointers): the chain to main through
#           static glibc's qsort_r, with both backends
#   off-cpu `tracekit cpu --off-cpu` on cpu_offcpu (30 ms / 10 ms waits in turn): the
#           off-CPU split 75 ± 8 %, with the chosen backend and --backend perf (off-cpu-perf:
#           sched_switch samples, from a tracefs of its own where none is mounted); without
#           kernel BTF (nobtf-off-cpu) the perf backend takes it, and the run says why bpf
#           was not used
#   stacks  (guests) `tracekit stacks -p` on stacks_shape, with the chosen backend (the plain
#           task iterator before 5.18, the sleepable one since) and with /proc
#           (stacks-proc): exit 0, the backend caps chose, the mutex waiter naming its
#           holder, both stacks whole, the D thread in D
#   off-cpu-span (guests) `tracekit cpu --off-cpu -d 2 -p` on cpu_offcpu_span: its two
#           threads blocked before the capture (read, a mutex) carry 2 s ± 5 % each under
#           blocked_read and blocked_lock, labelled off_cpu_began (the task iterator seeds
#           them); a kernel that refuses the iterator fails here, saying why
#   alloc   `tracekit alloc` full (the leak exactly), sampled (within 5 %), growth
#           (the leak's page faults, from the tracepoint page_fault_user, or the page-faults
#           perf event where caps says the kernel has none: arm64) on alloc_leak; the uprobes must be sessions on a
#           kernel of 6.13 or later (by uname -r) and entry/return pairs before
#   numa    (guests) `tracekit numa` while numa_move moves 64 MiB node 0 → 1 with
#           move_pages: >= 16384 pages, reason syscall_or_cpuset, for its pid, and
#           the total agrees with /proc/vmstat pgmigrate_success; and while NUMA
#           balancing moves numa_balance's 64 MiB to the node its task runs on:
#           numa_misplaced pages for its pid, agreeing with numa_pages_migrated, and
#           timed where tracefs has mm_migrate_pages_start; skip_vma an object where it
#           has sched_skip_vma_numa; each else null and named in missing. (host, one
#           node) numa starts, says its backend and what it cannot see.
#   python-trixie (one arm64 guest: TK_VM_TRIXIE) Debian trixie's arm64 userland, built with
#           pointer authentication and BTI (its python3.13 and libc 2.41: thousands of
#           paciasp), in a container root (unshare -m -p, chroot /trixie; tests/vm/py-bundle.sh
#           arm64 DIR trixie): the python checks on its 3.13, so the chains cross PAC-signed
#           frames of the interpreter and of libc whole
#   nobtf-* (the 6.12 guest only, to save time: TK_VM_NOBTF) the same tracekit in a
#           private mount namespace with an empty file bound over /sys/kernel/btf/vmlinux,
#           so libbpf finds no kernel BTF: caps reports bpf.btf unsupported with a
#           remedy; cpu still profiles with backend bpf (hot/cold as above); alloc full
#           finds the leak exactly with backend bpf; numa runs with backend vmstat and
#           says BTF is why.
# A check that cannot run says why (a SKIPPED line); nothing passes silently. Under CI
# (CI=true or 1) a kernel that cannot be fetched, or no QEMU, no busybox-static, no jq,
# is a failure, not a skip. A guest that does not reach TKVM-DONE after one retry fails.
# Output: one line per check, then a table test × kernel (columns: the host, then each
# guest's real release; cells pass, FAIL, skip with a numbered reason, "-" not run there)
# and the attach point each collector chose on each kernel, then the time of each part and
# "vm: N passed, N failed, N skipped". Exit 0 no check failed, 1 a check failed, 77 nothing
# could be tested or a kernel was skipped (no QEMU, no kernel, no jq; outside CI).
#   TK_VM_KERNELS   guest kernel series (default "5.10 6.1 6.12 newest arm64/5.10 arm64/6.1
#                   arm64/6.12 arm64/newest"; "" for none)
#   TK_VM_NOBTF     the series whose guest also runs the nobtf-* checks (default 6.12)
#   TK_VM_TRIXIE    the arm64 series whose guest also runs python-trixie (default arm64/newest)
#   TK_MATRIX_HOST  1 (default) also the host column, 0 not
#   TK_BUILD_DIR    where make put tracekit, tracekit-static, workloads/ (default build)
#   TK_VM_OUT       folder for guest logs (default $TK_BUILD_DIR/vm)
#   and vm.sh's TK_VM_* variables (cache, timeout, accelerator)
#
# jq, not python3, checks the JSON: jq is a Debian package listed in
# tools/install-deps.sh, while python3 on these machines comes from outside the
# Debian archive and so is not something CI can count on; awk cannot parse JSON.
# expect() evals its condition: the single quotes are deliberate
# shellcheck disable=SC2016,SC2317,SC2034
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
VM=tests/vm/vm.sh
B=${TK_BUILD_DIR:-build}
OUT=${TK_VM_OUT:-$B/vm}
KERNELS=${TK_VM_KERNELS-5.10 6.1 6.12 newest arm64/5.10 arm64/6.1 arm64/6.12 arm64/newest}
NOBTF=${TK_VM_NOBTF-6.12}
TRIXIE=${TK_VM_TRIXIE-arm64/newest}
HOST=${TK_MATRIX_HOST:-1}
# a guest's binaries: set per architecture by guest_arch
SBIN=$B/tracekit-static
W=$B/workloads
GARCH=x86

# guest_arch SERIES: the architecture of a guest (arm64/SERIES: arm64), and where its
# tracekit-static and workloads are
guest_arch() {
	if [[ $1 == arm64/* ]]; then
		GARCH=arm64 SBIN=$B/arm64/tracekit-static W=$B/arm64/workloads
	else
		GARCH=x86 SBIN=$B/tracekit-static W=$B/workloads
	fi
}
guest_qemu() {
	if [[ $1 == arm64/* ]]; then echo "${TK_VM_QEMU_ARM64:-qemu-system-aarch64} qemu-system-arm"
	else echo "${TK_VM_QEMU:-qemu-system-x86_64} qemu-system-x86"; fi
}

# needed on every kernel; the guests' kernels also have kprobes, and fentry where their
# kallsyms has ftrace's direct calls (register_ftrace_direct: every x86 guest; arm64 from
# 6.4 on, so not arm64's 5.10 and 6.1)
NEEDED=(bpf.syscall bpf.btf bpf.ringbuf bpf.core bpf.prog.tp_btf bpf.prog.uprobe bpf.prog.perf_event
	bpf.unwind)
GUEST_ALSO=(bpf.prog.kprobe)

MOVE_PAGES=16384	# numa_move: 64 MiB of 4 KiB pages
BAL_PAGES=16384		# numa_balance 15 64: the same

# ---- results: check lines, and the table's cells ------------------------------------
TESTS=(caps cpu cpu-perf unwind unwind-perf off-cpu off-cpu-perf off-cpu-span alloc-full alloc-sampled alloc-growth record numa-move
	numa-balance python stacks stacks-proc)
NOBTF_TESTS=(nobtf-caps nobtf-cpu nobtf-off-cpu nobtf-alloc nobtf-numa)	# rows of the TK_VM_NOBTF guest
TRIXIE_TESTS=(python-trixie)	# the row of the TK_VM_TRIXIE guest
ATTACH=(cpu cpu-perf off-cpu off-cpu-perf alloc growth numa fentry kprobe "misplaced_*" stacks)
declare -A CELL REASON_NO ATT LABEL
REASONS=()
passed=0 failed=0 skipped=0
K="" T=""	# the kernel and test the next check lines belong to

# a cell is the worst of its checks: fail > skip > pass
mark() {
	local key=$K/$T cur=${CELL[$K/$T]:-}
	case $1 in
	fail) CELL[$key]=FAIL ;;
	skip)
		[[ $cur == FAIL ]] && return
		local n=${REASON_NO[$2]:-}
		if [[ -z $n ]]; then
			REASONS+=("$2")
			n=${#REASONS[@]}
			REASON_NO[$2]=$n
		fi
		CELL[$key]="skip ($n)"
		;;
	pass) [[ -z $cur ]] && CELL[$key]=pass ;;
	esac
}
ok() {
	echo "[       OK ] $K $1"
	passed=$((passed + 1))
	mark pass
}
fail() {
	echo "[  FAILED  ] $K $1"
	shift
	local l
	for l in "$@"; do echo "             $l"; done
	failed=$((failed + 1))
	mark fail
}
skip() {
	echo "[ SKIPPED  ] $K $1: $2"
	skipped=$((skipped + 1))
	mark skip "$2"
}
# expect NAME COND DETAIL...: ok or fail by the exit status of COND (a string for eval)
expect() {
	local name=$1 cond=$2
	shift 2
	if eval "$cond"; then ok "$name"; else fail "$name" "$@"; fi
}

# CI installs everything the matrix needs: there a kernel or tool that cannot be had is
# something broken, and a skip would let a shrunken matrix pass
in_ci() { [[ ${CI:-} == true || ${CI:-} == 1 ]]; }
# unavailable NAME WHY: a skip, or under CI a failure
unavailable() {
	if in_ci; then fail "$1" "$2 (CI=$CI: a failure here)"; else skip "$1" "$2"; fi
}

skip_all() {
	if in_ci; then
		echo "vm: error: $* (CI=$CI: a failure here)" >&2
		echo "vm: 0 passed, 1 failed, 0 skipped"
		exit 1
	fi
	echo "vm: skip: $*"
	exit 77
}

# shellcheck source=tests/vm/matrix_checks.sh
. tests/vm/matrix_checks.sh

# ---- the guests ---------------------------------------------------------------------
guest_files=() TRIXIE_SKIP="" TRIXIE_PAC="" NUMA_SKIP="" MOVE_SKIP="" CPU_SKIP="" BAL_SKIP="" UNW_SKIP="" OFF_SKIP="" PY_SKIP=""
STK_SKIP=""
SPAN_SKIP=""
# Debian bookworm's CPython 3.11 for a guest of $GARCH (tests/vm/py-bundle.sh: this host's for
# x86, bookworm's arm64 packages for arm64): the interpreter, its libraries, the stdlib modules
# tests/workloads/py/pywork.py imports; SRC:DEST lines into guest_files.
py_bundle() {
	local dir=$1 lines rc
	lines=$(tests/vm/py-bundle.sh "$GARCH" "$dir" 2>"$dir.err")
	rc=$?
	if ((rc != 0)); then
		PY_SKIP="tests/vm/py-bundle.sh $GARCH: $(tail -n1 "$dir.err")"
		return
	fi
	mapfile -t -O "${#guest_files[@]}" guest_files <<<"$lines"
}
# What goes into a guest of architecture $GARCH (guest_arch), and what cannot be tested
# there and why.
plan_guests() {
	local f
	NUMA_SKIP="" MOVE_SKIP="" CPU_SKIP="" BAL_SKIP="" UNW_SKIP="" OFF_SKIP="" PY_SKIP=""
	STK_SKIP="" SPAN_SKIP=""
	for f in "$SBIN" "$W/alloc_leak_static"; do
		if [[ ! -x $f ]]; then
			# the thing under test or its fixture is missing: a failure, not a skip
			K=all T=caps
			if [[ $GARCH == arm64 ]]; then
				fail "$f exists" "run: make ARCH=arm64 BUILD=$B/arm64 guest"
			else
				fail "$f exists" "run: make static and make"
			fi
			return 1
		fi
	done
	guest_files=("$SBIN:/bin/tracekit" "$W/alloc_leak_static:/bin/alloc_leak")
	# workloads newer than the build folder: those tests say so (make builds them)
	if [[ -x $W/cpu_split_static ]]; then
		guest_files+=("$W/cpu_split_static:/bin/cpu_split_static")
	else
		CPU_SKIP="no $W/cpu_split_static (make)"
	fi
	if [[ -x $W/cpu_offcpu_static ]]; then
		guest_files+=("$W/cpu_offcpu_static:/bin/cpu_offcpu_static")
	else
		OFF_SKIP="no $W/cpu_offcpu_static (make)"
	fi
	if [[ -x $W/cpu_offcpu_span_static ]]; then
		guest_files+=("$W/cpu_offcpu_span_static:/bin/cpu_offcpu_span_static")
	else
		SPAN_SKIP="no $W/cpu_offcpu_span_static (make)"
	fi
	if [[ -x $W/unw_chain_static ]]; then
		guest_files+=("$W/unw_chain_static:/bin/unw_chain_static")
	else
		UNW_SKIP="no $W/unw_chain_static (make)"
	fi
	if [[ -x $W/stacks_shape_static ]]; then
		guest_files+=("$W/stacks_shape_static:/bin/stacks_shape_static")
	else
		STK_SKIP="no $W/stacks_shape_static (make)"
	fi
	if [[ -x $W/numa_balance ]]; then
		guest_files+=("$W/numa_balance:/bin/numa_balance")
	else
		BAL_SKIP="no $W/numa_balance (make)"
	fi
	# whether numa is built: the x86 tracekit-static answers for both architectures (one
	# source, one configuration; an arm64 binary does not run here)
	if ! "$B/tracekit-static" numa --help >/dev/null 2>&1; then
		NUMA_SKIP="tracekit numa not built"
		MOVE_SKIP=$NUMA_SKIP
	elif [[ ! -x $W/numa_move ]]; then
		MOVE_SKIP="no $W/numa_move (make)"
	elif readelf -lW "$W/numa_move" 2>/dev/null | grep -q 'Requesting program interpreter'; then
		MOVE_SKIP="$W/numa_move is not statically linked (tests/workloads/flags.mk)"
	else
		guest_files+=("$W/numa_move:/bin/numa_move")
	fi
	py_bundle "$work/py-$GARCH"
	return 0
}

# trixie's arm64 root at /trixie in the guest (py-bundle.sh arm64 DIR trixie), into
# guest_files; TRIXIE_SKIP says why not, TRIXIE_PAC how many paciasp its python3.13 has
trixie_bundle() {
	local dir=$1 lines rc
	TRIXIE_SKIP="" TRIXIE_PAC=""
	lines=$(tests/vm/py-bundle.sh arm64 "$dir" trixie 2>"$dir.err")
	rc=$?
	if ((rc != 0)); then
		TRIXIE_SKIP="tests/vm/py-bundle.sh arm64 DIR trixie: $(tail -n1 "$dir.err")"
		return
	fi
	TRIXIE_PAC=$(sed -n "s/.*python3.13 has \([0-9]*\) paciasp.*/\1/p" "$dir.err")
	mapfile -t -O "${#guest_files[@]}" guest_files <<<"$lines"
}

# The guest's payload into $1; $2 1 when it also runs the no-BTF section
write_payload() {
	{
		echo "NUMA_SKIP='$NUMA_SKIP' MOVE_SKIP='$MOVE_SKIP' CPU_SKIP='$CPU_SKIP' BAL_SKIP='$BAL_SKIP'"
		echo "UNW_SKIP='$UNW_SKIP' OFF_SKIP='$OFF_SKIP' PY_SKIP='$PY_SKIP' NOBTF=$2"
		echo "STK_SKIP='$STK_SKIP'"
		echo "TRIXIE=$3"
		echo "SPAN_SKIP='$SPAN_SKIP'"
		cat <<'EOF'
tk_run caps tracekit caps --json
# what this kernel has, for the checks to compare caps with: the misplaced-page function,
# the record of mm_migrate_pages, whether the balancing scan's skips are traced
tk_run kallsyms grep -E ' migrate_misplaced_(page|folio)$' /proc/kallsyms
# ftrace's direct calls, which BPF trampolines (fentry) attach through
tk_run ftrace_direct grep -c -E ' register_ftrace_direct(_multi)?$' /proc/kallsyms
tk_run migrate_format cat /sys/kernel/tracing/events/migrate/mm_migrate_pages/format
tk_run skip_vma_format cat /sys/kernel/tracing/events/sched/sched_skip_vma_numa/format
tk_run migrate_start_format cat /sys/kernel/tracing/events/migrate/mm_migrate_pages_start/format

# cpu: the chosen backend, then perf; the folded stacks, and the profile's backend
for b in auto perf; do
	[ -n "$CPU_SKIP" ] && break
	tk_run cpu_$b tracekit cpu -F 499 -d 3 --backend $b -o /tmp/cpu_$b.folded -o /tmp/cpu_$b.json \
		-- /bin/cpu_split_static 2
	tk_run cpu_$b.folded cat /tmp/cpu_$b.folded
	tk_run cpu_$b.json grep -o -m1 '"backend":"[a-z]*"' /tmp/cpu_$b.json
	rm -f /tmp/cpu_$b.*
done

# unwinding from CFI: a chain through static glibc's qsort, no frame pointers, both backends
for b in auto perf; do
	[ -n "$UNW_SKIP" ] && break
	tk_run unw_$b tracekit cpu -F 499 -d 3 --backend $b -o /tmp/unw_$b.folded \
		-- /bin/unw_chain_static 2
	tk_run unw_$b.folded cat /tmp/unw_$b.folded
	rm -f /tmp/unw_$b.*
done

# off-CPU time: the waits' split, in nanoseconds (--view off-cpu)
if [ -z "$OFF_SKIP" ]; then
	tk_run offcpu tracekit cpu -F 99 -d 4 --off-cpu --view off-cpu -o /tmp/offcpu.folded \
		-o /tmp/offcpu.json -- /bin/cpu_offcpu_static 2
	tk_run offcpu.folded cat /tmp/offcpu.folded
	tk_run offcpu.note grep -o 'off-CPU time: [^,"]*' /tmp/offcpu.json
	rm -f /tmp/offcpu.folded /tmp/offcpu.json
	tk_run offcpu_perf tracekit cpu -F 99 -d 4 --backend perf --off-cpu --view off-cpu \
		-o /tmp/offcpu_perf.folded -o /tmp/offcpu_perf.json -- /bin/cpu_offcpu_static 2
	tk_run offcpu_perf.folded cat /tmp/offcpu_perf.folded
	tk_run offcpu_perf.note grep -o 'off-CPU time: [^,"]*' /tmp/offcpu_perf.json
	rm -f /tmp/offcpu_perf.folded /tmp/offcpu_perf.json
fi

# every thread's stacks, nothing stopped: the chosen backend (the plain or sleepable task
# iterator), then /proc; the workload's own line says its threads
if [ -z "$STK_SKIP" ]; then
	/bin/stacks_shape_static >/tmp/shape.out 2>/dev/null &
	spid=$!
	i=0
	while [ ! -s /tmp/shape.out ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	tk_run stacks.shape cat /tmp/shape.out
	tk_run stacks tracekit stacks -p $spid --json
	tk_run stacks_proc tracekit stacks -p $spid --backend proc --json
	kill -9 $spid
	wait $spid 2>/dev/null
	rm -f /tmp/shape.out
fi

# waits that span the capture: two threads blocked before it (read, a mutex), -p
if [ -z "$SPAN_SKIP" ]; then
	/bin/cpu_offcpu_span_static 60 >/tmp/span.out &
	span=$!
	i=0
	while [ $i -lt 60 ] && ! grep -q ready /tmp/span.out; do sleep 1; i=$((i + 1)); done
	tk_run offspan tracekit cpu --off-cpu -d 2 -p $span -o /tmp/offspan.json
	tk_run offspan.json cat /tmp/offspan.json
	kill -9 $span
	rm -f /tmp/span.out /tmp/offspan.json
fi

# Python frames in the kernel: Debian's 3.11, the 3:1 split with its whole chain. With NUMA
# balancing off: on a two-node kernel it is on from boot, and its scans make the pages of
# frames nothing touched since (the Python frames of <module> and main, the native stack's
# outermost page) fault for any reader in the kernel, BPF included, until the process touches
# them: counted as python_frame_read_fault and unwind_stack_read_fault (docs/unwinding.md);
# measured here on 5.10, 189 of 505 leaf_hot samples whole with it on.
if [ -z "$PY_SKIP" ]; then
	echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null
	tk_run python tracekit cpu -F 499 -d 12 -o /tmp/py.folded -o /tmp/py.txt \
		-- /usr/bin/python3.11 -S /root/pywork.py mix 6
	tk_run python.folded cat /tmp/py.folded
	# the losses and notes, for a failure's message
	tk_run python.txt cat /tmp/py.txt
	rm -f /tmp/py.folded /tmp/py.txt
fi

# trixie's arm64 userland (PAC and BTI) in a container root: its python3.13
if [ "$TRIXIE" = 1 ]; then
	tk_run trixie_py tracekit cpu -F 499 -d 12 -o /tmp/py.folded -o /tmp/py.txt \
		-- unshare -m -p -f chroot /trixie /usr/bin/python3.13 -S /root/pywork.py mix 6
	tk_run trixie_py.folded cat /tmp/py.folded
	tk_run trixie_py.txt cat /tmp/py.txt
	rm -f /tmp/py.folded /tmp/py.txt
fi

tk_run alloc_full tracekit alloc -v --mode full --format folded -- alloc_leak -d 1 --leak-bytes 1048576 --leak-block 4096
tk_run alloc_sampled tracekit alloc -v --sample-bytes 4096 --format folded -- alloc_leak -d 1 --leak-bytes 16777216 --leak-block 262144 --no-touch
tk_run alloc_growth tracekit alloc -v --mode growth --format folded -- alloc_leak -d 1 --leak-bytes 4194304 --leak-block 65536
# every collector over one window: the bundle's manifest and allocation summary
tk_run record tracekit record -d 8 -o /tmp/rec -- alloc_leak -d 1 --leak-bytes 4194304 --leak-block 65536
tk_run record.manifest cat /tmp/rec/manifest.json
tk_run record.alloc cat /tmp/rec/alloc.txt
rm -rf /tmp/rec

# Wait until tracer $1 (stderr in $2) has attached: with -v it says "backend X" once
# its session started; else its BPF links and perf events stop growing. At most
# 60 s, or until it has exited.
tk_attached() {
	local i=0 n=0 last=-1 same=0
	while [ $i -lt 120 ] && [ -d /proc/$1 ]; do
		grep -q '^tracekit: numa: backend ' $2 2>/dev/null && break
		n=$(ls -l /proc/$1/fd 2>/dev/null | grep -c -e bpf_link -e perf_event)
		if [ "$n" -gt 0 ] && [ "$n" = "$last" ]; then
			same=$((same + 1))
			[ $same -ge 2 ] && break
		else
			same=0
		fi
		last=$n
		sleep 0.5
		i=$((i + 1))
	done
	tk_say "tracer $1 attached: $n links after $i polls"
}
tk_vmstat() { grep -E '^(pgmigrate_success|pgmigrate_fail|numa_pages_migrated|numa_hint_faults) ' /proc/vmstat >$1; }
# $1 name; the tracer's pid in $tp
tk_tracer_done() {
	wait $tp
	echo $? >/tmp/$1.rc
	tk_run $1.json cat /tmp/$1.json
	echo "TKVM-BEGIN $1"; echo "TKVM-END $1 $(cat /tmp/$1.rc)"
	# libbpf's messages (-v) only when they tell of a failure
	awk '!/^libbpf: / || /fail|error|denied|invalid|refus/' /tmp/$1.err >/tmp/$1.err2
	echo "TKVM-BEGIN $1.stderr"; tk_section /tmp/$1.err2; echo "TKVM-END $1.stderr 0"
}

if [ -n "$NUMA_SKIP" ]; then
	echo "$NUMA_SKIP" >/tmp/skip
	tk_run numa_skip cat /tmp/skip
fi
if [ -n "$MOVE_SKIP" ]; then
	echo "$MOVE_SKIP" >/tmp/skip
	tk_run move_skip cat /tmp/skip
else
	tracekit numa -v --json -o /tmp/numa_move.json -d 12 >/dev/null 2>/tmp/numa_move.err &
	tp=$!
	tk_attached $tp /tmp/numa_move.err
	tk_vmstat /tmp/v0
	tk_run move sh -c 'echo pid=$$; exec /bin/numa_move'
	tk_vmstat /tmp/v1
	tk_tracer_done numa_move
	tk_run vmstat_move0 cat /tmp/v0
	tk_run vmstat_move1 cat /tmp/v1
fi

# NUMA balancing, its scanner hurried
if [ -z "$BAL_SKIP" ]; then
	echo 1 >/proc/sys/kernel/numa_balancing
	echo 0 >/sys/kernel/debug/sched/numa_balancing/scan_delay_ms
	echo 100 >/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms
	if [ -z "$NUMA_SKIP" ]; then
		tracekit numa -v --json -o /tmp/numa_bal.json -d 25 >/dev/null 2>/tmp/numa_bal.err &
		tp=$!
		tk_attached $tp /tmp/numa_bal.err
	fi
	tk_vmstat /tmp/v0
	tk_run balance sh -c 'echo pid=$$; exec /bin/numa_balance 15 64'
	tk_vmstat /tmp/v1
	[ -z "$NUMA_SKIP" ] && tk_tracer_done numa_bal
	echo 0 >/proc/sys/kernel/numa_balancing
	tk_run vmstat_bal0 cat /tmp/v0
	tk_run vmstat_bal1 cat /tmp/v1
fi

# A kernel without BTF, simulated: an empty file bound over /sys/kernel/btf/vmlinux in a
# private mount namespace, so libbpf fails to parse the kernel's BTF there and nowhere
# else. Each run leaves /tmp/nb/NAME.{out,err,rc}; the sections are sent from outside.
[ "$NOBTF" = 1 ] || return 0
mkdir -p /tmp/nb
: >/tmp/empty_file
cat >/tmp/nobtf.sh <<'NB'
nb() { n=$1; shift; "$@" >/tmp/nb/$n.out 2>/tmp/nb/$n.err; echo $? >/tmp/nb/$n.rc; }
echo "inside=$(wc -c </sys/kernel/btf/vmlinux)" >/tmp/nb/hidden.out
nb caps tracekit caps --json
if [ -z "$CPU_SKIP" ]; then
	nb cpu tracekit cpu -F 499 -d 3 -o /tmp/nb/cpu.folded -o /tmp/nb/cpu.json -- /bin/cpu_split_static 2
	grep -o -m1 '"backend":"[a-z]*"' /tmp/nb/cpu.json >/tmp/nb/cpu.json.out 2>/dev/null
fi
[ -z "$OFF_SKIP" ] && nb offcpu tracekit cpu --off-cpu -d 2 -o /tmp/nb/offcpu.folded -- /bin/cpu_offcpu_static 1
nb alloc tracekit alloc -v --mode full --format folded -- alloc_leak -d 1 --leak-bytes 1048576 --leak-block 4096
nb numa tracekit numa -v --json -d 3
NB
CPU_SKIP=$CPU_SKIP OFF_SKIP=$OFF_SKIP unshare -m sh -c 'mount --bind /tmp/empty_file /sys/kernel/btf/vmlinux && . /tmp/nobtf.sh'
echo "unshare=$? outside=$(wc -c </sys/kernel/btf/vmlinux)" >>/tmp/nb/hidden.out
tk_run nobtf_hidden cat /tmp/nb/hidden.out
# $1 name: the section nobtf_NAME from /tmp/nb/NAME.*, as tk_run would have sent it
tk_nb() {
	echo "TKVM-BEGIN nobtf_$1"; tk_section /tmp/nb/$1.out; echo "TKVM-END nobtf_$1 $(cat /tmp/nb/$1.rc)"
	# libbpf's messages (-v) only when they tell of a failure
	awk '!/^libbpf: / || /fail|error|denied|invalid|refus/' /tmp/nb/$1.err >/tmp/nb/$1.err2
	echo "TKVM-BEGIN nobtf_$1.stderr"; tk_section /tmp/nb/$1.err2; echo "TKVM-END nobtf_$1.stderr 0"
}
for n in caps cpu offcpu alloc numa; do
	[ -e /tmp/nb/$n.rc ] && tk_nb $n
done
[ -e /tmp/nb/cpu.folded ] && tk_run nobtf_cpu.folded cat /tmp/nb/cpu.folded
[ -e /tmp/nb/cpu.json.out ] && tk_run nobtf_cpu.json cat /tmp/nb/cpu.json.out
true
EOF
	} >"$1"
}

# The rows a guest of series $1 has
guest_tests() {
	printf '%s\n' "${TESTS[@]}"
	[[ " $NOBTF " == *" $1 "* ]] && printf '%s\n' "${NOBTF_TESTS[@]}"
	[[ " $TRIXIE " == *" $1 "* ]] && printf '%s\n' "${TRIXIE_TESTS[@]}"
	return 0
}

# The no-BTF run in a guest: $1 the guest's sections folder
check_nobtf() {
	local d=$1 caps=$1/nobtf_caps.out s r h json=$1/nobtf_numa.out backend why v
	# the simulation itself: BTF empty inside the namespace, whole outside it
	h=$(tr '\n' ' ' <"$d/nobtf_hidden.out" 2>/dev/null)
	T=nobtf-caps
	expect "nobtf: /sys/kernel/btf/vmlinux hidden in the namespace only ($h)" \
		'[[ $h =~ inside=0\  && $h =~ unshare=0\  && $h =~ outside=[1-9] ]]' \
		"want inside=0 unshare=0 outside=N>0; the bind or unshare failed in the guest"

	if [[ $(rc_of "$d/nobtf_caps.rc") != 0 ]]; then
		fail "nobtf: tracekit caps --json exits 0" "$(why_rc "$d/nobtf_caps.rc" "$d/nobtf_caps.stderr.out")"
	elif ! jq -e '.schema == "tracekit.caps/1"' "$caps" >/dev/null 2>&1; then
		fail "nobtf: caps output is tracekit.caps/1 JSON" "$(head -c 2000 "$caps" 2>/dev/null)"
	else
		ok "nobtf: tracekit caps --json exits 0"
		s=$(entry bpf.btf status "$caps")
		r=$(jq -r '.entries["bpf.btf"].remedy // ""' "$caps")
		expect "nobtf: bpf.btf $s, with a remedy" '[[ $s != supported && -n $r ]]' \
			"$(explain bpf.btf "$caps") remedy=$r"
	fi

	T=nobtf-cpu
	if [[ -n $CPU_SKIP ]]; then
		skip "nobtf cpu" "$CPU_SKIP"
	else
		echo "{$(cat "$d/nobtf_cpu.json.out" 2>/dev/null)}" >"$d/nobtf_cpu.backend.json"
		check_cpu nobtf-cpu "$d/nobtf_cpu.folded.out" "$d/nobtf_cpu.backend.json" \
			"$(rc_of "$d/nobtf_cpu.rc")" "$d/nobtf_cpu.stderr.out" bpf
	fi

	# off-CPU time by BPF needs the kernel's BTF: without it the perf backend takes it,
	# and the run says why bpf was not used
	T=nobtf-off-cpu
	if [[ -n $OFF_SKIP ]]; then
		skip "nobtf off-cpu" "$OFF_SKIP"
	else
		r=$(rc_of "$d/nobtf_offcpu.rc")
		expect "nobtf: tracekit cpu --off-cpu falls back to perf (exit 0), naming BTF" \
			'[[ $r == 0 ]] && grep -q "BTF" "$d/nobtf_offcpu.stderr.out" &&
			 grep -q "trying perf" "$d/nobtf_offcpu.stderr.out"' \
			"exit $r; stderr: $(head -c 600 "$d/nobtf_offcpu.stderr.out" 2>/dev/null | tr '\n' ' ')"
	fi

	T=nobtf-alloc
	if [[ $(rc_of "$d/nobtf_alloc.rc") != 0 ]]; then
		fail "nobtf: alloc full exits 0" "$(why_rc "$d/nobtf_alloc.rc" "$d/nobtf_alloc.stderr.out")"
	else
		ok "nobtf: alloc full exits 0"
		backend=$(sed -n 's/^tracekit: alloc: backend \([a-z]*\):.*/\1/p' "$d/nobtf_alloc.stderr.out" |
			head -n1)
		expect "nobtf: alloc backend ${backend:-?} (want bpf)" '[[ $backend == bpf ]]' \
			"$(grep -v '^libbpf: ' "$d/nobtf_alloc.stderr.out" | head -c 600)"
		v=$(folded_sum "$d/nobtf_alloc.out" ';leak_site$')
		expect "nobtf: alloc full: leak_site 1048576 bytes in use" '[[ $v == 1048576 ]]' "got $v"
	fi

	T=nobtf-numa
	if [[ $(rc_of "$d/nobtf_numa.rc") != 0 ]]; then
		fail "nobtf: tracekit numa exits 0" "$(why_rc "$d/nobtf_numa.rc" "$d/nobtf_numa.stderr.out")"
		return
	fi
	ok "nobtf: tracekit numa exits 0"
	if ! jq -e 'type == "object" and has("backend")' "$json" >/dev/null 2>&1; then
		fail "nobtf: numa report is JSON with a backend" "$(head -c 1500 "$json" 2>/dev/null)"
		return
	fi
	backend=$(jq -r .backend "$json")
	expect "nobtf: numa backend $backend (want vmstat)" '[[ $backend == vmstat ]]' \
		"missing: $(jq -c .missing "$json")"
	# why: the report's missing[] or its -v note of the backend choice names BTF
	why=$( (jq -r '.missing[]?' "$json" 2>/dev/null; grep -i 'backend' "$d/nobtf_numa.stderr.out") |
		tr '\n' ' ')
	expect "nobtf: numa says BTF is why" 'grep -qi btf <<<"$why"' "it says: ${why:0:600}"
}

# a column's label: the release without -cloud-amd64, or with " arm64" for -cloud-arm64
guest_label() {
	case $1 in
	*-cloud-arm64) echo "${1%-cloud-arm64} arm64" ;;
	*) echo "${1%-cloud-amd64}" ;;
	esac
}

check_guest() {
	local kver=$1 payload=$2
	local dir=$OUT/matrix-${kver//\//-} rc t0 t1 s d field r says v t release errf tests want
	K=$kver
	mapfile -t tests < <(guest_tests "$kver")
	errf=$work/vm-${kver//\//-}.err
	t0=$(date +%s.%N)
	# vm.sh's stderr shows as it comes and is kept for the reason of a failure
	{ "$VM" run "$kver" --numa2 --out "$dir" "$payload" "${guest_files[@]}" 2>&1 1>&3 |
		tee "$errf" >&2; } 3>&1
	rc=${PIPESTATUS[0]}
	t1=$(date +%s.%N)
	release=$(cat "$dir/release" 2>/dev/null)
	# the column: the release the guest booted, without the flavour (arm64's named)
	LABEL[$kver]=$(guest_label "$release")
	times+=("$(awk -v a="$t0" -v b="$t1" -v k="$kver" -v r="${release:-?}" \
		'BEGIN { printf "vm: %s guest (%s) end to end: %.1f s", k, r, b - a }')")
	if ((rc == 77 || rc == 3)); then
		r=$(sed -n 's/^vm: \(skip\|error\): //p' "$errf" | tail -n1)
		for t in "${tests[@]}"; do
			T=$t
			if ((rc == 3)); then
				fail "$t" "vm.sh cannot run the $kver guest: ${r:-see above}"
			else
				skip "$t" "vm.sh cannot run the $kver guest here: ${r:-see above}"
			fi
		done
		((rc == 77)) && guests_skipped=$((guests_skipped + 1))
		return
	fi
	if ((rc == 2)) || [[ ! -s $dir/status ]]; then
		for t in "${tests[@]}"; do
			T=$t
			fail "$t: the guest ran the payload" "vm.sh exit $rc, no TKVM-DONE; console: $dir/console.log"
		done
		return
	fi
	d=$dir/sections
	T=caps
	ok "guest ran the payload"
	# what the guest said it runs (uname -r), the oracle for the version-bound checks
	r=$(sed -n 's/^kernel \([^ ]*\) nodes .*/\1/p' "$dir/results.txt" | head -n1)
	expect "guest runs the kernel booted (${r:-?})" '[[ -n $r && ( -z $release || $r == "$release" ) ]]' \
		"booted ${release:-?}; results: $(head -c 300 "$dir/results.txt")"
	release=${r:-$release}
	[[ -n $release ]] && LABEL[$kver]=$(guest_label "$release")

	if check_caps_common "$d/caps.out" "$d/caps.rc" "$d/caps.stderr.out" "${release:-$kver.*}"; then
		for k in "${GUEST_ALSO[@]}"; do
			s=$(entry "$k" status "$d/caps.out")
			expect "$k" '[[ $s == supported ]]' "$(explain "$k" "$d/caps.out")"
		done
		# fentry where the guest's kallsyms has ftrace's direct calls, and only there
		s=$(entry bpf.prog.fentry status "$d/caps.out")
		if [[ $(cat "$d/ftrace_direct.out" 2>/dev/null) -gt 0 ]]; then
			expect "bpf.prog.fentry (the guest's kallsyms has register_ftrace_direct)" \
				'[[ $s == supported ]]' "$(explain bpf.prog.fentry "$d/caps.out")"
		else
			expect "bpf.prog.fentry unsupported (no register_ftrace_direct in the guest's kallsyms)" \
				'[[ $s != supported ]]' "$(explain bpf.prog.fentry "$d/caps.out")"
		fi
		v=$(entry numa.nodes value "$d/caps.out")
		expect "numa.nodes" '[[ $v == "2 nodes" ]]' "$(explain numa.nodes "$d/caps.out")"
		# the guest's kallsyms says which misplaced-page function there is (folio from 6.7)
		want=none
		grep -q ' migrate_misplaced_page$' "$d/kallsyms.out" 2>/dev/null && want=migrate_misplaced_page
		grep -q ' migrate_misplaced_folio$' "$d/kallsyms.out" 2>/dev/null && want=migrate_misplaced_folio
		v=$(entry function.migrate_misplaced value "$d/caps.out")
		s=$(entry function.migrate_misplaced status "$d/caps.out")
		if [[ $want == none ]]; then
			expect "function.migrate_misplaced unsupported (neither is in the guest's kallsyms)" \
				'[[ $s != supported ]]' "$(explain function.migrate_misplaced "$d/caps.out")"
		else
			expect "function.migrate_misplaced ($want, as the guest's kallsyms has it)" \
				'[[ $s == supported && $v == "$want" ]]' \
				"$(explain function.migrate_misplaced "$d/caps.out")" \
				"guest kallsyms: $(awk '{print $3}' "$d/kallsyms.out" | tr '\n' ' ')"
		fi
		# what the guest's own tracefs says the record holds
		field=none
		grep -q 'unsigned long nr_split;' "$d/migrate_format.out" && field=nr_split
		grep -q 'unsigned long large_folio_split;' "$d/migrate_format.out" && field=large_folio_split
		r=$(entry tracepoint.mm_migrate_pages reason "$d/caps.out")
		s=$(entry tracepoint.mm_migrate_pages status "$d/caps.out")
		case $r in
		*"has neither nr_split nor large_folio_split"*) says=none ;;
		*"has large_folio_split"*) says=large_folio_split ;;
		*"has nr_split"*) says=nr_split ;;
		*) says="?" ;;
		esac
		expect "tracepoint.mm_migrate_pages split field ($field, as the guest's format has it)" \
			'[[ $s == supported && $says == "$field" ]]' \
			"guest tracefs format has $field;" \
			"tracekit: $(explain tracepoint.mm_migrate_pages "$d/caps.out")"
	fi

	# the profile's backend came back as one grep line: make it JSON for check_cpu
	for b in auto perf; do
		echo "{$(cat "$d/cpu_$b.json.out" 2>/dev/null)}" >"$d/cpu_$b.backend.json"
	done
	if [[ -n $CPU_SKIP ]]; then
		T=cpu skip cpu "$CPU_SKIP"
		T=cpu-perf skip cpu-perf "$CPU_SKIP"
	else
		check_cpu cpu "$d/cpu_auto.folded.out" "$d/cpu_auto.backend.json" "$(rc_of "$d/cpu_auto.rc")" \
			"$d/cpu_auto.stderr.out" "$(jq -r '.backends.cpu.backend' "$d/caps.out" 2>/dev/null)"
		check_cpu cpu-perf "$d/cpu_perf.folded.out" "$d/cpu_perf.backend.json" "$(rc_of "$d/cpu_perf.rc")" \
			"$d/cpu_perf.stderr.out" perf
	fi
	if [[ -n $UNW_SKIP ]]; then
		T=unwind skip unwind "$UNW_SKIP"
		T=unwind-perf skip unwind-perf "$UNW_SKIP"
	else
		check_unwind unwind "$d/unw_auto.folded.out" "$(rc_of "$d/unw_auto.rc")" \
			"$d/unw_auto.stderr.out"
		check_unwind unwind-perf "$d/unw_perf.folded.out" "$(rc_of "$d/unw_perf.rc")" \
			"$d/unw_perf.stderr.out"
	fi
	if [[ -n $OFF_SKIP ]]; then
		T=off-cpu skip off-cpu "$OFF_SKIP"
	else
		check_offcpu off-cpu "$d/offcpu.folded.out" "$(rc_of "$d/offcpu.rc")" "$d/offcpu.stderr.out" \
			"$d/offcpu.note.out"
		check_offcpu off-cpu-perf "$d/offcpu_perf.folded.out" "$(rc_of "$d/offcpu_perf.rc")" \
			"$d/offcpu_perf.stderr.out" "$d/offcpu_perf.note.out"
	fi
	if [[ -n $SPAN_SKIP ]]; then
		T=off-cpu-span skip off-cpu-span "$SPAN_SKIP"
	else
		check_offspan "$d/offspan.json.out" "$(rc_of "$d/offspan.rc")" "$d/offspan.stderr.out"
	fi
	check_alloc "$d" "${release:-0}"
	check_record "$(rc_of "$d/record.rc")" "$d/record.stderr.out" "$d/record.manifest.out" \
		"$d/record.alloc.out"
	check_numa_move "$d"
	if [[ -n $BAL_SKIP ]]; then
		T=numa-balance skip "numa balance" "$BAL_SKIP"
	else
		check_numa_balance "$d"
	fi
	if [[ -n $PY_SKIP ]]; then
		T=python unavailable python "$PY_SKIP"
	else
		check_python python "$d/python.folded.out" "$(rc_of "$d/python.rc")" \
			"$d/python.stderr.out" "$d/python.txt.out"
	fi
	if [[ -n $STK_SKIP ]]; then
		T=stacks skip stacks "$STK_SKIP"
		T=stacks-proc skip stacks-proc "$STK_SKIP"
	else
		check_stacks stacks "$d/stacks.shape.out" "$d/stacks.out" "$(rc_of "$d/stacks.rc")" \
			"$d/stacks.stderr.out" "$(jq -r '.backends.stacks.backend' "$d/caps.out" 2>/dev/null)"
		check_stacks stacks-proc "$d/stacks.shape.out" "$d/stacks_proc.out" \
			"$(rc_of "$d/stacks_proc.rc")" "$d/stacks_proc.stderr.out" proc
	fi
	[[ " $NOBTF " == *" $kver "* ]] && check_nobtf "$d"
	if [[ " $TRIXIE " == *" $kver "* ]]; then
		T=python-trixie
		if [[ -n $TRIXIE_SKIP ]]; then
			unavailable python-trixie "$TRIXIE_SKIP"
		else
			# the row tests pointer-authenticated code only if there is some
			expect "python-trixie: trixie's python3.13 is built with PAC (${TRIXIE_PAC:-?} paciasp)" \
				'((${TRIXIE_PAC:-0} > 1000))' "py-bundle.sh counted ${TRIXIE_PAC:-none}"
			check_python python-trixie "$d/trixie_py.folded.out" "$(rc_of "$d/trixie_py.rc")" \
				"$d/trixie_py.stderr.out" "$d/trixie_py.txt.out"
		fi
	fi
	return 0
}

# ---- the host -----------------------------------------------------------------------
check_host() {
	local tmp=$1 bin=$B/tracekit t rc
	K=host
	if [[ $(id -u) -ne 0 ]]; then
		for t in "${TESTS[@]}"; do T=$t; skip "$t" "the host checks need root"; done
		return
	fi
	for f in "$bin" "$W/cpu_split" "$W/alloc_leak" "$W/unw_chain"; do
		if [[ ! -x $f ]]; then
			T=caps
			fail "$f exists" "run: make"
			return
		fi
	done
	"$bin" caps --json >"$tmp/caps.out" 2>"$tmp/caps.err"
	echo $? >"$tmp/caps.rc"
	if check_caps_common "$tmp/caps.out" "$tmp/caps.rc" "$tmp/caps.err" "$(uname -r)"; then
		# what the host has: kallsyms is the oracle (names are readable even when addresses
		# are hidden); the function is absent on a kernel without NUMA balancing
		local v want
		want=$(grep -o -m1 -E ' migrate_misplaced_(page|folio)$' /proc/kallsyms | tr -d ' ')
		v=$(entry function.migrate_misplaced value "$tmp/caps.out")
		if [[ -n $want ]]; then
			expect "function.migrate_misplaced ($want)" '[[ $v == "$want" ]]' \
				"$(explain function.migrate_misplaced "$tmp/caps.out")"
		fi
		local nodes=(/sys/devices/system/node/node[0-9]*)
		v=${#nodes[@]}
		want=$(entry numa.nodes value "$tmp/caps.out")
		expect "numa.nodes ($want)" '[[ $want == "$v node"* ]]' "sysfs has $v nodes"
	fi

	for t in auto perf; do
		"$bin" cpu -F 499 -d 3 --backend $t -o "$tmp/cpu_$t.folded" -o "$tmp/cpu_$t.json" \
			-- "$W/cpu_split" 2 >/dev/null 2>"$tmp/cpu_$t.err"
		echo $? >"$tmp/cpu_$t.rc"
	done
	check_cpu cpu "$tmp/cpu_auto.folded" "$tmp/cpu_auto.json" "$(rc_of "$tmp/cpu_auto.rc")" \
		"$tmp/cpu_auto.err" "$(jq -r '.backends.cpu.backend' "$tmp/caps.out" 2>/dev/null)"
	check_cpu cpu-perf "$tmp/cpu_perf.folded" "$tmp/cpu_perf.json" "$(rc_of "$tmp/cpu_perf.rc")" \
		"$tmp/cpu_perf.err" perf

	for t in auto perf; do
		"$bin" cpu -F 499 -d 3 --backend $t -o "$tmp/unw_$t.folded" -- "$W/unw_chain" 2 \
			>/dev/null 2>"$tmp/unw_$t.err"
		echo $? >"$tmp/unw_$t.rc"
	done
	check_unwind unwind "$tmp/unw_auto.folded" "$(rc_of "$tmp/unw_auto.rc")" "$tmp/unw_auto.err"
	check_unwind unwind-perf "$tmp/unw_perf.folded" "$(rc_of "$tmp/unw_perf.rc")" \
		"$tmp/unw_perf.err"

	"$bin" cpu -F 99 -d 4 --off-cpu --view off-cpu -o "$tmp/offcpu.folded" -o "$tmp/offcpu.json" \
		-- "$W/cpu_offcpu" 2 >/dev/null 2>"$tmp/offcpu.err"
	echo $? >"$tmp/offcpu.rc"
	grep -o 'off-CPU time: [^,"]*' "$tmp/offcpu.json" >"$tmp/offcpu.note" 2>/dev/null
	check_offcpu off-cpu "$tmp/offcpu.folded" "$(rc_of "$tmp/offcpu.rc")" "$tmp/offcpu.err" \
		"$tmp/offcpu.note"
	"$bin" cpu -F 99 -d 4 --backend perf --off-cpu --view off-cpu -o "$tmp/offcpu_perf.folded" \
		-o "$tmp/offcpu_perf.json" -- "$W/cpu_offcpu" 2 >/dev/null 2>"$tmp/offcpu_perf.err"
	echo $? >"$tmp/offcpu_perf.rc"
	grep -o 'off-CPU time: [^,"]*' "$tmp/offcpu_perf.json" >"$tmp/offcpu_perf.note" 2>/dev/null
	check_offcpu off-cpu-perf "$tmp/offcpu_perf.folded" "$(rc_of "$tmp/offcpu_perf.rc")" \
		"$tmp/offcpu_perf.err" "$tmp/offcpu_perf.note"

	local leak=$W/alloc_leak
	"$bin" alloc -v --mode full --format folded -- "$leak" -d 1 --leak-bytes 1048576 --leak-block 4096 \
		>"$tmp/alloc_full.out" 2>"$tmp/alloc_full.stderr.out"
	echo $? >"$tmp/alloc_full.rc"
	"$bin" alloc -v --sample-bytes 4096 --format folded -- "$leak" -d 1 --leak-bytes 16777216 \
		--leak-block 262144 --no-touch >"$tmp/alloc_sampled.out" 2>"$tmp/alloc_sampled.stderr.out"
	echo $? >"$tmp/alloc_sampled.rc"
	"$bin" alloc -v --mode growth --format folded -- "$leak" -d 1 --leak-bytes 4194304 --leak-block 65536 \
		>"$tmp/alloc_growth.out" 2>"$tmp/alloc_growth.stderr.out"
	echo $? >"$tmp/alloc_growth.rc"
	check_alloc "$tmp" "$(uname -r)"
	"$bin" record -d 8 -o "$tmp/rec" -- "$leak" -d 1 --leak-bytes 4194304 --leak-block 65536 \
		>/dev/null 2>"$tmp/record.err"
	rc=$?
	check_record "$rc" "$tmp/record.err" "$tmp/rec/manifest.json" "$tmp/rec/alloc.txt"

	T=python
	if [[ -x /usr/bin/python3.11 ]]; then
		"$bin" cpu -F 499 -d 12 -o "$tmp/py.folded" -- /usr/bin/python3.11 \
			tests/workloads/py/pywork.py mix 6 >/dev/null 2>"$tmp/py.err"
		echo $? >"$tmp/py.rc"
		check_python python "$tmp/py.folded" "$(rc_of "$tmp/py.rc")" "$tmp/py.err"
	else
		skip python "no /usr/bin/python3.11 on this host"
	fi

	# numa on one node: nothing to move; it must start, say its backend, and what it lacks
	T=numa-move
	if ! "$bin" numa --help >/dev/null 2>&1; then
		skip "numa" "tracekit numa not built"
	else
		"$bin" numa --json -o "$tmp/numa.json" -d 3 >/dev/null 2>"$tmp/numa.err"
		rc=$?
		if check_numa_report "$tmp/numa.json" "$rc" "$tmp/numa.err"; then
			t=$(jq -r '(.missing // []) | length' "$tmp/numa.json")
			expect "numa lists what it cannot see here ($t lines)" '((t > 0))' \
				"missing: $(jq -c .missing "$tmp/numa.json")"
		fi
	fi
	T=numa-balance
	skip "numa balance" "one NUMA node: balancing has nowhere to move pages"
}

# ---- the table ----------------------------------------------------------------------
# one row: a label, then a cell per column, without trailing blanks
row() {
	local line
	line=$(printf '%-16s' "$1")
	shift
	for c in "$@"; do line+=$(printf ' %-20s' "$c"); done
	echo "${line%"${line##*[! ]}"}"
}
print_table() {
	local cols=() labels=() cells c t i
	((HOST)) && { cols+=(host); labels+=("$(uname -r | cut -d. -f1-2) host"); }
	for c in $KERNELS; do cols+=("$c"); labels+=("${LABEL[$c]:-$c guest}"); done
	echo
	row kernel "${labels[@]}"
	for t in "${TESTS[@]}" "${NOBTF_TESTS[@]}" "${TRIXIE_TESTS[@]}"; do
		cells=()
		for c in "${cols[@]}"; do cells+=("${CELL[$c/$t]:--}"); done
		# a nobtf or trixie row only when some column ran it
		[[ ($t == nobtf-* || $t == *-trixie) && " ${cells[*]} " != *[!-\ ]* ]] && continue
		row "$t" "${cells[@]}"
	done
	echo
	row "attach point" "${labels[@]}"
	for t in "${ATTACH[@]}"; do
		[[ $t == numa ]] && continue
		cells=()
		for c in "${cols[@]}"; do cells+=("${ATT[$c/$t]:--}"); done
		row "$t" "${cells[@]}"
	done
	for c in "${cols[@]}"; do
		echo "numa (${LABEL[$c]:-$c}): ${ATT[$c/numa]:--}"
	done
	for i in "${!REASONS[@]}"; do
		echo "($((i + 1))) ${REASONS[$i]}"
	done
}

command -v jq >/dev/null || skip_all "no jq (tools/install-deps.sh installs it)"

times=() guests_skipped=0 nguests=0
t_start=$(date +%s.%N)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ((HOST)); then
	mkdir -p "$work/host"
	t0=$(date +%s.%N)
	check_host "$work/host"
	times+=("$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "vm: host checks: %.1f s", b - a }')")
fi

for kver in $KERNELS; do
	nguests=$((nguests + 1))
	guest_arch "$kver"
	read -r qemu qpkg < <(guest_qemu "$kver")
	if ! command -v "$qemu" >/dev/null; then
		K=$kver
		mapfile -t tests < <(guest_tests "$kver")
		for t in "${tests[@]}"; do
			T=$t
			unavailable "$t" "no $qemu (tools/install-deps.sh$([[ $GARCH == arm64 ]] && echo " --arm64") installs $qpkg)"
		done
		in_ci || guests_skipped=$((guests_skipped + 1))
		continue
	fi
	plan_guests || continue
	nb=0 tx=0
	[[ " $NOBTF " == *" $kver "* ]] && nb=1
	if [[ " $TRIXIE " == *" $kver "* ]]; then
		tx=1
		trixie_bundle "$work/trixie"
		[[ -n $TRIXIE_SKIP ]] && tx=0
	fi
	write_payload "$work/payload-${kver//\//-}" $nb $tx
	check_guest "$kver" "$work/payload-${kver//\//-}"
done
t_end=$(date +%s.%N)

print_table
echo
printf '%s\n' "${times[@]}"
awk -v a="$t_start" -v b="$t_end" 'BEGIN { printf "vm: total %.1f s\n", b - a }'
echo "vm: $passed passed, $failed failed, $skipped skipped"
((failed > 0)) && exit 1
# a kernel that could not be tested must not let the run look like a pass
((guests_skipped > 0 || passed == 0)) && exit 77
exit 0
