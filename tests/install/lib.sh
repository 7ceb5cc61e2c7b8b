# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# shellcheck shell=bash
# What the checks in tests/install/ share: counting, and reading options out of --help
# and out of the man pages. Sourced, not run.

t_passed=0 t_failed=0 t_skipped=0

pass() { echo "[       OK ] $1"; t_passed=$((t_passed + 1)); }
fail() { echo "[  FAILED  ] $1"; t_failed=$((t_failed + 1)); }
skip() { echo "[  SKIPPED ] $1"; t_skipped=$((t_skipped + 1)); }
# Print "@name: N passed, N failed, N skipped" (tests/run.sh reads it); status 1 on failures.
summary() {
	echo "$1: $t_passed passed, $t_failed failed, $t_skipped skipped"
	((t_failed == 0))
}
# @1's lines as one line of words
oneline() { tr -s " \n" "  " <<<"$1" | sed "s/ $//"; }
# A tool the check needs: a skip where it is missing, a failure under CI=true.
need_tool() {
	command -v "$1" >/dev/null && return 0
	if [[ ${CI:-} == true ]]; then
		fail "$1 is not installed (tools/install-deps.sh)"
	else
		skip "$1 is not installed (tools/install-deps.sh): $2"
	fi
	return 1
}

# The options of `tracekit CMD --help` (CMD empty: tracekit's own), one per line:
# "SHORT LONG ARG", SHORT "-" when there is none, ARG "arg" or "-". An option line starts
# with two spaces and "-x, --long" or "--long"; its argument is the upper-case word after
# one space ("--pid PID"). "-- CMD ARGS..." is not an option.
help_options() {
	local bin=$1 cmd=$2 line re='^  +(-([A-Za-z0-9]), )?--([a-z][a-z0-9-]*)( ([A-Z]+)( |$))?'
	# shellcheck disable=SC2086 # $cmd is empty for tracekit itself
	"$bin" $cmd --help | while IFS= read -r line; do
		[[ $line =~ $re ]] || continue
		local short=- arg=-
		[[ -n ${BASH_REMATCH[2]} ]] && short=-${BASH_REMATCH[2]}
		[[ -n ${BASH_REMATCH[5]} ]] && arg=arg
		echo "$short --${BASH_REMATCH[3]} $arg"
	done
}

# The same for a man page (roff from scdoc), from its OPTIONS section: a term line is
# "\fB-p\fR, \fB--pid\fR \fIPID\fR"; "\fB--\fR \fICMD\fR ..." (the command) is not an option.
man_options() {
	awk '/^\.SH /{ on = ($2 == "OPTIONS") ; next } on && /^\\fB-/' "$1" |
		while IFS= read -r line; do
			local short=- long="" arg=- rest
			[[ $line =~ ^\\fB-([A-Za-z0-9])\\fR ]] && short=-${BASH_REMATCH[1]}
			[[ $line =~ \\fB--([a-z][a-z0-9-]*)\\fR(.*) ]] || continue
			long=--${BASH_REMATCH[1]}
			rest=${BASH_REMATCH[2]}
			[[ $rest == *\\fI* ]] && arg=arg
			echo "$short $long $arg"
		done
}
