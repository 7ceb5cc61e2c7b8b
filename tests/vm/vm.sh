#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Run static programs inside QEMU guests on other kernels (Debian's 6.1 and 6.12
# cloud kernels), optionally with two NUMA nodes, and collect tagged results from
# the serial console. The measured facts behind the choices: shared notes, kernel-matrix.md.
#
#   vm.sh fetch KVER
#       Download the newest linux-image-KVER*-cloud-amd64-unsigned with apt-get into
#       the cache and keep only its vmlinuz and config. Prints the vmlinuz path.
#       A kernel already in the cache is not downloaded again.
#   vm.sh initramfs OUT PAYLOAD [FILE...]
#       Build the guest's initramfs (cpio newc + gzip) into OUT.
#   vm.sh run KVER [--numa2] [--out DIR] [--timeout S] [--append ARGS] PAYLOAD [FILE...]
#       fetch + initramfs + boot; writes DIR/console.log and the results below.
#
# KVER is 6.1 or 6.12. FILE is SRC or SRC:DEST (DEST an absolute guest path; the
# default is /bin/$(basename SRC)), e.g. build/tracekit-static:/bin/tracekit.
#
# PAYLOAD is a busybox sh script; /init sources it after mounting proc, sysfs,
# devtmpfs, tmpfs on /tmp, tracefs, debugfs, bpffs and cgroup2. It can use:
#   tk_say TEXT...           one result line: "TKVM: TEXT" on the console
#   tk_run NAME CMD [ARG...] run CMD, print its stdout between "TKVM-BEGIN NAME" and
#                            "TKVM-END NAME RC" (each line prefixed "TKVM| "), its
#                            stderr the same way as section NAME.stderr; returns RC
# Kernel messages logged while the payload runs come back as section "dmesg".
# /init ends with "TKVM-DONE RC" (RC: the payload's status) and powers off.
#
# Results of `run` in DIR (default build/vm/KVER): console.log (all of the serial
# console), results.txt (the TKVM: lines), sections/NAME.out + sections/NAME.rc,
# status (the payload's status). Exit status: 0 the payload ended with 0; 1 it ended
# non-zero; 2 the guest hung or died before TKVM-DONE (after one retry);
# 77 QEMU or the kernel cannot be had here (skip); 64 usage.
#
# Environment: TK_VM_CACHE (default /var/cache/tracekit-vm), TK_VM_TIMEOUT (seconds
# per boot, default 300), TK_VM_ACCEL (default tcg,thread=multi; /dev/kvm on these
# machines is a nested hypervisor that cannot run stock Debian kernels, so KVM is
# never tried unless asked for), TK_VM_QEMU (default qemu-system-x86_64),
# TK_VM_BUSYBOX (default /bin/busybox, must be static), TK_VM_SMP (default 2, the
# two-node layout the notes measured; both CPUs then sit in one socket, so the
# guest warns "llc-sibling CPU #0 is not on the same node" at boot;
# "2,sockets=2" gives each node its own socket), TK_VM_VERBOSE=1 to echo the
# console while the guest runs.
set -euo pipefail

CACHE=${TK_VM_CACHE:-/var/cache/tracekit-vm}
TIMEOUT=${TK_VM_TIMEOUT:-300}
ACCEL=${TK_VM_ACCEL:-tcg,thread=multi}
QEMU=${TK_VM_QEMU:-qemu-system-x86_64}
BUSYBOX=${TK_VM_BUSYBOX:-/bin/busybox}
SMP=${TK_VM_SMP:-2}
SKIP=77

die() {
	echo "vm: $*" >&2
	exit 1
}
skip() {
	echo "vm: skip: $*" >&2
	exit $SKIP
}
note() { echo "vm: $*" >&2; }

usage() {
	sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 64
}

# The apt package pattern for a kernel series.
kver_pattern() {
	case $1 in
	6.1) echo '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' ;;
	6.12) echo '^linux-image-6\.12\.[0-9]+\+deb[0-9]+-cloud-amd64-unsigned$' ;;
	*) die "unknown kernel series '$1' (known: 6.1 6.12)" ;;
	esac
}

