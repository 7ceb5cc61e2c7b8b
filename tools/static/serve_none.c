// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit-static has no `serve`: its HTTP server is libmicrohttpd, linked
 * dynamically only (a static libmicrohttpd pulls gnutls in). It says so.
 */
#include <stdlib.h>

#include "cli.h"

int cmd_serve(int argc, char **argv)
{
	return fail(EXIT_FAILURE, "serve: this statically linked tracekit has no HTTP server "
		    "(libmicrohttpd is linked dynamically only): use the dynamically linked "
		    "tracekit");
}
