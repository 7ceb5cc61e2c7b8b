#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# `make install DESTDIR=STAGE PREFIX=/usr`, as a packager runs it, then:
#  - every file is where it belongs, with its mode: bin/tracekit; lib/MULTIARCH/
#    libtracekit.so.0.1.0 and its two links, libtracekit.a, pkgconfig/tracekit.pc;
#    lib/MULTIARCH/tracekit/ the preload libraries; include/tracekit/ every public header;
#    share/man/man8/ a page per command; the bash completion; share/doc/tracekit/;
#  - libtracekit.so.0 has that SONAME and exports tk_* names only, all at TRACEKIT_0;
#  - tests/install/example.c compiles and links against the stage through
#    `pkg-config --cflags --libs tracekit` and runs on the staged library;
#  - the staged tracekit finds the staged preload libraries (as root: `alloc -- CMD`
#    through the sampler, libtkalloc.so, and through uprobes, which need libtkagent.so),
#    and a copy of it outside any tree looks for them where PREFIX=/usr put them;
#  - make uninstall leaves nothing behind.
#   tests/install/check-install.sh [BUILD_DIR]   (default $TK_BUILD_DIR, else build)
#   TK_SKEL_DIR   the skeleton directory BUILD_DIR was built with (default: read from its
#                 dependency files)
# make runs in BUILD_DIR (-j2): with PREFIX=/usr the few objects that name the installed
# directories are rebuilt (and rebuilt again by the next plain make, in seconds).
# Ends with "install: N passed, N failed, N skipped"; exit 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/install/lib.sh

B=${1:-${TK_BUILD_DIR:-build}}
# the skeletons this build was made with, so make does not generate them elsewhere
skel=${TK_SKEL_DIR:-$(grep -ho '[^ ]*/core_probe\.skel\.h' "$B"/obj/user/caps/core_probe.d \
	2>/dev/null | head -n1)}
skel=${skel%/core_probe.skel.h}
skel=${skel:-skeletons}
MA=$(${CC:-cc} -print-multiarch 2>/dev/null)
MA=${MA:-x86_64-linux-gnu}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
lib=$stage/usr/lib/$MA

for t in make install readelf nm pkg-config cc; do
	need_tool "$t" "cannot test make install" || { summary install; exit; }
done

if ! make --no-print-directory -j2 BUILD="$B" SKEL="$skel" DESTDIR="$stage" PREFIX=/usr \
	install >"$tmp/make.log" 2>&1; then
	tail -n 30 "$tmp/make.log"
	fail "make install DESTDIR=$stage PREFIX=/usr (BUILD=$B SKEL=$skel)"
	summary install
	exit
fi
pass "make install DESTDIR=STAGE PREFIX=/usr"

