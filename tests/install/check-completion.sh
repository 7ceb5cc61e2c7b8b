#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The bash completion (tools/completion/tracekit), sourced here and called as bash calls
# it (COMP_WORDS, COMP_CWORD), answers what a user types; and it cannot drift from the
# binary: its commands and option lists are those of `tracekit [CMD] --help` (with an
# argument or not), and the values it offers for --backend, --format, --mode and --unwind
# are exactly the words of the option's --help text that the binary accepts.
#   tests/install/check-completion.sh [BUILD_DIR]     (default $TK_BUILD_DIR, else build)
# Ends with "completion: N passed, N failed, N skipped"; exit 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/install/lib.sh

B=${1:-${TK_BUILD_DIR:-build}}
bin=$B/tracekit
if [[ ! -x $bin ]]; then
	fail "no $bin (run make)"
	summary completion
	exit
fi
# shellcheck source=tools/completion/tracekit
. tools/completion/tracekit

# complete WORD... : COMPREPLY, sorted, for the cursor at the end of the last word.
complete_words() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_tracekit
	printf '%s\n' "${COMPREPLY[@]}" | sort -u | grep .
}

# expect WANT WORD...: the completions are exactly WANT (space-separated, any order).
expect() {
	local want got
	want=$(tr ' ' '\n' <<<"$1" | sort -u | grep .)
	shift
	got=$(complete_words "$@")
	[[ $got == "$want" ]] && pass "complete '$*'" ||
		fail "complete '$*': got '$(oneline "$got")', want '$(oneline "$want")'"
}

# --- what a user types
expect "alloc caps cpu help numa record serve stacks" tracekit ""
expect "caps cpu" tracekit c
expect "-h --help -V --version" tracekit -
expect "--backend" tracekit cpu --ba
expect "auto bpf perf" tracekit cpu --backend ""
expect "auto bpf jemalloc" tracekit alloc --backend ""
expect "auto bpf vmstat" tracekit numa --backend ""
expect "auto bpf proc" tracekit stacks --backend ""
expect "--state" tracekit stacks -p 1 --st
expect "jemalloc" tracekit alloc -p 1 --backend j
expect "pprof folded svg json text" tracekit cpu -o x.txt --format ""
expect "text json pprof folded svg" tracekit numa --format ""
expect "growth" tracekit alloc --mode g
expect "auto cfi fp" tracekit cpu --unwind ""
expect "auto cfi fp" tracekit alloc --unwind = ""
expect "cfi" tracekit numa --stacks --unwind = c
expect "--unwind --unwind-mem" tracekit numa --stacks --unwi
expect "--unwind --unwind-mem --user-only" tracekit cpu --u
expect "" tracekit cpu -F ""
expect "" tracekit alloc --top ""
expect "--help --json --output --pid --verbose" tracekit caps --json --
expect "" tracekit caps ls
expect "" tracekit numa ls
expect "--tar" tracekit record -o x --t
expect "" tracekit record ls
expect "--alloc-budget --allow-off-cpu --allow-remote" tracekit serve --al

# -p: running PIDs, this shell's among them, nothing else
got=$(complete_words tracekit cpu -p "")
grep -qx "$$" <<<"$got" && ! grep -qv '^[0-9][0-9]*$' <<<"$got" &&
	pass "complete 'tracekit cpu -p ': running PIDs ($(wc -l <<<"$got"), $$ among them)" ||
	fail "complete 'tracekit cpu -p ': not the running PIDs: $(head -c 200 <<<"$got")"
got=$(complete_words tracekit alloc --pid = "$$")
grep -qx "$$" <<<"$got" && ! grep -qv "^$$" <<<"$got" &&
	pass "complete 'tracekit alloc --pid=$$': PIDs that start with $$" ||
	fail "complete 'tracekit alloc --pid=$$': got '$(oneline "$got")'"

