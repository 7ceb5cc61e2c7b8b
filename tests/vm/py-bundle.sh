#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Debian bookworm's CPython 3.11 for a guest of ARCH (x86 or arm64): the interpreter, the
# shared libraries it loads, the standard modules tests/workloads/py/pywork.py imports (a zip
# at /usr/lib/python311.zip, which the interpreter's sys.path names even with -S), pywork.py
# at /root/pywork.py and tracekit stacks' workload pystacks.py at /root/pystacks.py.
#
#   py-bundle.sh ARCH OUTDIR
#   py-bundle.sh arm64 OUTDIR trixie
#
# Prints one SRC:DEST line per file for vm.sh's initramfs (SRC under OUTDIR or on this host,
# DEST the guest's path); exit 0. Exit 77 with the reason on stderr when it cannot be had
# here (the caller's skip), 64 on usage.
#   x86    this host's /usr/bin/python3.11 and its libraries (ldd), as the x86 guests had it.
#   arm64  python3.11-minimal, libpython3.11-minimal, libpython3.11-stdlib and libexpat1 for
#          arm64, bookworm's, downloaded by `tests/vm/vm.sh download` (its private apt
#          configuration, the kernels' own: /etc/apt is never changed) and unpacked with
#          dpkg-deb -x into OUTDIR;
#          libc, libm, libz and the dynamic loader from this host's /usr/lib/aarch64-linux-gnu
#          (libc6:arm64 and zlib1g:arm64: tools/install-deps.sh --arm64), else downloaded
#          too. The libraries go to the guest's /lib/aarch64-linux-gnu, the loader to
#          /lib/ld-linux-aarch64.so.1, the path the interpreter's PT_INTERP names.
#   arm64 OUTDIR trixie
#          a whole minimal root under the guest's /trixie, for a container (chroot in new
#          mount and pid namespaces): Debian trixie's python3.13-minimal,
#          libpython3.13-minimal, libpython3.13-stdlib and every shared library the
#          interpreter needs, all from trixie (libc6, zlib1g, libexpat1; never this host's
#          bookworm libraries), downloaded the same way. trixie's arm64 userland is built with branch
#          protection (PAC and BTI): stderr says how many paciasp the interpreter and libc
#          have (aarch64-linux-gnu-objdump). /trixie/usr/bin/python3.13, its libraries in
#          /trixie/usr/lib/aarch64-linux-gnu, the loader at /trixie/lib/ld-linux-aarch64.so.1,
#          the modules pywork.py imports in /trixie/usr/lib/python313.zip, pywork.py and
#          pystacks.py in /trixie/root, and /trixie/{proc,tmp,dev} (an empty .keep each:
#          the initramfs holds files only). Its files are under OUTDIR/trixie, so one OUTDIR
#          can hold both bundles.
# Environment: vm.sh's (TK_VM_CACHE).
set -euo pipefail

