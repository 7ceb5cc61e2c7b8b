// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The smallest program built on an installed libtracekit: tests/install/check-install.sh
 * compiles it with `pkg-config --cflags --libs tracekit` against a staged install and runs
 * it. It prints the capability snapshot as text through the public API
 * (include/tracekit/caps.h) and which backend each collector would use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/tracekit.h>

int main(void)
{
	struct tk_caps_opts opts = { .sz = TK_OPTS_SZ(tk_caps_opts) };
	struct tk_caps *caps;
	const char *why;
	int err, c;

	err = tk_caps__take(&opts, &caps);
	if (!err)
		err = tk_caps__write_text(caps, stdout);
	if (err) {
		fprintf(stderr, "example: %s\n", strerror(-err));
		return EXIT_FAILURE;
	}
	for (c = 0; c < TK_COLLECT__COUNT; c++)
		printf("libtracekit %s: %s would use %s (%s)\n", tk_version(),
		       tk_collector__name(c),
		       tk_backend__name(tk_caps__backend(caps, c, &why)), why);
	tk_caps__free(caps);
	return EXIT_SUCCESS;
}