# --- the files, and their modes
has() {
	local mode=$1 path=$2 m
	if [[ ! -f $path ]]; then
		fail "${path#"$stage"}: missing"
		return
	fi
	m=$(stat -L -c %a "$path")
	[[ $m == "$mode" ]] && pass "${path#"$stage"} ($m)" ||
		fail "${path#"$stage"}: mode $m, not $mode"
}
link_to() {
	local path=$1 want=$2 got
	got=$(readlink "$path")
	[[ -L $path && $got == "$want" ]] && pass "${path#"$stage"} -> $want" ||
		fail "${path#"$stage"}: not a link to $want (${got:-no link})"
}
version=$(sed -n 's/^VERSION := //p' Makefile)
major=${version%%.*}
has 755 "$stage/usr/bin/tracekit"
has 644 "$lib/libtracekit.so.$version"
link_to "$lib/libtracekit.so.$major" "libtracekit.so.$version"
link_to "$lib/libtracekit.so" "libtracekit.so.$major"
has 644 "$lib/libtracekit.a"
has 644 "$lib/pkgconfig/tracekit.pc"
has 644 "$lib/tracekit/libtkalloc.so"
has 644 "$lib/tracekit/libtkagent.so"
for h in include/tracekit/*.h; do
	has 644 "$stage/usr/$h"
done
commands=$("$stage/usr/bin/tracekit" --help | awk '/^Commands:/ { on = 1; next }
	on && /^$/ { exit } on && /^  [a-z]/ { print $1 }')
for page in tracekit $(printf 'tracekit-%s ' $commands); do
	has 644 "$stage/usr/share/man/man8/$page.8"
done
has 644 "$stage/usr/share/bash-completion/completions/tracekit"
for d in docs/*.md; do
	has 644 "$stage/usr/share/doc/tracekit/${d#docs/}"
done
# the pages and the .pc name the directories of PREFIX=/usr, not the default's nor the tree's
if grep -q "^prefix=/usr$" "$lib/pkgconfig/tracekit.pc" &&
	grep -q "/usr/lib/$MA/tracekit/libtkalloc" "$stage/usr/share/man/man8/tracekit.8" &&
	grep -q "/usr/share/doc/tracekit/" "$stage/usr/share/man/man8/tracekit.8" &&
	! grep -rqs -e "$(pwd)" -e "/usr/local/lib/$MA/tracekit" -e /usr/local/share/doc \
		"$stage/usr/share/man" "$lib/pkgconfig"; then
	pass "the man pages and tracekit.pc name PREFIX=/usr's directories"
else
	fail "the man pages or tracekit.pc do not name PREFIX=/usr's directories"
fi

# --- the shared library
soname=$(readelf -d "$lib/libtracekit.so.$major" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname == "libtracekit.so.$major" ]] && pass "SONAME $soname" ||
	fail "SONAME is '$soname', not libtracekit.so.$major"
nm -D --defined-only "$lib/libtracekit.so.$major" | awk '{ print $NF }' >"$tmp/exports"
others=$(grep -v -e '^tk_[A-Za-z0-9_]*@@TRACEKIT_0$' -e '^TRACEKIT_0$' "$tmp/exports")
n=$(grep -c '^tk_' "$tmp/exports")
if [[ -z $others ]] && grep -qx 'tk_caps__take@@TRACEKIT_0' "$tmp/exports"; then
	pass "libtracekit.so.$major exports $n tk_* names at TRACEKIT_0 and nothing else"
else
	fail "libtracekit.so.$major exports other names: $(head -n 5 <<<"$others" | tr '\n' ' ')"
fi
# exactly the API: every function the installed headers declare, no internal one
sed -n 's/^\(tk_[a-z0-9_]*\)@@TRACEKIT_0$/\1/p' "$tmp/exports" | sort >"$tmp/exported"
tools/gen-exports.sh "$stage/usr/include/tracekit/"*.h |
	sed -n 's/^[[:space:]]*\(tk_[a-z0-9_]*\);$/\1/p' | sort >"$tmp/declared"
if cmp -s "$tmp/exported" "$tmp/declared"; then
	pass "the exports are the $(wc -l <"$tmp/declared") functions the public headers declare"
else
	fail "exports and public declarations differ: $(diff "$tmp/declared" "$tmp/exported" |
		grep '^[<>]' | head -n 5 | tr '\n' ' ')"
fi

# --- a program built against the stage
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage
pc_version=$(pkg-config --modversion tracekit 2>&1)
[[ $pc_version == "$version" ]] && pass "pkg-config --modversion tracekit: $pc_version" ||
	fail "pkg-config --modversion tracekit: '$pc_version', not $version"
flags=$(pkg-config --cflags --libs tracekit 2>&1)
# shellcheck disable=SC2086 # the flags are words
if cc -std=gnu11 -Wall -Wextra -Werror tests/install/example.c $flags -o "$tmp/example" \
	>"$tmp/cc.log" 2>&1; then
	pass "example.c builds with pkg-config --cflags --libs tracekit ($flags)"
	if readelf -d "$tmp/example" | grep -q "NEEDED.*\[libtracekit.so.$major\]"; then
		pass "example needs libtracekit.so.$major"
	else
		fail "example does not need libtracekit.so.$major (linked statically?)"
	fi
	out=$(LD_LIBRARY_PATH=$lib "$tmp/example" 2>&1)
	rc=$?
	used=$(LD_LIBRARY_PATH=$lib ldd "$tmp/example" | awk '/libtracekit/ { print $3 }')
	if ((rc == 0)) && grep -q '^tracekit caps: Linux' <<<"$out" &&
		grep -q '^Collectors' <<<"$out" && [[ $used == "$lib/"* ]]; then
		pass "example runs on the staged library and prints the capability snapshot"
	else
		fail "example: exit $rc, library '$used': $(head -n 3 <<<"$out")"
	fi
else
	cat "$tmp/cc.log"
	fail "example.c does not build against the stage ($flags)"
fi
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

# --- the staged tracekit and its preload libraries
tk=$stage/usr/bin/tracekit
wl=$B/workloads/alloc_leak
real_lib=$(realpath "$lib")
if [[ $(id -u) -ne 0 ]]; then
	skip "the staged tracekit's alloc -- CMD (needs root)"
elif [[ ! -x $wl ]]; then
	fail "no $wl (make)"
else
	# the sampler: -v names the library it placed its uprobes in
	"$tk" alloc -v -o "$tmp/sampled.txt" -- "$wl" -d 1 --leak-bytes 33554432 \
		>"$tmp/sampled.out" 2>&1
	rc=$?
	if ((rc == 0)) && grep -q "in-process sampler $real_lib/tracekit/libtkalloc.so" \
		"$tmp/sampled.out" && grep -q leak_site "$tmp/sampled.txt"; then
		pass "staged tracekit alloc -- alloc_leak: the staged libtkalloc.so, leak_site found"
	else
		tail -n 5 "$tmp/sampled.out"
		fail "staged tracekit alloc -- alloc_leak (exit $rc): not through $real_lib/tracekit/libtkalloc.so"
	fi
	# uprobes: libtkagent.so holds the command until they are placed
	"$tk" alloc --no-preload -o "$tmp/uprobes.txt" -- "$wl" -d 1 --leak-bytes 33554432 \
		>"$tmp/uprobes.out" 2>&1
	rc=$?
	if ((rc == 0)) && grep -q leak_site "$tmp/uprobes.txt"; then
		pass "staged tracekit alloc --no-preload -- alloc_leak: held by the staged libtkagent.so"
	else
		tail -n 5 "$tmp/uprobes.out"
		fail "staged tracekit alloc --no-preload -- alloc_leak (exit $rc)"
	fi
fi
# A copy with no libraries beside it nor under ../lib looks in PREFIX=/usr's directory.
installed=/usr/lib/$MA/tracekit
if [[ -e $installed/libtkagent.so ]]; then
	skip "a copy of tracekit outside the stage looks in $installed (a tracekit is installed there)"
else
	mkdir -p "$tmp/elsewhere/bin"
	cp "$tk" "$tmp/elsewhere/bin/tracekit"
	out=$("$tmp/elsewhere/bin/tracekit" alloc --no-preload -d 1 -- /bin/true 2>&1)
	rc=$?
	if ((rc == 1)) && grep -q "$installed/libtkagent.so" <<<"$out"; then
		pass "a copy of tracekit outside the stage looks in $installed"
	else
		fail "a copy of tracekit outside the stage (exit $rc) did not look in $installed: $out"
	fi
fi

# --- and away again
if make --no-print-directory BUILD="$B" SKEL="$skel" DESTDIR="$stage" PREFIX=/usr uninstall \
	>"$tmp/make.log" 2>&1; then
	left=$(find "$stage" ! -type d)
	[[ -z $left ]] && pass "make uninstall leaves no file in the stage" ||
		fail "make uninstall left: $(head -n 5 <<<"$left" | tr '\n' ' ')"
else
	tail -n 10 "$tmp/make.log"
	fail "make uninstall"
fi

summary install
