// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libmicrohttpd, loaded when `tracekit serve` starts and not before: linked
 * into the binary, it brought gnutls, p11-kit, nettle, gmp and the rest of
 * its TLS stack into every command (about 2.4 MiB resident, and their
 * constructors run at each start), for a server that speaks no TLS.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define SERVE_MHD_IMPL
#include "serve.h"

struct serve_mhd serve_mhd;

int serve_mhd_open(char *why, size_t why_sz)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(n) { #n, offsetof(struct serve_mhd, n) }
		SYM(MHD_start_daemon), SYM(MHD_stop_daemon), SYM(MHD_quiesce_daemon),
		SYM(MHD_get_connection_info), SYM(MHD_set_connection_option),
		SYM(MHD_lookup_connection_value), SYM(MHD_create_response_from_buffer),
		SYM(MHD_add_response_header), SYM(MHD_queue_response),
		SYM(MHD_destroy_response),
#undef SYM
	};
	void *h;
	size_t i;

	if (serve_mhd.MHD_start_daemon)
		return 0;
	/* by soname, through the dynamic linker's own search: the binary was linked against it */
	h = dlopen(SERVE_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, why_sz, "cannot load %s (Debian: libmicrohttpd12): %s",
			 SERVE_MHD_SONAME, dlerror());
		return -ENOENT;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *p = dlsym(h, syms[i].name);

		if (!p) {
			snprintf(why, why_sz, "%s has no %s", SERVE_MHD_SONAME, syms[i].name);
			dlclose(h);
			memset(&serve_mhd, 0, sizeof(serve_mhd));
			return -ENOENT;
		}
		memcpy((char *)&serve_mhd + syms[i].off, &p, sizeof(p));
	}
	return 0;
}
