// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Loader of bpf/core_probe.bpf.c: the CO-RE self-test, run once, never attached. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <linux/types.h>

#include "bpf/core_probe.h"
#include "core_probe.skel.h"
#include "core/internal.h"

int tk_core_probe__run(struct tk_probe_ctx *ctx)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = ctx->btf_path);
	LIBBPF_OPTS(bpf_test_run_opts, run_opts);
	struct core_probe_bpf *skel;
	__u64 args[1] = {};
	int err;

	if (!ctx->btf_path) {
		snprintf(ctx->msg, sizeof(ctx->msg), "no kernel BTF to relocate against");
		return -ENOENT;
	}
	skel = core_probe_bpf__open_opts(&open_opts);
	if (!skel) {
		err = -errno;
		snprintf(ctx->msg, sizeof(ctx->msg), "open: %s", strerror(-err));
		return err;
	}
	err = core_probe_bpf__load(skel);
	if (err) {
		snprintf(ctx->msg, sizeof(ctx->msg), "load with CO-RE relocations: %s",
			 strerror(-err));
		goto cleanup;
	}
	run_opts.ctx_in = args;
	run_opts.ctx_size_in = sizeof(args);
	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.core_probe), &run_opts);
	if (err) {
		err = -errno;
		snprintf(ctx->msg, sizeof(ctx->msg), "loaded; test run: %s", strerror(-err));
		goto cleanup;
	}
	if (!skel->bss->facts.ran || skel->bss->facts.tgid != (__u32)getpid()) {
		snprintf(ctx->msg, sizeof(ctx->msg),
			 "loaded, but current->tgid read as %u, expected %d: relocation is wrong",
			 skel->bss->facts.tgid, getpid());
		err = -EPROTO;
		goto cleanup;
	}
	ctx->core.tgid = skel->bss->facts.tgid;
	ctx->core.mm_migrate_has_nr_split = skel->bss->facts.mm_migrate_has_nr_split;
	ctx->core.mm_migrate_has_large_folio_split =
		skel->bss->facts.mm_migrate_has_large_folio_split;
	ctx->core.has_mr_numa_misplaced = skel->bss->facts.has_migrate_reason_numa_misplaced;
	snprintf(ctx->msg, sizeof(ctx->msg), "relocated and ran; read current->tgid = %u",
		 ctx->core.tgid);
cleanup:
	core_probe_bpf__destroy(skel);
	return err;
}
