#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Regenerate vmlinux/ARCH/vmlinux.h from kernel BTF.
#   tools/gen-vmlinux-h.sh [BTF_FILE]                  x86, default /sys/kernel/btf/vmlinux
#   tools/gen-vmlinux-h.sh --arch arm64 [FILE]         arm64
# FILE is raw BTF (/sys/kernel/btf/vmlinux, bpftool's input) or a kernel image: an ELF
# vmlinux or a flat arm64 Image, gzip'd or not, whose .BTF tools/btf-from-image.py cuts out.
# arm64 without FILE: the arm64 build of Debian's cloud kernel ARM64_KERNEL (default 6.12,
# trixie's, in bookworm-security and bookworm-backports too; its newest version), downloaded
# (never installed) through an apt configuration of its own in a temporary directory (the
# machine's sources are not read or changed), from ARM64_MIRROR (default deb.debian.org).
# The package and version it came from go to vmlinux/arm64/SOURCE.
# Why 6.12 and not sid's 7.x: from 6.19 the kernel is built with -fms-extensions and its BTF
# has anonymous members of named struct types (struct ns_common's "struct ns_tree;"), which
# bpftool 7.1 dumps as such and clang compiles only with -fms-extensions.
# Writes to a temporary file and replaces the header only when it changed, so an
# unchanged dump rebuilds nothing (as the kernel's BPF selftests do).
set -euo pipefail

arch=x86
if [[ ${1:-} == --arch ]]; then
	arch=${2:?--arch needs x86 or arm64}
	shift 2
fi
top=$(cd "$(dirname "$0")/.." && pwd)
BPFTOOL=${BPFTOOL:-bpftool}
case $arch in
x86) btf=${1:-/sys/kernel/btf/vmlinux} ;;
arm64) btf=${1:-} ;;
*)
	echo "gen-vmlinux-h: unknown architecture '$arch' (x86, arm64)" >&2
	exit 64
	;;
esac
out=$top/vmlinux/$arch/vmlinux.h
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The newest linux-image-ARM64_KERNEL.*-cloud-arm64-unsigned; prints the image path and
# writes the package's name and version to $work/source
fetch_arm64() {
	local apt=$work/apt keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	local mirror=${ARM64_MIRROR:-http://deb.debian.org/debian} kver=${ARM64_KERNEL:-6.12}
	local s pkg deb
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$work/deb" "$work/x"
	for s in bookworm bookworm-backports; do
		echo "deb [arch=arm64 signed-by=$keyring] $mirror $s main"
	done >"$apt/sources.list"
	echo "deb [arch=arm64 signed-by=$keyring] ${mirror%/debian}/debian-security" \
		"bookworm-security main" >>"$apt/sources.list"
	local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
		-o APT::Architecture=arm64 -o APT::Architectures=arm64
		-o APT::Sandbox::User=root -q)
	apt-get "${opts[@]}" update >&2
	pkg=$(apt-cache "${opts[@]}" pkgnames linux-image- |
		grep -E "^linux-image-${kver//./\\.}[.-][^ ]*-cloud-arm64-unsigned\$" | sort -V | tail -1)
	[[ -n $pkg ]] || { echo "gen-vmlinux-h: no linux-image-$kver*-cloud-arm64-unsigned" >&2; exit 1; }
	(cd "$work/deb" && apt-get "${opts[@]}" download "$pkg" >&2)
	deb=$(echo "$work"/deb/*.deb)
	dpkg-deb -x "$deb" "$work/x"
	dpkg-deb -f "$deb" Package Version >"$work/source"
	echo "sha256 $(sha256sum <"$deb" | cut -d' ' -f1)" >>"$work/source"
	local img
	for img in "$work"/x/boot/vmlinuz-* "$work"/x/usr/lib/modules/*/vmlinuz; do
		[[ -f $img ]] && { echo "$img"; return 0; }
	done
	echo "gen-vmlinux-h: no vmlinuz in $pkg" >&2
	exit 1
}

if [[ -z $btf ]]; then
	btf=$(fetch_arm64)
fi
if [[ ! -r $btf ]]; then
	echo "gen-vmlinux-h: cannot read BTF file '$btf'" >&2
	echo "  (a kernel built with CONFIG_DEBUG_INFO_BTF=y has /sys/kernel/btf/vmlinux)" >&2
	exit 1
fi
# raw BTF starts with its magic, 0xeb9f little-endian; anything else is an image to cut
if [[ $(head -c 2 "$btf" | od -An -tx1 | tr -d ' ') != 9feb ]]; then
	"$top/tools/btf-from-image.py" "$btf" "$work/btf"
	btf=$work/btf
fi
mkdir -p "$(dirname "$out")"
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -rf "$work" "$tmp"' EXIT
"$BPFTOOL" btf dump file "$btf" format c >"$tmp"
if [[ -f $work/source ]]; then
	cp "$work/source" "$(dirname "$out")/SOURCE"
fi
if [[ -f $out ]] && cmp -s "$tmp" "$out"; then
	echo "gen-vmlinux-h: $out unchanged"
	exit 0
fi
chmod 644 "$tmp"
mv -f "$tmp" "$out"
trap 'rm -rf "$work"' EXIT
echo "gen-vmlinux-h: wrote $out from $(head -2 "$work/source" 2>/dev/null | tr "\n" " " || echo "$btf")"
