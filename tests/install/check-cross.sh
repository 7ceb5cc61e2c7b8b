#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The arm64 cross build beside an x86 one (make ARCH=arm64, README "Building"):
#  - make ARCH=arm64 builds tracekit-static, the preload libraries and libtracekit into
#    BUILD_DIR/arm64, every one of them an AArch64 ELF, and its BPF objects for arm64
#    (their BTF has arm64's struct pt_regs, not x86's);
#  - the x86 tree beside it is untouched: no AArch64 ELF anywhere in BUILD_DIR outside
#    BUILD_DIR/arm64, x86's skeletons are not arm64's, and a plain make after it would run
#    no command on anything of BUILD_DIR/arm64 (nor link one of its objects).
#   tests/install/check-cross.sh [BUILD_DIR]   (default $TK_BUILD_DIR, else build)
# BUILD_DIR is a built x86 tree (make all static). Skipped without the cross compiler
# (tools/install-deps.sh --arm64). Also tools/btf-from-image.py on images made of this
# kernel's BTF. Ends with "cross: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/install/lib.sh

B=${1:-${TK_BUILD_DIR:-build}}
A=$B/arm64
JOBS=${TK_CROSS_JOBS:-2}
skel=$(grep -ho '[^ ]*/core_probe\.skel\.h' "$B"/obj/user/caps/core_probe.d 2>/dev/null |
	head -n1)
skel=${skel%/core_probe.skel.h}
skel=${skel:-skeletons}

# tools/btf-from-image.py (how vmlinux/arm64/vmlinux.h is made) on images made here: a raw
# BTF between bytes of no meaning is cut out whole; none, or two, is an error, not a guess.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -r /sys/kernel/btf/vmlinux ]] && command -v python3 >/dev/null; then
	head -c 65536 /dev/urandom >"$tmp/junk"
	cat "$tmp/junk" /sys/kernel/btf/vmlinux "$tmp/junk" >"$tmp/image"
	if tools/btf-from-image.py "$tmp/image" "$tmp/btf" && cmp -s "$tmp/btf" /sys/kernel/btf/vmlinux
	then
		pass "btf-from-image: the BTF cut out of a flat image whole"
	else
		fail "btf-from-image: the BTF cut out of a flat image is not the one put in"
	fi
	gzip -c "$tmp/image" >"$tmp/image.gz"
	tools/btf-from-image.py "$tmp/image.gz" "$tmp/btf.gz" && cmp -s "$tmp/btf.gz" /sys/kernel/btf/vmlinux &&
		pass "btf-from-image: and out of it gzipped" ||
		fail "btf-from-image: not out of the gzipped image"
	cat "$tmp/image" /sys/kernel/btf/vmlinux >"$tmp/two"
	if tools/btf-from-image.py "$tmp/two" "$tmp/btf2" 2>"$tmp/err"; then
		fail "btf-from-image: an image with two BTF blobs was cut by guess"
	else
		grep -q '2 BTF candidates' "$tmp/err" && pass "btf-from-image: two BTF blobs: an error" ||
			fail "btf-from-image: two BTF blobs: $(cat "$tmp/err")"
	fi
	tools/btf-from-image.py "$tmp/junk" "$tmp/btf3" 2>/dev/null &&
		fail "btf-from-image: BTF found in random bytes" ||
		pass "btf-from-image: no BTF: an error"
else
	skip "btf-from-image: no /sys/kernel/btf/vmlinux or python3 to build an image from"
fi

need_tool aarch64-linux-gnu-gcc "no arm64 cross build" || { summary cross; exit; }
need_tool readelf "cannot read ELF headers" || { summary cross; exit; }
need_tool bpftool "cannot read BPF objects" || { summary cross; exit; }

