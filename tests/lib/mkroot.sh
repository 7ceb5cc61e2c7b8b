#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A container root of another Debian release, for tests that profile a process with
# another glibc build inside mount and pid namespaces of its own:
#   tests/lib/mkroot.sh SUITE DIR [PACKAGE...]   (as root; minbase, from the mirror apt
#                                                already uses, with PACKAGEs)
# Built once: a DIR that has /usr/bin/perl and every PACKAGE installed is kept. Prints DIR
# on success. test_python's roots: SUITE-py with python3-minimal (bullseye 3.9, trixie 3.13,
# sid 3.14; about 45 s and 250 MB each).
set -euo pipefail
suite=$1 dir=$2
shift 2
have=1
for p in "$@"; do
	[[ -e $dir/var/lib/dpkg/info/$p.list ]] || have=0
done
if [[ -x $dir/usr/bin/perl && $have -eq 1 ]]; then
	echo "$dir"
	exit 0
fi
include=()
if [[ $# -gt 0 ]]; then
	include=("--include=$(IFS=,; echo "$*")")
fi
command -v debootstrap >/dev/null || { echo "mkroot: no debootstrap (tools/install-deps.sh)" >&2; exit 1; }
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
rm -rf "$dir.tmp"
mkdir -p "$(dirname "$dir")"
rm -rf "$dir"
if ! debootstrap --variant=minbase "${include[@]}" "$suite" "$dir.tmp" "$mirror" \
	>"$dir.log" 2>&1; then
	echo "mkroot: debootstrap $suite failed (see $dir.log)" >&2
	exit 1
fi
mv "$dir.tmp" "$dir"
echo "$dir"