SKIP=77
die() {
	echo "py-bundle: $*" >&2
	exit $SKIP
}
[[ $# == 2 || ($# == 3 && $3 == trixie && ($1 == arm64 || $1 == aarch64)) ]] || {
	sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 64
}
arch=$1 out=$2 release=${3:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$here/tests/workloads/py/pywork.py
swork=$here/tests/workloads/py/pystacks.py
[[ -r $work && -r $swork ]] || die "no $work or $swork"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The modules pywork.py imports and theirs, from the standard library at $1, into $2.
zip_modules() {
	local zipper
	zipper=$(command -v python3 || command -v python3.11) || die "no python3 here to zip the modules"
	"$zipper" - "$1" "$2" ${3:+"$3"} <<'PYEOF' || die "cannot zip the modules from $1"
import os, sys, zipfile
mods = ("abc codecs collections contextlib copyreg enum functools genericpath io keyword "
        "linecache operator os posixpath re reprlib stat textwrap threading token tokenize "
        "traceback types _collections_abc _weakrefset encodings").split()
mods += sys.argv[3].split() if len(sys.argv) > 3 else []
base = sys.argv[1]
enc = ("__init__.py", "aliases.py", "utf_8.py", "latin_1.py", "ascii.py")
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as z:
    for m in mods:
        p = os.path.join(base, m)
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith(".py") and (m != "encodings" or f in enc):
                    z.write(os.path.join(p, f), m + "/" + f)
        else:
            z.write(p + ".py", m + ".py")
PYEOF
}

x86_bundle() {
	local py=/usr/bin/python3.11 l
	[[ -x $py ]] || die "no $py on this host (Debian bookworm's python3.11)"
	echo "$py:$py"
	for l in $(ldd "$py" | grep -o '/[^ ]*'); do echo "$l:$l"; done
	zip_modules /usr/lib/python3.11 "$out/python311.zip"
	echo "$out/python311.zip:/usr/lib/python311.zip"
	echo "$work:/root/pywork.py"
	echo "$swork:/root/pystacks.py"
}

# ---- arm64 ------------------------------------------------------------------------------
SUITE=bookworm
[[ $release == trixie ]] && SUITE=trixie
HOST_LIBS=/usr/lib/aarch64-linux-gnu

# Download packages $@ (arm64, $SUITE) into $out/debs through tests/vm/vm.sh's private index
# (the kernels' own: /etc/apt is never changed) and unpack them into $out/root.
fetch() {
	local p deb names=()
	mkdir -p "$out/debs" "$out/root"
	for p in "$@"; do names+=("$p:arm64/$SUITE"); done
	"$here/tests/vm/vm.sh" download "$out/debs" "${names[@]}" 2>"$out/debs/download.err" ||
		die "cannot download ${names[*]}: $(tail -n1 "$out/debs/download.err")"
	for deb in "$out"/debs/*.deb; do dpkg-deb -x "$deb" "$out/root"; done
}

# The libraries ELF file $1 needs, and theirs, each found by find_lib in the folders $3...:
# one "PATH:$2/NAME" line each (vm.sh's SRC:DEST)
closure() {
	local elf=$1 dest=$2 lib path seen=" " todo=()
	shift 2
	mapfile -t todo < <(needed "$elf")
	while ((${#todo[@]})); do
		lib=${todo[0]}
		todo=("${todo[@]:1}")
		[[ $seen == *" $lib "* ]] && continue
		seen+="$lib "
		path=$(find_lib "$lib" "$@") || die "no arm64 $lib in $*"
		echo "$path:$dest/$lib"
		mapfile -t -O "${#todo[@]}" todo < <(needed "$path")
	done
}

# Where library $1 (a NEEDED name) is, in the first of the folders $2... that has it.
find_lib() {
	local name=$1 d
	shift
	for d in "$@"; do
		[[ -e $d/$name ]] && { readlink -f "$d/$name"; return 0; }
	done
	return 1
}

# The NEEDED libraries of ELF file $1, one a line.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

arm64_bundle() {
	local pkgs=(python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libexpat1)
	local py ld dirs
	command -v dpkg-deb >/dev/null || die "no dpkg-deb here"
	command -v aarch64-linux-gnu-readelf >/dev/null || command -v readelf >/dev/null ||
		die "no readelf here"
	[[ -e $HOST_LIBS/libc.so.6 ]] || pkgs+=(libc6)
	[[ -e $HOST_LIBS/libz.so.1 ]] || pkgs+=(zlib1g)
	rm -rf "$out/debs" "$out/root"
	fetch "${pkgs[@]}"
	py=$out/root/usr/bin/python3.11
	[[ -x $py ]] || die "no usr/bin/python3.11 in python3.11-minimal:arm64"
	echo "$py:/usr/bin/python3.11"
	# the libraries it needs, and theirs: the unpacked packages first, then this host's
	# arm64 libraries (tools/install-deps.sh --arm64)
	dirs=("$out/root/lib/aarch64-linux-gnu" "$out/root/usr/lib/aarch64-linux-gnu" "$HOST_LIBS"
		/lib/aarch64-linux-gnu)
	closure "$py" /lib/aarch64-linux-gnu "${dirs[@]}" || exit
	ld=$(find_lib ld-linux-aarch64.so.1 "${dirs[@]}") || die "no arm64 ld-linux-aarch64.so.1"
	echo "$ld:/lib/ld-linux-aarch64.so.1"
	zip_modules "$out/root/usr/lib/python3.11" "$out/python311.zip"
	echo "$out/python311.zip:/usr/lib/python311.zip"
	echo "$work:/root/pywork.py"
	echo "$swork:/root/pystacks.py"
}

# How many paciasp (pointer authentication of the return address) ELF file $1 has.
paciasp() {
	aarch64-linux-gnu-objdump -d --no-show-raw-insn "$1" 2>/dev/null | grep -c $'\tpaciasp' || true
}

# trixie: a whole root under the guest's /trixie, every library from trixie itself
trixie_bundle() {
	local pkgs=(python3.13-minimal libpython3.13-minimal libpython3.13-stdlib libc6 zlib1g libexpat1)
	local root py ld f
	# its own folder: the same OUTDIR can hold bookworm's bundle as well
	out=$out/trixie
	root=$out/root
	mkdir -p "$out"
	command -v dpkg-deb >/dev/null || die "no dpkg-deb here"
	command -v readelf >/dev/null || die "no readelf here"
	rm -rf "$out/debs" "$root"
	fetch "${pkgs[@]}"
	py=$root/usr/bin/python3.13
	[[ -x $py ]] || die "no usr/bin/python3.13 in trixie's python3.13-minimal:arm64"
	echo "$py:/trixie/usr/bin/python3.13"
	# never this host's (bookworm's) libraries: the root is trixie's alone
	closure "$py" /trixie/usr/lib/aarch64-linux-gnu "$root/usr/lib/aarch64-linux-gnu" \
		"$root/lib/aarch64-linux-gnu" || exit
	for ld in "$root/usr/lib/ld-linux-aarch64.so.1" "$root/lib/ld-linux-aarch64.so.1" ""; do
		[[ -e $ld ]] && break
	done
	[[ -n $ld ]] || die "no ld-linux-aarch64.so.1 in trixie's libc6:arm64"
	echo "$(readlink -f "$ld"):/trixie/lib/ld-linux-aarch64.so.1"
	# 3.13: traceback imports _colorize; __future__ (annotations) and warnings
	zip_modules "$root/usr/lib/python3.13" "$out/python313.zip" "_colorize __future__ warnings"
	echo "$out/python313.zip:/trixie/usr/lib/python313.zip"
	echo "$work:/trixie/root/pywork.py"
	echo "$swork:/trixie/root/pystacks.py"
	: >"$out/keep"
	for d in proc tmp dev; do echo "$out/keep:/trixie/$d/.keep"; done
	if command -v aarch64-linux-gnu-objdump >/dev/null; then
		f=$(find_trixie_libc)
		echo "py-bundle: trixie's python3.13 has $(paciasp "$py") paciasp, its libc.so.6" \
			"$(paciasp "$f")" >&2
	fi
}

find_trixie_libc() { readlink -f "$out/root/usr/lib/aarch64-linux-gnu/libc.so.6"; }

case $arch in
x86 | x86_64 | amd64) x86_bundle ;;
arm64 | aarch64) if [[ $release == trixie ]]; then trixie_bundle; else arm64_bundle; fi ;;
*)
	echo "py-bundle: unknown ARCH '$arch' (x86, arm64)" >&2
	exit 64
	;;
esac
