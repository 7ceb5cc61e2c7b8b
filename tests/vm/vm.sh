#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Run static programs inside QEMU guests on other kernels (Debian's cloud kernels: 5.10,
# 6.1, 6.12 and sid's newest), optionally with two NUMA nodes, and collect tagged results
# from the serial console. The measured facts behind the choices: shared notes,
# kernel-matrix.md.
#
#   vm.sh fetch SERIES
#       Find the newest kernel of SERIES in a private apt index and keep only its vmlinuz
#       and config (when the package has one) in $TK_VM_CACHE/kernels/RELEASE/, with a
#       file "package" naming the package (a kernel put there by hand needs none).
#       Prints the vmlinuz path. A kernel already in the cache is not downloaded again.
#   vm.sh initramfs OUT PAYLOAD [FILE...]
#       Build the guest's initramfs (cpio newc + gzip) into OUT.
#   vm.sh run SERIES [--numa2] [--out DIR] [--timeout S] [--append ARGS] PAYLOAD [FILE...]
#       fetch + initramfs + boot; writes DIR/console.log and the results below.
#   vm.sh download DIR PACKAGE...
#       Download Debian packages (NAME:ARCH/SUITE, e.g. python3.11-minimal:arm64/bookworm)
#       through the same private index into DIR, for what a guest runs besides tracekit
#       (tests/vm/py-bundle.sh); nothing is installed.
#
# SERIES, found by package name, newest version first, nothing pinned:
#   5.10    linux-image-5.10.0-NN-cloud-amd64-unsigned (bullseye, bullseye-security)
#   6.1     linux-image-6.1.0-NN-cloud-amd64-unsigned (bookworm, bookworm-security)
#   6.12    linux-image-6.12.NNN+debNN-cloud-amd64-unsigned (bookworm-backports, trixie, and
#           their security archives: the highest, +deb13 over +deb12)
#   newest  the highest-versioned cloud kernel in sid; there linux-image-RELEASE is a meta
#           package and the image is in linux-binary-RELEASE
#   arm64/SERIES  the same series' cloud-arm64 kernel, booted by qemu-system-aarch64
#           (-M virt -cpu max,pauth-impdef=on: pointer authentication and BTI emulated,
#           the cheap PAC algorithm) with console ttyAMA0; its busybox is bookworm's
#           busybox-static:arm64, downloaded the same way into $TK_VM_CACHE/busybox-arm64
#           (it cannot be installed beside the amd64 one), unless TK_VM_BUSYBOX_ARM64 names one.
# The image is ./boot/vmlinuz-RELEASE or ./usr/lib/modules/RELEASE/vmlinuz, in any series.
# The index is apt's, under a configuration of our own in $TK_VM_CACHE/apt (sources.list,
# lists/, cache/): the machine's Debian mirror (the URIs serving bookworm in
# /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list; deb.debian.org when none
# does) with bullseye, bookworm, bookworm-backports, trixie and sid, and the machine's
# security archive (when it names none, MIRROR-security beside a .../debian mirror, as
# deb.debian.org serves it: a debootstrap root picks the host's kernels) with
# bullseye-security, bookworm-security and trixie-security. /etc/apt is
# never changed. The lists are refreshed when older than 12 h. When there is no index
# (offline, not Debian) or nothing in it downloads, the newest cached kernel of the series
# is used; for newest that is the highest cached release of none of the other series.
#
# FILE is SRC or SRC:DEST (DEST an absolute guest path; the default is
# /bin/$(basename SRC)), e.g. build/tracekit-static:/bin/tracekit.
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
# Results of `run` in DIR (default build/vm/SERIES): release (the kernel booted, e.g.
# 5.10.0-43-cloud-amd64), console.log (all of the serial console), results.txt (the TKVM:
# lines), sections/NAME.out + sections/NAME.rc, status (the payload's status). Exit
# status: 0 the payload ended with 0; 1 it ended non-zero; 2 the guest hung or died
# before TKVM-DONE (after one retry); 77 QEMU, busybox-static, cpio or the kernel cannot be
# had here (skip); 3 the same under CI (CI=true or 1), where it is a failure, the reason
# on stderr; 64 usage.
#
# Environment: TK_VM_CACHE (default /var/cache/tracekit-vm), TK_VM_TIMEOUT (seconds
# per boot, default 300), TK_VM_ACCEL (default tcg,thread=multi; /dev/kvm on these
# machines is a nested hypervisor that cannot run stock Debian kernels, so KVM is
# never tried unless asked for), TK_VM_QEMU (default qemu-system-x86_64; for arm64/
# series TK_VM_QEMU_ARM64, default qemu-system-aarch64), TK_VM_BUSYBOX (default
# /bin/busybox, must be static; arm64: TK_VM_BUSYBOX_ARM64), TK_VM_SMP (default 2, the
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
# the guest architecture: set from an arm64/ series by arch_of
ARCH=x86 FLAVOUR=amd64 DEB_ARCH=amd64
SMP=${TK_VM_SMP:-2}
SKIP=77
UNAVAILABLE=3	# what would be a skip, under CI