# "AArch64", "Advanced Micro Devices X86-64", "Linux BPF", or "" for no ELF
machine() { readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'; }

if ! out=$(make -j"$JOBS" ARCH=arm64 BUILD="$A" 2>&1); then
	printf '%s\n' "$out" | tail -n 20
	fail "make ARCH=arm64 BUILD=$A"
	summary cross
	exit
fi
pass "make ARCH=arm64 BUILD=$A"

for f in tracekit-static libtkalloc.so libtkagent.so libtracekit.so.0.1.0; do
	m=$(machine "$A/$f")
	[[ $m == AArch64 ]] && pass "$A/$f is AArch64" || fail "$A/$f is '$m', not AArch64"
done
m=$(ar t "$A/libtracekit.a" >/dev/null 2>&1 && cd "$(mktemp -d)" &&
	ar x "$OLDPWD/$A/libtracekit.a" && for o in *.o; do machine "$o"; done | sort -u)
[[ $m == AArch64 ]] && pass "libtracekit.a holds AArch64 objects only" ||
	fail "libtracekit.a holds: $(oneline "$m")"
if readelf -lW "$A/tracekit-static" | grep -q 'program interpreter'; then
	fail "$A/tracekit-static has a program interpreter (not static)"
else
	pass "$A/tracekit-static is statically linked"
fi

# the BPF objects: compiled with -D__TARGET_ARCH_arm64 against vmlinux/arm64/vmlinux.h, whose
# struct pt_regs is 42 slots (336 bytes; x86-64's is 21, 168)
regs_size() { bpftool btf dump file "$1" 2>/dev/null |
	sed -n "s/^\[[0-9]*\] STRUCT 'pt_regs' size=\([0-9]*\) .*/\1/p" | head -n1; }
a=$(regs_size "$A/bpf/stacks_iter.bpf.o")
x=$(regs_size "$B/bpf/stacks_iter.bpf.o")
[[ $a == 336 ]] && pass "arm64 stacks_iter.bpf.o has arm64's struct pt_regs (336 bytes)" ||
	fail "arm64 stacks_iter.bpf.o: struct pt_regs of '$a' bytes, not arm64's 336"
[[ $x == 168 ]] && pass "x86 stacks_iter.bpf.o has x86-64's struct pt_regs (168 bytes)" ||
	fail "x86 stacks_iter.bpf.o: struct pt_regs of '$x' bytes, not x86-64's 168"
# The BPF object a skeleton embeds (what a binary built with it loads), and the skeletons
# every object of each tree was compiled with (their dependency files name them).
skel_object() {
	printf '#include <stdio.h>\n#include "%s"\nint main(void) { size_t n; const void *p =\n%s(&n);\nreturn fwrite(p, 1, n, stdout) != n; }\n' \
		"$PWD/$1" stacks_iter_bpf__elf_bytes >"$tmp/dump.c" &&
		${HOSTCC:-cc} -w -o "$tmp/dump" "$tmp/dump.c" -lbpf && "$tmp/dump" >"$2"
}
for t in "x86 $skel 168" "arm64 $A/skeletons 336"; do
	read -r arch dir size <<<"$t"
	if skel_object "$dir/stacks_iter.skel.h" "$tmp/$arch.o"; then
		got=$(regs_size "$tmp/$arch.o")
		[[ $got == "$size" ]] && pass "$dir/stacks_iter.skel.h embeds the $arch object" ||
			fail "$dir/stacks_iter.skel.h embeds an object whose pt_regs is '$got' bytes, not $arch's $size"
	else
		fail "cannot read the object out of $dir/stacks_iter.skel.h"
	fi
done
# the stacks iterator's record: arm64's carries LR (x30) after x86's fields, x86's is as it was
rec_lr() { bpftool btf dump file "$1" 2>/dev/null | awk '
	/^\[[0-9]+\] STRUCT / { in_rec = $3 == "\047stk_rec\047"; if (in_rec) size = $4; next }
	/^\[/ { in_rec = 0 }
	in_rec && $1 == "\047lr\047" { lr = $3 }
	END { sub(/size=/, "", size); sub(/bits_offset=/, "", lr); print size, (lr == "" ? "none" : lr) }'; }
read -r xs xl <<<"$(rec_lr "$B/bpf/stacks_iter.bpf.o")"
read -r as al <<<"$(rec_lr "$A/bpf/stacks_iter.bpf.o")"
[[ $xl == none && $al == $((xs * 8)) && $as == $((xs + 8)) ]] &&
	pass "stk_rec: arm64's ($as bytes) carries lr after x86's $xs bytes, x86's none" ||
	fail "stk_rec: x86 $xs bytes, lr at $xl; arm64 $as bytes, lr at bit $al (want none; $((xs * 8)), $((xs + 8)) bytes)"
skels_named() { find "$1" \( "${@:2}" \) -prune -o -name '*.d' -type f -print0 |
	xargs -0 grep -ho '[^ :]*\.skel\.h' | sed 's|/[^/]*$||' | sort -u; }
m=$(skels_named "$A" -false)
[[ $m == "$A/skeletons" ]] && pass "arm64 objects include $A/skeletons only" ||
	fail "arm64 objects include skeletons from: $(oneline "$m")"
m=$(skels_named "$B" -path "$A" -o -path "$B/roots")
[[ $m == "$skel" ]] && pass "x86 objects include $skel only" ||
	fail "x86 objects include skeletons from: $(oneline "$m")"

# nothing of arm64 in the x86 tree
bad=$(find "$B" \( -path "$A" -o -path "$B/roots" -o -path "$B/vm" \) -prune -o -type f \
	\( -name '*.o' -o -name '*.so' -o -name '*.so.*' -o -name '*.a' -o -perm -u+x \) -print |
	while read -r f; do
		[[ $(machine "$f") == AArch64 ]] && echo "$f"
	done)
[[ -z $bad ]] && pass "no AArch64 ELF in $B outside $A" ||
	fail "AArch64 ELF in the x86 tree: $(oneline "$bad" | cut -c1-300)"
# what an x86 make would do now: nothing with the arm64 tree, no object of it linked
n=$(make -n all static BUILD="$B" SKEL="$skel" 2>&1 | grep -c -- "$A/" || true)
((n == 0)) && pass "make (x86) after make ARCH=arm64 names nothing in $A" ||
	fail "make (x86) after make ARCH=arm64 names $n lines in $A"
# the guests' static workloads (tests/vm/matrix.sh) build for arm64 too
for w in stacks_shape_static cpu_offcpu_span_static; do
	if out=$(make -j"$JOBS" ARCH=arm64 BUILD="$A" "$A/workloads/$w" 2>&1) &&
		[[ $(machine "$A/workloads/$w") == AArch64 ]]; then
		pass "make ARCH=arm64 $A/workloads/$w: AArch64"
	else
		fail "make ARCH=arm64 $A/workloads/$w: $(oneline "$(printf '%s\n' "$out" | tail -n 5)")"
	fi
done
summary cross
