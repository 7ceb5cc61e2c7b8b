// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An allocation session's command (-- CMD): its environment (LD_PRELOAD of the
 * sampler or the agent, MALLOC_CONF), whether it can be preloaded at all
 * (static, its own allocator), where the preload libraries are, the choice of
 * backend and hook, and starting it held before exec (alloc.c releases it).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <elf.h>
#include <unistd.h>

#include "alloc/agent_proto.h"
#include "alloc/alloc_int.h"
#include "alloc/alloc_syms.h"
#include "core/untrusted.h"
#include "core/fsutil.h"
#include "core/internal.h"
#include "core/spawn_held.h"

/* ---- the command's environment ------------------------------------------------------- */

int tk_alloc__setenv(struct tk_alloc *a, const char *name, const char *fmt, ...)
{
	char *val, *e;
	va_list ap;
	int i, n;

	va_start(ap, fmt);
	n = vasprintf(&val, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	for (i = 0; i < a->nr_env; i++) {
		size_t len = strlen(name);

		if (strncmp(a->env[i], name, len) || a->env[i][len] != '=')
			continue;
		/* LD_PRELOAD accumulates; anything else is replaced */
		if (!strcmp(name, "LD_PRELOAD"))
			n = asprintf(&e, "%s:%s", a->env[i], val);
		else
			n = asprintf(&e, "%s=%s", name, val);
		free(val);
		if (n < 0)
			return -ENOMEM;
		free(a->env[i]);
		a->env[i] = e;
		return 0;
	}
	if (a->nr_env >= TK_ALLOC_MAX_ENV - 1) {
		free(val);
		return -E2BIG;
	}
	n = asprintf(&e, "%s=%s", name, val);
	free(val);
	if (n < 0)
		return -ENOMEM;
	a->env[a->nr_env++] = e;
	a->env[a->nr_env] = NULL;
	return 0;
}

static bool env_has(const struct tk_alloc *a, const char *name)
{
	size_t len = strlen(name);
	int i;

	for (i = 0; i < a->nr_env; i++)
		if (!strncmp(a->env[i], name, len) && a->env[i][len] == '=')
			return true;
	return false;
}

static bool env_preloads(const struct tk_alloc *a, const char *lib)
{
	int i;

	for (i = 0; i < a->nr_env; i++)
		if (!strncmp(a->env[i], "LD_PRELOAD=", 11) && strstr(a->env[i], lib))
			return true;
	return false;
}

/* ---- the command --------------------------------------------------------------------- */

/*
 * 1 when @path is an ELF executable with a program interpreter (ld.so loads it,
 * LD_PRELOAD works), 0 when it is a static ELF, 1 for a script (its
 * interpreter is), negative errno when unreadable.
 */
static int is_dynamic(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd, i, ret = 0;

	/* never a FIFO or a device (it would hang us, or act): checked before it is opened */
	fd = tk_open_regular(path, NULL);
	if (fd < 0)
		return fd;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return 1;
	}
	for (i = 0; i < eh.e_phnum && i < 256; i++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + (uint64_t)i * eh.e_phentsize) !=
		    sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP) {
			ret = 1;
			break;
		}
	}
	close(fd);
	return ret;
}

#ifndef TK_PRELOAD_DIR
#error "TK_PRELOAD_DIR and TK_PRELOAD_REL come from the Makefile (PRELOAD_DIR)"
#endif

/*
 * Where libtkalloc.so and libtkagent.so are: opts.preload_dir if given; else beside the
 * executable when libtkalloc.so is there (the build tree); else where an install puts them
 * relative to the executable, EXE_DIR/../TK_PRELOAD_REL (PREFIX/bin/tracekit finds
 * PREFIX/lib/MULTIARCH/tracekit, in a DESTDIR stage too); else the installed directory.
 */
void tk_alloc__find_preload_dir(struct tk_alloc *a)
{
	char exe[PATH_MAX], dir[PATH_MAX + 64], lib[PATH_MAX + 128], real[PATH_MAX];
	struct stat st;
	ssize_t n;
	int i;

	if (a->opts.preload_dir) {
		snprintf(a->preload_dir, sizeof(a->preload_dir), "%s", a->opts.preload_dir);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
	}
	for (i = 0; n > 0 && i < 2; i++) {
		if (i == 0)
			snprintf(dir, sizeof(dir), "%s", exe[0] ? exe : "/");
		else if (TK_PRELOAD_REL[0] != '/')
			snprintf(dir, sizeof(dir), "%s/../%s", exe, TK_PRELOAD_REL);
		else
			break;	/* PRELOAD_DIR is not under the executable's prefix */
		snprintf(lib, sizeof(lib), "%s/%s", dir, TK_PRELOAD_SAMPLER);
		if (stat(lib, &st) || !S_ISREG(st.st_mode))
			continue;
		snprintf(a->preload_dir, sizeof(a->preload_dir), "%s",
			 realpath(dir, real) ? real : dir);
		return;
	}
	snprintf(a->preload_dir, sizeof(a->preload_dir), "%s", TK_PRELOAD_DIR);
}

static bool preload_present(const struct tk_alloc *a, const char *lib)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", a->preload_dir, lib);
	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/*
 * The executable defines an allocator itself (jemalloc linked in, with or
 * without a prefix): its own calls bind to it, not to anything preloaded.
 */
static bool own_allocator(const char *exe)
{
	struct tk_alloc_syms *syms = calloc(1, sizeof(*syms));
	char why[128];
	bool own;

	if (!syms)
		return false;
	own = !tk_alloc_syms__find_static(exe, syms, why, sizeof(why)) &&
	      tk_alloc_syms__usable(syms);
	free(syms);
	return own;
}