die() {
	echo "vm: $*" >&2
	exit 1
}
# Outside CI a kernel or tool this machine cannot have is a skip. Under CI it is a
# failure: CI installs everything, so a kernel it cannot fetch or a QEMU it lacks is
# something broken, and a matrix that silently shrinks would still pass.
skip() {
	if [[ ${CI:-} == true || ${CI:-} == 1 ]]; then
		echo "vm: error: $* (CI=$CI: what would be skipped here fails)" >&2
		exit $UNAVAILABLE
	fi
	echo "vm: skip: $*" >&2
	exit $SKIP
}
note() { echo "vm: $*" >&2; }

usage() {
	sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 64
}

# ---- kernels: Debian's, through a private apt configuration ---------------------------
# The machine's own apt sources list bookworm at most (no backports, no bullseye, no sid), and
# they are not ours to change: an apt configuration of our own under $CACHE/apt names the
# suites the series live in, with its own lists and archives, and leaves /etc/apt alone.
APT_DIR=$CACHE/apt
APT_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
APT_MAX_AGE_MIN=720	# refresh the private lists after 12 h
APT_OPTS=(
	-o "Dir::Etc::SourceList=$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache"
	# the machine's pins are about what it installs; a pin of linux-image-* must not hide
	# a kernel we only download
	-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
	# an unreachable mirror should cost seconds, not apt's default two minutes per file
	-o Acquire::http::Timeout=30 -o Acquire::https::Timeout=30 -o Acquire::Retries=1
	# the mirror may serve a dated snapshot of the archive, whose sid Release has expired
	# (measured in a fresh minbase root: "invalid since 25d"); the signatures are still
	# checked, only their age is not: these packages are guest kernels, never installed
	-o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false
	# both architectures' indexes, whatever dpkg's foreign architectures are: the arm64
	# guests' kernels and busybox come from the same lists
	-o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o APT::Architectures::=arm64
)
SERIES="5.10 6.1 6.12 newest"

