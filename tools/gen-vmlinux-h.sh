#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Regenerate vmlinux/x86/vmlinux.h from kernel BTF.
#   tools/gen-vmlinux-h.sh [BTF_FILE]     default: /sys/kernel/btf/vmlinux
# Writes to a temporary file and replaces the header only when it changed, so an
# unchanged dump rebuilds nothing (as the kernel's BPF selftests do).
set -euo pipefail

btf=${1:-/sys/kernel/btf/vmlinux}
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/vmlinux/x86/vmlinux.h
BPFTOOL=${BPFTOOL:-bpftool}

if [[ ! -r $btf ]]; then
	echo "gen-vmlinux-h: cannot read BTF file '$btf'" >&2
	echo "  (a kernel built with CONFIG_DEBUG_INFO_BTF=y has /sys/kernel/btf/vmlinux)" >&2
	exit 1
fi
mkdir -p "$(dirname "$out")"
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
"$BPFTOOL" btf dump file "$btf" format c >"$tmp"
if [[ -f $out ]] && cmp -s "$tmp" "$out"; then
	echo "gen-vmlinux-h: $out unchanged"
	exit 0
fi
chmod 644 "$tmp"
mv -f "$tmp" "$out"
trap - EXIT
echo "gen-vmlinux-h: wrote $out from $btf"