int tk_alloc__choose(struct tk_alloc *a, const struct tk_caps *caps, char *why, size_t why_sz)
{
	enum tk_backend b = a->opts.backend;
	char exe[PATH_MAX];
	int dyn = 0, err;

	if (b == TK_BACKEND_NONE) {
		b = caps->backends[TK_COLLECT_ALLOC].backend;
		if (b == TK_BACKEND_NONE) {
			snprintf(why, why_sz, "no backend can profile allocations here: %s",
				 caps->backends[TK_COLLECT_ALLOC].reason);
			return -ENOTSUP;
		}
	}
	if (b != TK_BACKEND_BPF && b != TK_BACKEND_JEMALLOC) {
		snprintf(why, why_sz, "backend %s cannot profile allocations", tk_backend__name(b));
		return -EINVAL;
	}
	if (a->opts.mode == TK_ALLOC_MODE_GROWTH && b != TK_BACKEND_BPF) {
		snprintf(why, why_sz, "--mode growth traces page faults, brk and mmap with BPF, "
			 "which is %s; the jemalloc backend gives sampled heap profiles only",
			 caps->backends[TK_COLLECT_ALLOC].backend == TK_BACKEND_BPF ?
			 "not the backend asked for" : "not available here (see 'tracekit caps')");
		return -ENOTSUP;
	}
	if (b == TK_BACKEND_JEMALLOC && a->opts.mode == TK_ALLOC_MODE_FULL) {
		snprintf(why, why_sz, "--mode full needs BPF uprobes; jemalloc's profiler samples");
		return -ENOTSUP;
	}
	a->be = b == TK_BACKEND_BPF ? &tk_alloc_backend_bpf : &tk_alloc_backend_jemalloc;
	/* jemalloc's profiler takes its own stacks: no unwind tables to build */
	if (a->be != &tk_alloc_backend_bpf)
		tk_symbolizer__set_unwind(a->sym, false);

	if (a->opts.argv) {
		err = tk_find_command(a->opts.argv[0], exe, sizeof(exe));
		if (err) {
			snprintf(why, why_sz, "cannot run '%s': %s", a->opts.argv[0],
				 strerror(-err));
			return err;
		}
		dyn = is_dynamic(exe);
		if (dyn < 0) {
			snprintf(why, why_sz, "cannot read '%s': %s", exe, strerror(-dyn));
			return dyn;
		}
	}
	if (b != TK_BACKEND_BPF || a->opts.mode == TK_ALLOC_MODE_GROWTH) {
		a->hook = TK_ALLOC_HOOK_NONE;
	} else if (a->opts.argv && dyn && a->opts.mode == TK_ALLOC_MODE_SAMPLED &&
		   !a->opts.no_preload && !own_allocator(exe) &&
		   preload_present(a, TK_PRELOAD_SAMPLER)) {
		a->hook = TK_ALLOC_HOOK_PRELOAD;
	} else {
		a->hook = TK_ALLOC_HOOK_UPROBES;
		if (a->opts.argv && dyn) {
			if (!preload_present(a, TK_PRELOAD_AGENT)) {
				snprintf(why, why_sz, "%s/%s is missing: it holds the command until "
					 "its allocator is hooked (build it with make)",
					 a->preload_dir, TK_PRELOAD_AGENT);
				return -ENOENT;
			}
			a->attach_after_exec = true;
		}
	}
	return 0;
}

int tk_alloc__start_command(struct tk_alloc *a, char *why, size_t why_sz)
{
	int sv[2] = { -1, -1 }, err;
	pid_t pid;

	if (a->attach_after_exec) {
		if (!env_preloads(a, TK_PRELOAD_AGENT) &&
		    (err = tk_alloc__setenv(a, "LD_PRELOAD", "%s/%s", a->preload_dir,
					    TK_PRELOAD_AGENT)))
			return err;
		if ((err = tk_alloc__setenv(a, TK_ENV_AGENT_HOLD, "1")))
			return err;
	}
	if (a->hook == TK_ALLOC_HOOK_PRELOAD) {
		/* sampling stops by itself once no uprobe is on its marker (tracekit gone) */
		if ((err = tk_alloc__setenv(a, "LD_PRELOAD", "%s/%s", a->preload_dir,
					    TK_PRELOAD_SAMPLER)) ||
		    (err = tk_alloc__setenv(a, TK_ENV_SAMPLE_BYTES, "%" PRIu64, a->sample_bytes)) ||
		    (err = tk_alloc__setenv(a, TK_ENV_SAMPLE_PROBED, "1")))
			return err;
	}
	if (env_has(a, TK_ENV_AGENT_HOLD) || env_has(a, TK_ENV_AGENT_JEMALLOC)) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			return -errno;
		if ((err = tk_alloc__setenv(a, TK_ENV_AGENT_FD, "%d", sv[1]))) {
			close(sv[0]);
			close(sv[1]);
			return err;
		}
		a->agent_fd = sv[0];
	}
	pid = tk_spawn_held(a->opts.argv, a->env, sv[1], &a->release_fd, &a->exec_err_fd);
	if (sv[1] >= 0)
		close(sv[1]);
	if (pid < 0) {
		snprintf(why, why_sz, "cannot start '%s': %s", a->opts.argv[0], strerror(-pid));
		return pid;
	}
	a->child = a->pid = pid;
	return 0;
}