# Split an arm64/ prefix off a series: sets ARCH, FLAVOUR (the package flavour), DEB_ARCH,
# QEMU and BUSYBOX for that architecture; prints the bare series.
arch_of() {
	case $1 in
	arm64/*)
		ARCH=arm64 FLAVOUR=arm64 DEB_ARCH=arm64
		QEMU=${TK_VM_QEMU_ARM64:-qemu-system-aarch64}
		BUSYBOX=${TK_VM_BUSYBOX_ARM64:-}
		SERIES_BARE=${1#arm64/}
		;;
	*) SERIES_BARE=$1 ;;
	esac
}

# A series' release names (uname -r), as an ERE. newest is whatever sid's highest is.
series_re() {
	local f=cloud-$FLAVOUR
	case $1 in
	5.10) echo "5\\.10\\.0-[0-9]+-$f" ;;
	6.1) echo "6\\.1\\.0-[0-9]+-$f" ;;
	6.12) echo "6\\.12\\.[0-9]+\\+deb[0-9]+-$f" ;;
	newest) echo "[0-9]+\\.[0-9]+[^ /]*-$f" ;;
	*) die "unknown kernel series '$1' (known: $SERIES, each also as arm64/SERIES)" ;;
	esac
}

# The machine's Debian mirror and security archive: "MIRROR SECURITY", SECURITY "-" when
# it has none. The mirror is the archive that serves bookworm, in deb822 .sources files or
# one-line sources.list entries; deb.debian.org when neither names one.
machine_mirrors() {
	local files=()
	shopt -s nullglob
	files=(/etc/apt/sources.list.d/*.sources)
	local lists=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list)
	shopt -u nullglob
	{
		# deb822: stanzas split by blank lines; a stanza's URIs serve all its Suites
		((${#files[@]})) && awk '
			function flush() {
				if (uri != "" && types ~ /(^| )deb( |$)/ && enabled !~ /^(no|false)$/)
					for (i = 1; i <= ns; i++) print suite[i], uri
				uri = ""; types = ""; enabled = ""; ns = 0
			}
			FNR == 1 { flush() }	# mawk has no ENDFILE
			/^[ \t]*$/ { flush(); next }
			/^#/ { next }
			tolower($1) == "types:" { $1 = ""; types = $0 }
			tolower($1) == "uris:" { uri = $2 }
			tolower($1) == "enabled:" { enabled = tolower($2) }
			tolower($1) == "suites:" { ns = 0; for (i = 2; i <= NF; i++) suite[++ns] = $i }
			END { flush() }' "${files[@]}"
		# one-line: deb [options] URI SUITE COMPONENT...
		local f
		for f in "${lists[@]}"; do
			[[ -r $f ]] || continue
			sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && NF >= 3 { print $3, $2 }'
		done
	} 2>/dev/null | awk '
		$1 == "bookworm" && m == "" { m = $2 }
		# a machine on another release: its mirror serves bookworm too
		$1 ~ /^(bullseye|trixie|forky|sid|stable|testing|unstable)$/ && o == "" { o = $2 }
		$1 ~ /-security$|^bookworm\/updates$/ && s == "" { s = $2 }
		END {
			if (m == "") m = o == "" ? "http://deb.debian.org/debian" : o
			# none named (a debootstrap root lists bookworm only): the one beside the mirror,
			# as deb.debian.org serves it, so that every machine picks the same kernels
			if (s == "" && m ~ /\/debian\/?$/) { s = m; sub(/\/?$/, "-security", s) }
			print m, (s == "" ? "-" : s)
		}'
}

# Write the private sources.list; refresh its lists when they are missing, older than
# APT_MAX_AGE_MIN or of another sources.list. A failed refresh keeps the lists there were
# (apt keeps them), so a machine offline still finds its kernels in the cache. Runs under
# the fetch lock.
apt_index() {
	local mirror security s new=$APT_DIR/sources.list.new stamp=$APT_DIR/updated
	command -v apt-get >/dev/null && command -v apt-cache >/dev/null || return 1
	[[ -r $APT_KEYRING ]] || { note "no $APT_KEYRING (apt-get install debian-archive-keyring)"; return 1; }
	mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" || return 1
	read -r mirror security < <(machine_mirrors)
	{
		for s in bullseye bookworm bookworm-backports trixie sid; do
			echo "deb [arch=amd64,arm64 signed-by=$APT_KEYRING] $mirror $s main"
		done
		# point releases of the stable kernels reach the security archive first
		if [[ $security != - ]]; then
			for s in bullseye-security bookworm-security trixie-security; do
				echo "deb [arch=amd64,arm64 signed-by=$APT_KEYRING] $security $s main"
			done
		fi
	} >"$new"
	if ! cmp -s "$new" "$APT_DIR/sources.list"; then
		mv "$new" "$APT_DIR/sources.list"
		rm -f "$stamp"
	else
		rm -f "$new"
	fi
	if [[ -z $(find "$stamp" -mmin -"$APT_MAX_AGE_MIN" 2>/dev/null) ]]; then
		note "updating the private package lists in $APT_DIR (from $mirror$([[ $security != - ]] && echo " and $security"))"
		if timeout 600 apt-get "${APT_OPTS[@]}" -q update >"$APT_DIR/update.log" 2>&1; then
			touch "$stamp"
			rm -f "$APT_DIR/failed"	# new lists: worth trying again
		else
			note "apt-get update failed (keeping the lists there were):"
			grep -E '^(E|W|Err):' "$APT_DIR/update.log" | head -n 8 | sed 's/^/    /' >&2 || true
		fi
	fi
	return 0
}

# The releases of a series in the private index, newest first, each with the package its
# image is in: "RELEASE PACKAGE" lines. The image is in linux-image-RELEASE-unsigned up to
# 6.x, in linux-binary-RELEASE where linux-image-RELEASE became a meta package (sid, 7.x);
# either is taken for any series.
index_releases() {
	local series=$1 re names
	re=$(series_re "$series")
	names=$(apt-cache "${APT_OPTS[@]}" search --names-only "^linux-(image|binary)-[0-9].*-cloud-$FLAVOUR" \
		2>/dev/null | awk '{ print $1 }' |
		grep -E "^linux-(image-$re-unsigned|binary-$re)\$" || true)
	[[ -n $names ]] || return 1
	if [[ $series == newest ]]; then
		# only what sid has: the other suites' kernels are the other series
		# shellcheck disable=SC2086 # one word per package
		names=$(apt-cache "${APT_OPTS[@]}" madison $names 2>/dev/null |
			awk -F' [|] ' '$3 ~ / sid\// { gsub(/ /, "", $1); sub(/:[a-z0-9]+$/, "", $1); print $1 }' |
			sort -u)
		[[ -n $names ]] || return 1
	fi
	# one package per release: linux-binary- sorts before linux-image- and wins
	awk '{ r = $1; sub(/^linux-(image|binary)-/, "", r); sub(/-unsigned$/, "", r); print r, $1 }' \
		<<<"$names" | sort -k1,1rV -k2,2 | awk '!seen[$1]++'
}

# The newest cached kernel of a series: its vmlinuz path. newest is the highest cached
# release that belongs to none of the named series (so an offline newest never
# silently becomes a second 6.12 column).
cached_kernel() {
	local series=$1 re d name s other best=""
	re=$(series_re "$series")
	for d in "$CACHE"/kernels/*/; do
		d=${d%/}
		name=${d##*/}
		[[ -s $d/vmlinuz && $name =~ ^$re$ ]] || continue
		if [[ $series == newest ]]; then
			other=0
			for s in $SERIES; do
				[[ $s != newest && $name =~ ^$(series_re "$s")$ ]] && other=1
			done
			((other)) && continue
		fi
		best+="$name"$'\n'
	done
	best=$(printf '%s' "$best" | sort -V | tail -n1)
	[[ -n $best ]] || return 1
	echo "$CACHE/kernels/$best/vmlinuz"
}

# Whether release $1 is newer than release $2.
newer() { [[ $1 != "$2" && $(printf '%s\n' "$1" "$2" | sort -V | tail -n1) == "$1" ]]; }

# Download PACKAGE and keep its image (and config, when it has one) in DIR.
fetch_package() {
	local pkg=$1 dir=$2 tmp deb img cfg want
	note "fetching $pkg"
	tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX")
	# apt-get download writes into the current folder; as root it warns that it runs
	# unsandboxed, which is expected here
	if ! (cd "$tmp" && apt-get "${APT_OPTS[@]}" download -q "$pkg:$DEB_ARCH" >download.log 2>&1); then
		sed 's/^/  /' "$tmp/download.log" >&2
		rm -rf "$tmp"
		return 1
	fi
	deb=$(ls "$tmp"/*.deb)
	# regular files only: where both layouts are shipped one may be a symlink to the other
	read -r img cfg < <(dpkg-deb --fsys-tarfile "$deb" | tar -tv | awk '
		/^-/ && $NF ~ /^\.\/(boot\/vmlinuz-[^\/]+|usr\/lib\/modules\/[^\/]+\/vmlinuz)$/ && i == "" { i = $NF }
		/^-/ && $NF ~ /^\.\/(boot\/config-[^\/]+|usr\/lib\/modules\/[^\/]+\/config)$/ && c == "" { c = $NF }
		END { print (i == "" ? "-" : i), (c == "" ? "-" : c) }')
	if [[ $img == - ]]; then
		note "$pkg has no ./boot/vmlinuz-* or ./usr/lib/modules/*/vmlinuz"
		rm -rf "$tmp"
		return 1
	fi
	want=("$img")
	[[ $cfg != - ]] && want+=("$cfg")
	mkdir -p "$tmp/x" "$tmp/k"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" "${want[@]}"
	mv "$tmp/x/$img" "$tmp/k/vmlinuz"
	[[ $cfg != - ]] && mv "$tmp/x/$cfg" "$tmp/k/config"
	echo "$pkg" >"$tmp/k/package"
	rm -rf "$dir"
	mv "$tmp/k" "$dir"
	rm -rf "$tmp"
}

cmd_fetch() {
	[[ $# -eq 1 ]] || usage
	arch_of "$1"
	local name=$1 series=$SERIES_BARE release pkg dir cached found=0
	series_re "$series" >/dev/null
	mkdir -p "$CACHE/kernels" 2>/dev/null || skip "cannot create cache $CACHE (set TK_VM_CACHE)"
	# serialise fetches: two runs must not half-extract the same kernel or update the
	# lists at once
	exec 9>"$CACHE/.lock"
	flock 9

	if apt_index; then
		# Newest first, down to the newest cached kernel of the series. A kernel
		# extracted before (by hand too: a missing package file is fine) is not
		# downloaded again. An index can list what its mirror does not have (seen:
		# bullseye-security's newer kernels answered 404, older ones did not): then the
		# next older one; a failed download is not retried until the lists are
		# refreshed.
		cached=$(cached_kernel "$series" || true)
		cached=${cached%/vmlinuz}
		cached=${cached##*/}
		while read -r release pkg; do
			found=1
			dir=$CACHE/kernels/$release
			if [[ -s $dir/vmlinuz ]]; then
				echo "$dir/vmlinuz"
				return 0
			fi
			[[ -n $cached ]] && ! newer "$release" "$cached" && break
			grep -qxF "$pkg" "$APT_DIR/failed" 2>/dev/null && continue
			if fetch_package "$pkg" "$dir"; then
				echo "$dir/vmlinuz"
				return 0
			fi
			echo "$pkg" >>"$APT_DIR/failed"
			note "$name: cannot download $pkg"
		done < <(index_releases "$series" || true)
	fi
	# no package index (offline, or not Debian), or nothing in it downloads: a cached
	# kernel is still good
	if cached_kernel "$series"; then
		note "$name: $( ((found)) && echo "nothing newer in the index could be downloaded" ||
			echo "not in a package index here"); using the cached $(cached_kernel "$series")"
		return 0
	fi
	if ((found)); then
		skip "no $name kernel in the package index ($APT_DIR) could be downloaded, and none is cached in $CACHE/kernels"
	fi
	skip "no $name kernel in the package index ($APT_DIR) and none cached in $CACHE/kernels"
}

# The arm64 guests' busybox: bookworm's busybox-static:arm64 (the x86 guests' is bookworm's too) (Multi-Arch: foreign, so not
# installable beside the amd64 one), downloaded through the private index like a kernel and
# kept in $CACHE/busybox-arm64/busybox. Prints its path.
fetch_busybox_arm64() {
	local dir=$CACHE/busybox-arm64 tmp deb bin
	if [[ -x $dir/busybox ]]; then
		echo "$dir/busybox"
		return 0
	fi
	mkdir -p "$CACHE" 2>/dev/null || return 1
	exec 9>"$CACHE/.lock"
	flock 9
	apt_index || return 1
	note "fetching busybox-static:arm64"
	tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX")
	if ! (cd "$tmp" && apt-get "${APT_OPTS[@]}" download -q busybox-static:arm64/bookworm >download.log 2>&1); then
		sed 's/^/  /' "$tmp/download.log" >&2
		rm -rf "$tmp"
		return 1
	fi
	deb=$(ls "$tmp"/*.deb)
	mkdir -p "$tmp/x"
	dpkg-deb -x "$deb" "$tmp/x"
	bin=$tmp/x/bin/busybox
	[[ -f $bin ]] || bin=$tmp/x/usr/bin/busybox
	if [[ ! -f $bin || -L $bin ]]; then
		note "$(basename "$deb") has no ./bin/busybox or ./usr/bin/busybox"
		rm -rf "$tmp"
		return 1
	fi
	mkdir -p "$dir"
	mv "$bin" "$dir/busybox.new"
	chmod 755 "$dir/busybox.new"
	mv "$dir/busybox.new" "$dir/busybox"
	rm -rf "$tmp"
	echo "$dir/busybox"
}

# Download packages through the private index into a folder.
cmd_download() {
	[[ $# -ge 2 ]] || usage
	local dir=$1 p
	shift
	mkdir -p "$dir" "$CACHE" || die "cannot create $dir or $CACHE"
	dir=$(cd "$dir" && pwd)
	(
		exec 9>"$CACHE/.lock"
		flock 9
		apt_index
	) || skip "no package index here (apt-get, $APT_KEYRING)"
	for p in "$@"; do
		# apt-get download writes into the current folder; as root it warns that it runs
		# unsandboxed, which is expected here (nothing is installed)
		if ! (cd "$dir" && apt-get "${APT_OPTS[@]}" download -q "$p" >"$dir/.download.log" 2>&1); then
			sed 's/^/  /' "$dir/.download.log" >&2
			skip "cannot download $p"
		fi
	done
	rm -f "$dir/.download.log"
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
	# results of an earlier run in DIR must not pass for this one's when it ends early
	rm -rf "$out/sections" "$out/results.txt" "$out/status" "$out/release"

	arch_of "$kver"
	local console=ttyS0 machine=()
	if [[ $ARCH == arm64 ]]; then
		command -v "$QEMU" >/dev/null || skip "no $QEMU (apt-get install qemu-system-arm)"
		if [[ -z $BUSYBOX ]]; then
			BUSYBOX=$(fetch_busybox_arm64) || skip "cannot download busybox-static:arm64"
		fi
		# pauth-impdef: the cheap PAC algorithm (the default QARMA5 in TCG took 6 s to /init
		# against 1.6 s); the guest still signs and checks every return address
		# shellcheck disable=SC2054 # the comma is QEMU's, inside one argument
		machine=(-M virt -cpu max,pauth-impdef=on)
		console=ttyAMA0
	else
		command -v "$QEMU" >/dev/null || skip "no $QEMU (apt-get install qemu-system-x86)"
	fi
	local kernel
	kernel=$(cmd_fetch "$kver") || exit $?
	mkdir -p "$out"
	basename "$(dirname "$kernel")" >"$out/release"
	cmd_initramfs "$out/initramfs.gz" "$payload" "$@"

	local qargs=(
		"${machine[@]}"
		-accel "$ACCEL" -nographic -no-reboot -nodefaults -serial stdio
		-m 2048M -smp "$SMP"
		-kernel "$kernel" -initrd "$out/initramfs.gz"
		-append "console=$console panic=-1 softlockup_panic=1 oops=panic rdinit=/init $append"
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
download) cmd_download "$@" ;;
-h | --help | help) usage ;;
*) die "unknown command '$sub' (fetch, initramfs, run, download)" ;;
esac