# -o: files; after '--': the command, then its arguments
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/profile.pb.gz" "$tmp/profile.svg" "$tmp/other"
expect "$tmp/profile.pb.gz $tmp/profile.svg" tracekit cpu -o "$tmp/pro"
expect "$tmp/profile.pb.gz $tmp/profile.svg" tracekit numa --output = "$tmp/pro"
got=$(complete_words tracekit cpu -F 99 -- tru)
grep -qx true <<<"$got" && pass "complete 'tracekit cpu -F 99 -- tru': true among them" ||
	fail "complete 'tracekit cpu -F 99 -- tru': got '$(oneline "$got")'"
expect "$tmp/other" tracekit alloc -- "$tmp/ot"
expect "$tmp/profile.pb.gz $tmp/profile.svg" tracekit alloc -d 2 -- /bin/true "$tmp/pr"
expect "$tmp/profile.pb.gz $tmp/profile.svg" tracekit cpu sleep "$tmp/pr"
# with bash-completion loaded, the command's own completion takes over at its word
_command_offset() { COMPREPLY=("offset=$1"); }
expect "offset=5" tracekit cpu -p 1 -- ls -
expect "offset=2" tracekit alloc ls -
unset -f _command_offset

# --- the lists against the binary
words() { tr -s ' \t\n' '\n' <<<"$1" | grep . | sort -u; }
# the SHORT LONG names of --help, those with an argument (@1 arg) or without (@1 -)
help_names() {
	help_options "$bin" "$2" | awk -v want="$1" '$3 == want {
		if ($1 != "-") print $1; print $2 }' | sort -u
}
same_list() {
	local what=$1 have want
	have=$(words "$2")
	want=$(words "$3")
	[[ $have == "$want" ]] && pass "$what: $(oneline "$have")" ||
		fail "$what: the completion has '$(oneline "$have")', --help '$(oneline "$want")'"
}
help_commands=$("$bin" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit }
	on && /^  [a-z]/ { print $1 }')
same_list "commands" "$_tracekit_commands" "$help_commands"
same_list "tracekit's options" "$_tracekit_main_opts" "$(help_names - "")"
for c in $help_commands; do
	v=_tracekit_${c}_args
	same_list "$c: options with an argument" "${!v-}" "$(help_names arg "$c")"
	v=_tracekit_${c}_flags
	same_list "$c: options without" "${!v-}" "$(help_names - "$c")"
done

# The value words of @opt of @cmd: the lower-case words of its --help text (its line and
# those under it) that the binary accepts. Each run ends at a usage error or at "no such
# process" (a PID above any pid_max), before anything is traced.
help_text_of() {
	"$bin" "$1" --help | awk -v opt="$2" '
		$0 ~ "^  +(-[A-Za-z], )?" opt "( |$)" { on = 1; print; next }
		on && /^  +-/ { exit }
		on && /^  +/ { print; next }
		on { exit }'
}
value_ok() {
	local out
	out=$(timeout 10 "$bin" "$1" "$2" "$3" -p 999999999 2>&1)
	! grep -qE "invalid|unknown (format|option)" <<<"$out"
}
for c in $help_commands; do
	for opt in --backend --format --mode --unwind; do
		text=$(help_text_of "$c" "$opt")
		[[ -n $text ]] || continue
		case $opt in
		--mode) v=_tracekit_alloc_mode ;;
		--unwind) v=_tracekit_unwind ;;
		*) v=_tracekit_${c}_${opt#--} ;;
		esac
		took=""
		for w in $(grep -oE '\b[a-z]+\b' <<<"${text#*"$opt"}" | sort -u); do
			value_ok "$c" "$opt" "$w" && took+=" $w"
		done
		same_list "$c $opt values (accepted by tracekit)" "${!v-}" "$took"
		bad=""
		for w in ${!v-}; do
			value_ok "$c" "$opt" "$w" || bad+=" $w"
		done
		[[ -z $bad ]] || fail "$c $opt: tracekit refuses the completion's$bad"
	done
done

summary completion
