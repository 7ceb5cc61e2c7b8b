#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# `tracekit caps --json` from the static binary (built against the host's BTF) inside
# two-node QEMU guests on Debian's 6.1 and 6.12 cloud kernels: CO-RE must make the
# probes work there, and the report must name what each kernel really has. And
# `tracekit alloc` there on a statically linked leak workload: these kernels have no
# uprobe sessions (6.13+), so the entry/return fallback is what runs; full mode must
# count the leak exactly, sampled mode (every 256 KiB block sampled) within 5 %, growth
# mode must put the leak's page faults on leak_site.
# One line per check, then "vm: N passed, N failed". Exit 0 all passed, 1 a check
# failed, 77 QEMU, a kernel or jq cannot be had here (skip, with the reason).
#   TK_VM_KERNELS   kernel series to test (default "6.1 6.12")
#   TK_BUILD_DIR    where `make static` put tracekit-static (default build)
#   TK_VM_OUT       folder for guest logs (default $TK_BUILD_DIR/vm)
#   and vm.sh's TK_VM_* variables (cache, timeout, accelerator)
#
# jq, not python3, checks the JSON: jq is a Debian package listed in
# tools/install-deps.sh, while python3 on these machines comes from outside the
# Debian archive and so is not something CI can count on; awk cannot parse JSON.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
VM=tests/vm/vm.sh
B=${TK_BUILD_DIR:-build}
OUT=${TK_VM_OUT:-$B/vm}
KERNELS=${TK_VM_KERNELS:-6.1 6.12}
BIN=$B/tracekit-static
LEAK=$B/workloads/alloc_leak_static

# What each kernel has, measured in the guests themselves (/proc/kallsyms and
# events/migrate/mm_migrate_pages/format). mm_migrate_pages: 6.1's record has
# neither nr_split nor large_folio_split (only thp_split); 6.12's has
# large_folio_split, as 6.18's does. No Debian kernel tested here has nr_split.
declare -A MISPLACED=([6.1]=migrate_misplaced_page [6.12]=migrate_misplaced_folio)
declare -A MIGRATE_SPLIT=([6.1]=none [6.12]=large_folio_split)

SUPPORTED=(
	bpf.syscall bpf.btf bpf.ringbuf bpf.core
	bpf.prog.tp_btf bpf.prog.fentry bpf.prog.kprobe bpf.prog.uprobe bpf.prog.perf_event
)

passed=0 failed=0 skipped=0
ok() {
	echo "[       OK ] $1"
	passed=$((passed + 1))
}
fail() {
	echo "[  FAILED  ] $1"
	shift
	local l
	for l in "$@"; do echo "             $l"; done
	failed=$((failed + 1))
}
skip_all() {
	echo "vm: skip: $*"
	exit 77
}

command -v jq >/dev/null || skip_all "no jq (tools/install-deps.sh installs it)"
command -v "${TK_VM_QEMU:-qemu-system-x86_64}" >/dev/null ||
	skip_all "no ${TK_VM_QEMU:-qemu-system-x86_64} (tools/install-deps.sh installs qemu-system-x86)"
for f in "$BIN" "$LEAK"; do
	if [[ ! -x $f ]]; then
		# the thing under test is missing: that is a failure, not a skip
		fail "$f exists" "run: make static and make"
		echo "vm: $passed passed, $failed failed"
		exit 1
	fi
done

payload=$(mktemp)
trap 'rm -f "$payload"' EXIT
cat >"$payload" <<'EOF'
tk_run caps tracekit caps --json
tk_run kallsyms grep -E ' migrate_misplaced_(page|folio)$' /proc/kallsyms
tk_run migrate_format cat /sys/kernel/tracing/events/migrate/mm_migrate_pages/format
tk_run alloc_full tracekit alloc -v --mode full --format folded -- alloc_leak -d 1 --leak-bytes 1048576 --leak-block 4096
tk_run alloc_sampled tracekit alloc -v --sample-bytes 4096 --format folded -- alloc_leak -d 1 --leak-bytes 16777216 --leak-block 262144 --no-touch
tk_run alloc_growth tracekit alloc --mode growth --format folded -- alloc_leak -d 1 --leak-bytes 4194304 --leak-block 65536
true
EOF

# field of one entry, or "<missing>"
entry() { jq -r --arg k "$1" --arg f "$2" '.entries[$k][$f] // "<missing>"' "$3"; }
explain() { jq -r --arg k "$1" '.entries[$k] | "status=\(.status) value=\(.value) reason=\(.reason)"' "$2"; }

