#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The man pages and --help say the same, and the binary accepts what they say:
#  - every command `tracekit --help` lists has its page, tracekit-CMD.8, and an entry
#    under COMMANDS in tracekit.8; no page is left for a command that does not exist;
#  - for tracekit and for each command, --help and the page's OPTIONS hold the same
#    options: long name, short letter, and whether an argument follows;
#  - the binary takes each of them (getopt does not call it unknown), with an argument
#    exactly when the page says so.
#   tests/install/check-docs.sh [BUILD_DIR]     (default $TK_BUILD_DIR, else build)
# Ends with "docs: N passed, N failed, N skipped"; exit 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/install/lib.sh

B=${1:-${TK_BUILD_DIR:-build}}
bin=$B/tracekit
man=$B/man
if [[ ! -x $bin || ! -d $man ]]; then
	fail "no $bin or $man/ (run make)"
	summary docs
	exit
fi

# The commands of `tracekit --help`: the lines under "Commands:" up to the blank line.
commands=$("$bin" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit }
	on && /^  [a-z]/ { print $1 }')
[[ -n $commands ]] && pass "tracekit --help lists commands: $(oneline "$commands")" ||
	fail "tracekit --help lists no commands under 'Commands:'"

# The commands tracekit.8 describes: bold terms in its COMMANDS section.
man_commands=$(awk '/^\.SH /{ on = ($2 == "COMMANDS"); next }
	on && /^\\fB[a-z]+\\fR$/ { gsub(/\\f[BR]/, ""); print }' "$man/tracekit.8")
for c in $commands; do
	[[ -f $man/tracekit-$c.8 ]] && pass "tracekit-$c.8 exists" ||
		fail "tracekit-$c.8 is missing (tools/man/tracekit-$c.8.scd)"
	grep -qx "$c" <<<"$man_commands" && pass "tracekit.8 COMMANDS describes $c" ||
		fail "tracekit.8 COMMANDS does not describe $c"
done
for page in "$man"/tracekit-*.8; do
	c=${page##*/tracekit-}
	c=${c%.8}
	grep -qx "$c" <<<"$commands" || fail "$page documents '$c', which tracekit --help does not list"
done
for c in $man_commands; do
	grep -qx "$c" <<<"$commands" ||
		fail "tracekit.8 COMMANDS describes '$c', which tracekit --help does not list"
done

# "SHORT LONG ARG" lines of --help and of the page must be the same set.
same_options() {
	local cmd=$1 page=$2 h m
	h=$(help_options "$bin" "$cmd" | sort)
	m=$(man_options "$page" | sort)
	if [[ -z $h ]]; then
		fail "tracekit $cmd --help: no options found"
		return
	fi
	if [[ $h == "$m" ]]; then
		pass "${cmd:-tracekit}: $(wc -l <<<"$h") options, the same in --help and ${page##*/}"
		return
	fi
	fail "${cmd:-tracekit}: --help and ${page##*/} differ (< --help only, > page only;" \
		"SHORT LONG ARG):"
	diff <(echo "$h") <(echo "$m") | grep '^[<>]' | sed 's/^/    /'
}

# The binary takes @opt; with an argument exactly when @arg is "arg". Every run ends in
# --help or in a usage error, so nothing is traced.
accepted() {
	local cmd=$1 opt=$2 arg=$3 out rc
	if [[ -z $cmd ]]; then
		out=$(timeout 10 "$bin" "$opt" 2>&1)
		rc=$?
		((rc == 0)) && return 0
		echo "    tracekit $opt: exit $rc: $out"
		return 1
	fi
	if [[ $arg == arg ]]; then
		out=$(timeout 10 "$bin" "$cmd" "$opt" 1 --help 2>&1)
		rc=$?
		if ((rc != 0 && rc != 2)) || grep -q "unknown option" <<<"$out"; then
			echo "    tracekit $cmd $opt 1 --help: exit $rc: ${out%%$'\n'*}"
			return 1
		fi
		out=$(timeout 10 "$bin" "$cmd" "$opt" 2>&1)
		rc=$?
		if ((rc != 2)) || ! grep -q "needs an argument" <<<"$out"; then
			echo "    tracekit $cmd $opt: exit $rc, not 'needs an argument': ${out%%$'\n'*}"
			return 1
		fi
		return 0
	fi
	# if it did take an argument, the first --help would be it and the second would end
	out=$(timeout 10 "$bin" "$cmd" "$opt" --help --help 2>&1)
	rc=$?
	if ((rc != 0)); then
		echo "    tracekit $cmd $opt --help --help: exit $rc: ${out%%$'\n'*}"
		return 1
	fi
	if [[ $opt == --* ]]; then
		out=$(timeout 10 "$bin" "$cmd" "$opt=x" --help 2>&1)
		rc=$?
		if ((rc != 2)); then
			echo "    tracekit $cmd $opt=x --help: exit $rc: it takes an argument"
			return 1
		fi
	fi
	return 0
}

takes_documented() {
	local cmd=$1 page=$2 short long arg bad=0
	while read -r short long arg; do
		accepted "$cmd" "$long" "$arg" || bad=1
		[[ $short == - ]] || accepted "$cmd" "$short" "$arg" || bad=1
	done < <(man_options "$page")
	((bad == 0)) && pass "${cmd:-tracekit}: the binary takes every option ${page##*/} documents" ||
		fail "${cmd:-tracekit}: the binary does not take an option as ${page##*/} documents it"
}

same_options "" "$man/tracekit.8"
takes_documented "" "$man/tracekit.8"
for c in $commands; do
	[[ -f $man/tracekit-$c.8 ]] || continue
	same_options "$c" "$man/tracekit-$c.8"
	takes_documented "$c" "$man/tracekit-$c.8"
done

summary docs
