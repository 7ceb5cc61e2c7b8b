#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A container root of another Debian release, for tests that profile a process with
# another glibc build inside mount and pid namespaces of its own:
#   tests/lib/mkroot.sh SUITE DIR      (as root; minbase, from the mirror apt already uses)
# Built once: a DIR that has /usr/bin/perl is kept. Prints DIR on success.
set -euo pipefail
suite=$1 dir=$2
if [[ -x $dir/usr/bin/perl ]]; then
	echo "$dir"
	exit 0
fi
command -v debootstrap >/dev/null || { echo "mkroot: no debootstrap (tools/install-deps.sh)" >&2; exit 1; }
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
rm -rf "$dir.tmp"
mkdir -p "$(dirname "$dir")"
if ! debootstrap --variant=minbase "$suite" "$dir.tmp" "$mirror" >"$dir.log" 2>&1; then
	echo "mkroot: debootstrap $suite failed (see $dir.log)" >&2
	exit 1
fi
mv "$dir.tmp" "$dir"
echo "$dir"
