// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The smallest program built on an installed libtracekit: tests/install/check-install.sh
 * compiles it with `pkg-config --cflags --libs tracekit` against a staged install and runs
 * it. It prints the capability snapshot as text, through the public API of today
 * (include/tracekit/tracekit.h; this file follows when that API changes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/tracekit.h>

int main(void)
{
	struct tk_caps_opts opts = { .sz = TK_OPTS_SZ(tk_caps_opts) };
	struct tk_caps *caps;
	int err;

	caps = calloc(1, sizeof(*caps));
	if (!caps)
		return EXIT_FAILURE;
	err = tk_caps__snapshot(&opts, caps);
	if (!err)
		err = tk_caps__write_text(caps, stdout);
	if (err)
		fprintf(stderr, "example: %s\n", strerror(-err));
	free(caps);
	return err ? EXIT_FAILURE : EXIT_SUCCESS;
}