# A cached kernel of this series, newest first by version.
cached_kernel() {
	local kver=$1 d
	for d in $(printf '%s\n' "$CACHE"/kernels/"$kver".* | sort -rV); do
		if [[ -s $d/vmlinuz ]]; then
			echo "$d/vmlinuz"
			return 0
		fi
	done
	return 1
}

cmd_fetch() {
	[[ $# -eq 1 ]] || usage
	local kver=$1 pat pkg release dir tmp deb
	pat=$(kver_pattern "$kver")
	mkdir -p "$CACHE/kernels" 2>/dev/null || skip "cannot create cache $CACHE (set TK_VM_CACHE)"
	# serialise fetches: two runs must not half-extract the same kernel
	exec 9>"$CACHE/.lock"
	flock 9

	pkg=""
	if command -v apt-cache >/dev/null; then
		pkg=$(apt-cache search --names-only "$pat" 2>/dev/null | awk '{print $1}' |
			grep -E "$pat" | sort -V | tail -n1 || true)
	fi
	if [[ -z $pkg ]]; then
		# no package index (or not Debian): a cached kernel is still good
		if cached_kernel "$kver"; then
			return 0
		fi
		skip "no package matching $pat in apt's index and none cached in $CACHE"
	fi
	release=${pkg#linux-image-}
	release=${release%-unsigned}
	dir=$CACHE/kernels/$release
	if [[ -s $dir/vmlinuz ]]; then
		echo "$dir/vmlinuz"
		return 0
	fi

	note "fetching $pkg"
	tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX")
	# apt-get download writes into the current folder; as root it warns that it
	# runs unsandboxed, which is expected here
	if ! (cd "$tmp" && apt-get download -q "$pkg" >download.log 2>&1); then
		sed 's/^/  /' "$tmp/download.log" >&2
		rm -rf "$tmp"
		if cached_kernel "$kver"; then
			note "download failed; using the cached $(cached_kernel "$kver")"
			return 0
		fi
		skip "apt-get download $pkg failed"
	fi
	deb=$(ls "$tmp"/*.deb)
	mkdir -p "$tmp/x"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$tmp/x" --wildcards './boot/vmlinuz-*' './boot/config-*'
	mkdir -p "$tmp/k"
	mv "$tmp"/x/boot/vmlinuz-* "$tmp/k/vmlinuz"
	mv "$tmp"/x/boot/config-* "$tmp/k/config"
	echo "$pkg" >"$tmp/k/package"
	rm -rf "$dir"
	mv "$tmp/k" "$dir"
	rm -rf "$tmp"
	echo "$dir/vmlinuz"
}

# The guest's /init. Runs under busybox sh with nothing mounted and, until it
# mounts devtmpfs, no console.
write_init() {
	cat >"$1" <<'EOF'
#!/bin/busybox sh
/bin/busybox mkdir -p /dev /proc /sys /tmp /run
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
# From here only emergencies reach the console, so kernel messages do not
# split result lines; what the kernel logs during the payload is returned as
# the "dmesg" section instead.
echo 1 >/proc/sys/kernel/printk
hostname tkvm

tk_say() { echo "TKVM: $*"; }
tk_section() { awk '{ print "TKVM| " $0 }' "$1"; }
tk_run() {
	local name=$1 rc
	shift
	"$@" >/tmp/.tk_out 2>/tmp/.tk_err
	rc=$?
	echo "TKVM-BEGIN $name"
	tk_section /tmp/.tk_out
	echo "TKVM-END $name $rc"
	if [ -s /tmp/.tk_err ]; then
		echo "TKVM-BEGIN $name.stderr"
		tk_section /tmp/.tk_err
		echo "TKVM-END $name.stderr 0"
	fi
	rm -f /tmp/.tk_out /tmp/.tk_err
	return $rc
}

tk_say "kernel $(uname -r) nodes $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l) cpus $(nproc) uptime $(cut -d' ' -f1 /proc/uptime)"
dmesg >/tmp/.tk_dmesg0
(cd /tmp && . /payload)
rc=$?
dmesg >/tmp/.tk_dmesg1
n0=$(wc -l </tmp/.tk_dmesg0)
tail -n +$((n0 + 1)) /tmp/.tk_dmesg1 >/tmp/.tk_dmesg
echo "TKVM-BEGIN dmesg"
tk_section /tmp/.tk_dmesg
echo "TKVM-END dmesg 0"
tk_say "uptime $(cut -d' ' -f1 /proc/uptime)"
echo "TKVM-DONE $rc"
sync
poweroff -f
echo o >/proc/sysrq-trigger
sleep 10
EOF
	chmod 755 "$1"
}

cmd_initramfs() {
	[[ $# -ge 2 ]] || usage
	local out=$1 payload=$2 stage spec src dest
	shift 2
	[[ -r $payload ]] || die "payload $payload not readable"
	[[ -x $BUSYBOX ]] || skip "no $BUSYBOX (apt-get install busybox-static)"
	# a program interpreter makes it dynamic (readelf: binutils; a minimal Debian has no file(1))
	if readelf -lW "$BUSYBOX" 2>/dev/null | grep -q 'Requesting program interpreter'; then
		skip "$BUSYBOX is dynamically linked (apt-get install busybox-static)"
	fi
	command -v cpio >/dev/null || skip "no cpio (apt-get install cpio)"

	stage=$(mktemp -d)
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,root,etc}
	cp "$BUSYBOX" "$stage/bin/busybox"
	write_init "$stage/init"
	cp "$payload" "$stage/payload"
	for spec in "$@"; do
		src=${spec%%:*}
		if [[ $spec == *:* ]]; then dest=${spec#*:}; else dest=/bin/$(basename "$src"); fi
		[[ $dest == /* ]] || { rm -rf "$stage"; die "guest path '$dest' is not absolute"; }
		[[ -e $src ]] || { rm -rf "$stage"; die "file $src does not exist"; }
		mkdir -p "$stage$(dirname "$dest")"
		cp -L "$src" "$stage$dest"
	done
	(cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet | gzip -6 -n) >"$out.tmp"
	mv "$out.tmp" "$out"
	rm -rf "$stage"
}

# Split a console log into results.txt, sections/NAME.{out,rc} and status.
# Prints "done RC" when the guest reached TKVM-DONE, else "incomplete WHY".
extract() {
	local log=$1 dir=$2
	rm -rf "$dir/sections" "$dir/results.txt" "$dir/status"
	mkdir -p "$dir/sections"
	tr -d '\r' <"$log" | awk -v dir="$dir" '
	function tag(s,   i) { i = index(s, "TKVM"); return i ? substr(s, i) : "" }
	{
		line = tag($0)
		if (line == "") next
		if (line ~ /^TKVM-BEGIN /) {
			split(line, f, " "); name = f[2]; open = 1
			file = dir "/sections/" name ".out"; printf "" > file
			next
		}
		if (line ~ /^TKVM-END /) {
			split(line, f, " ")
			if (open && f[2] == name) {
				close(file); print f[3] > (dir "/sections/" name ".rc"); close(dir "/sections/" name ".rc")
			}
			open = 0; next
		}
		if (line ~ /^TKVM\| / || line == "TKVM|") {
			if (open) print substr(line, 7) > file
			next
		}
		if (line ~ /^TKVM: /) { print substr(line, 7) > (dir "/results.txt"); next }
		if (line ~ /^TKVM-DONE /) { split(line, f, " "); done = f[2]; next }
	}
	END {
		if (open) { print "incomplete section " name " has no TKVM-END"; exit }
		if (done == "") { print "incomplete no TKVM-DONE"; exit }
		print done > (dir "/status")
		print "done " done
	}'
}

# Why a guest stopped early, from the tail of its console.
diagnose() {
	local log=$1
	tr -d '\r' <"$log" | grep -E -m3 'Kernel panic|soft lockup|BUG:|Oops|Unable to|not syncing|hung_task' |
		sed 's/^/    /' >&2 || true
}

cmd_run() {
	local kver="" numa2=0 out="" append="" timeout=$TIMEOUT
	while [[ $# -gt 0 ]]; do
		case $1 in
		--numa2) numa2=1 ;;
		--out) out=$2; shift ;;
		--timeout) timeout=$2; shift ;;
		--append) append=$2; shift ;;
		-h | --help) usage ;;
		-*) die "unknown option $1" ;;
		*) if [[ -z $kver ]]; then kver=$1; else break; fi ;;
		esac
		shift
	done
	[[ -n $kver && $# -ge 1 ]] || usage
	local payload=$1
	shift
	out=${out:-build/vm/$kver}

	command -v "$QEMU" >/dev/null || skip "no $QEMU (apt-get install qemu-system-x86)"
	local kernel
	kernel=$(cmd_fetch "$kver") || exit $?
	mkdir -p "$out"
	cmd_initramfs "$out/initramfs.gz" "$payload" "$@"

	local qargs=(
		-accel "$ACCEL" -nographic -no-reboot -nodefaults -serial stdio
		-m 2048M -smp "$SMP"
		-kernel "$kernel" -initrd "$out/initramfs.gz"
		-append "console=ttyS0 panic=-1 softlockup_panic=1 oops=panic rdinit=/init $append"
	)
	if ((numa2)); then
		# shellcheck disable=SC2054 # the commas are QEMU's, inside one argument
		qargs+=(
			-object memory-backend-ram,id=m0,size=1024M
			-object memory-backend-ram,id=m1,size=1024M
			-numa node,nodeid=0,cpus=0,memdev=m0
			-numa node,nodeid=1,cpus=1,memdev=m1
		)
	fi

	local attempt result t0 t1 rc log
	for attempt in 1 2; do
		log=$out/console.$attempt.log
		t0=$(date +%s.%N)
		set +e
		if [[ ${TK_VM_VERBOSE:-0} == 1 ]]; then
			timeout -k 10 "$timeout" "$QEMU" "${qargs[@]}" </dev/null 2>"$out/qemu.$attempt.err" | tee "$log"
			rc=${PIPESTATUS[0]}
		else
			timeout -k 10 "$timeout" "$QEMU" "${qargs[@]}" </dev/null >"$log" 2>"$out/qemu.$attempt.err"
			rc=$?
		fi
		set -e
		t1=$(date +%s.%N)
		cp "$log" "$out/console.log"
		result=$(extract "$log" "$out")
		printf '%s\n' "$t0 $t1" | awk -v k="$kver" -v a="$attempt" -v n=$numa2 \
			'{ printf "vm: %s%s attempt %d: %.1f s\n", k, n ? " (2 nodes)" : "", a, $2 - $1 }' >&2
		if [[ $result == done* ]]; then
			local status=${result#done }
			if [[ $status != 0 ]]; then
				note "$kver: the payload ended with status $status (console: $out/console.log)"
				return 1
			fi
			return 0
		fi
		if ((rc == 124 || rc == 137)); then
			note "$kver attempt $attempt: guest did not finish within ${timeout}s (${result#incomplete })"
		elif [[ -s $out/qemu.$attempt.err ]] && ! grep -q TKVM "$log"; then
			note "$kver attempt $attempt: qemu exited with $rc before the payload ran:"
			sed 's/^/    /' "$out/qemu.$attempt.err" >&2
		else
			note "$kver attempt $attempt: guest stopped without its END marker (${result#incomplete }; qemu rc $rc)"
		fi
		diagnose "$log"
		((attempt == 1)) && note "$kver: retrying once"
	done
	note "$kver: no TKVM-DONE after 2 boots; console: $out/console.log"
	return 2
}

[[ $# -ge 1 ]] || usage
sub=$1
shift
case $sub in
fetch) cmd_fetch "$@" ;;
initramfs) cmd_initramfs "$@" ;;
run) cmd_run "$@" ;;
-h | --help | help) usage ;;
*) die "unknown command '$sub' (fetch, initramfs, run)" ;;
esac
