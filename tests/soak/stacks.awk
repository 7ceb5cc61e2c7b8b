# One record per entry of the JSON profiles' "stacks" (RS: {"pid":), streamed: the file
# of a long capture is gigabytes, one line. Prints "entries N", "nosym N", "unknown N",
# "module NAME N" (files of module+0xOFFSET frames), and the pids with a frame named
# NAMED into PIDS.
BEGIN { RS = "[{]\"pid\":" }
FNR == 1 { next }
{
	entries++
	pid = $0; sub(/,.*/, "", pid)
	if (index($0, "\"name\":\"" named "\""))
		print pid > pids
	n = split($0, fr, "[{]\"name\":")
	for (i = 2; i <= n; i++) {
		if (!index(fr[i], "\"kernel\":false"))
			continue
		if (substr(fr[i], 1, 11) == "\"[unknown]\"") {
			unknown++
		} else if (match(fr[i], /^"[^"]*\+0x[0-9a-f]+"/)) {
			nosym++
			m = fr[i]; sub(/^"/, "", m); sub(/\+0x.*/, "", m)
			mods[m]++
		}
	}
}
END {
	print "entries", entries + 0
	print "nosym", nosym + 0
	print "unknown", unknown + 0
	for (m in mods)
		print "module", m, mods[m]
}