check_kernel() {
	local kver=$1
	local dir=$OUT/caps-$kver rc t0 t1 caps s v r want field k
	t0=$(date +%s.%N)
	"$VM" run "$kver" --numa2 --out "$dir" "$payload" "$BIN:/bin/tracekit" "$LEAK:/bin/alloc_leak"
	rc=$?
	t1=$(date +%s.%N)
	times+=("$(awk -v a="$t0" -v b="$t1" -v k="$kver" 'BEGIN { printf "vm: %s guest end to end: %.1f s", k, b - a }')")
	if ((rc == 77)); then
		echo "[ SKIPPED  ] $kver: the kernel or QEMU cannot be had (see above)"
		skipped=$((skipped + 1))
		return
	fi
	if ((rc == 2)) || [[ ! -s $dir/status ]]; then
		fail "$kver guest ran the payload" "vm.sh exit $rc, no TKVM-DONE; console: $dir/console.log"
		return
	fi
	ok "$kver guest ran the payload"

	caps=$dir/sections/caps.out
	if [[ $(cat "$dir/sections/caps.rc" 2>/dev/null) != 0 ]]; then
		fail "$kver tracekit caps --json exits 0" "exit $(cat "$dir/sections/caps.rc" 2>/dev/null)" \
			"stderr: $(head -c 2000 "$dir/sections/caps.stderr.out" 2>/dev/null)"
	else
		ok "$kver tracekit caps --json exits 0"
	fi
	if ! jq -e '.schema == "tracekit.caps/1"' "$caps" >/dev/null 2>&1; then
		fail "$kver caps output is tracekit.caps/1 JSON" "$(head -c 2000 "$caps")"
		return
	fi
	ok "$kver caps output is tracekit.caps/1 JSON"

	r=$(jq -r '.kernel.release' "$caps")
	if [[ $r == "$kver".* ]]; then ok "$kver kernel.release"; else fail "$kver kernel.release" "got $r"; fi

	for k in "${SUPPORTED[@]}"; do
		s=$(entry "$k" status "$caps")
		if [[ $s == supported ]]; then ok "$kver $k"; else fail "$kver $k" "$(explain "$k" "$caps")"; fi
	done

	v=$(entry numa.nodes value "$caps")
	if [[ $v == "2 nodes" ]]; then ok "$kver numa.nodes"; else fail "$kver numa.nodes" "$(explain numa.nodes "$caps")"; fi

	want=${MISPLACED[$kver]}
	v=$(entry function.migrate_misplaced value "$caps")
	if [[ $v == "$want" ]] && grep -q " $want\$" "$dir/sections/kallsyms.out"; then
		ok "$kver function.migrate_misplaced"
	else
		fail "$kver function.migrate_misplaced" "want $want" "$(explain function.migrate_misplaced "$caps")" \
			"guest kallsyms: $(awk '{print $3}' "$dir/sections/kallsyms.out" | tr '\n' ' ')"
	fi

	check_alloc "$kver" "$dir"

	# what the guest's own tracefs says the record holds
	field=none
	grep -q 'unsigned long nr_split;' "$dir/sections/migrate_format.out" && field=nr_split
	grep -q 'unsigned long large_folio_split;' "$dir/sections/migrate_format.out" && field=large_folio_split
	want=${MIGRATE_SPLIT[$kver]}
	r=$(entry tracepoint.mm_migrate_pages reason "$caps")
	s=$(entry tracepoint.mm_migrate_pages status "$caps")
	local says
	case $r in
	*"has neither nr_split nor large_folio_split"*) says=none ;;
	*"has large_folio_split"*) says=large_folio_split ;;
	*"has nr_split"*) says=nr_split ;;
	*) says="?" ;;
	esac
	if [[ $s == supported && $field == "$want" && $says == "$want" ]]; then
		ok "$kver tracepoint.mm_migrate_pages split field ($want)"
	else
		fail "$kver tracepoint.mm_migrate_pages split field" "want $want; guest tracefs format has $field;" \
			"tracekit: $(explain tracepoint.mm_migrate_pages "$caps")"
	fi
}

# the sum of the folded counts of lines whose last frames are $2 (a regex), in section $1
folded_sum() {
	awk -v re="$2" '{ n = $NF; $NF = ""; sub(/ $/, ""); if ($0 ~ re) s += n } END { print s + 0 }' \
		"$1"
}

# what `tracekit alloc` wrote in the guest: $1 kernel, $2 guest dir
check_alloc() {
	local kver=$1 dir=$2 v name
	for name in alloc_full alloc_sampled alloc_growth; do
		if [[ $(cat "$dir/sections/$name.rc" 2>/dev/null) != 0 ]]; then
			fail "$kver $name exits 0" "exit $(cat "$dir/sections/$name.rc" 2>/dev/null)" \
				"stderr: $(head -c 1500 "$dir/sections/$name.stderr.out" 2>/dev/null)"
			return
		fi
	done
	ok "$kver tracekit alloc (full, sampled, growth) exit 0"
	v=$(folded_sum "$dir/sections/alloc_full.out" ';leak_site$')
	if [[ $v == 1048576 ]]; then ok "$kver alloc full: leak_site 1048576 bytes in use"
	else fail "$kver alloc full: leak_site 1048576 bytes in use" "got $v"; fi
	v=$(folded_sum "$dir/sections/alloc_sampled.out" ';leak_site$')
	if ((v >= 16777216 * 95 / 100 && v <= 16777216 * 105 / 100)); then
		ok "$kver alloc sampled: leak_site within 5 % ($v of 16777216)"
	else
		fail "$kver alloc sampled: leak_site within 5 %" "got $v of 16777216"
	fi
	if grep -q 'uprobes and uretprobes' "$dir/sections/alloc_sampled.stderr.out"; then
		ok "$kver alloc sampled: entry/return uprobes (no sessions before 6.13)"
	else
		fail "$kver alloc sampled: entry/return uprobes" \
			"$(grep -i 'backend' "$dir/sections/alloc_sampled.stderr.out" | head -c 500)"
	fi
	v=$(folded_sum "$dir/sections/alloc_growth.out" ';leak_site;\\[page fault\\]$')
	if ((v >= 4194304 * 75 / 100 && v <= 4194304 + 65536)); then
		ok "$kver alloc growth: leak_site's page faults ($v of 4194304)"
	else
		fail "$kver alloc growth: leak_site's page faults" "got $v of 4194304"
	fi
}

times=()
t_start=$(date +%s.%N)
for kver in $KERNELS; do
	check_kernel "$kver"
done
t_end=$(date +%s.%N)

printf '%s\n' "${times[@]}"
awk -v a="$t_start" -v b="$t_end" 'BEGIN { printf "vm: total %.1f s\n", b - a }'
echo "vm: $passed passed, $failed failed"
((failed > 0)) && exit 1
# a kernel that could not be tested must not let the run look like a pass
((skipped > 0)) && exit 77
exit 0
