// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The jemalloc backend of `tracekit alloc`: jemalloc's own sampled heap
 * profiler, where eBPF is not available. It delivers no records; it builds
 * the profile itself from a heap dump (jedump.h, jeprof.h).
 *
 * -- CMD: the command runs with LD_PRELOAD of libtkagent.so and (unless the
 * program links a jemalloc of its own) the system's libjemalloc, and with
 * MALLOC_CONF switching profiling on (prof_accum, so alloc_* are filled;
 * prof_final, so the command's exit leaves a last dump) and writing into a
 * private directory (/tmp/tracekit-je.PID.XXXXXX: mkdtemp, 0700, removed at
 * free, and at a next run's start when a SIGKILL left it). While the command
 * runs, a dump is asked of libtkagent.so over a socket pair; once it has
 * exited, its final dump is taken.
 *
 * -p PID: tracekit cannot make a foreign process dump, so it reads what that
 * process writes itself (prof_interval, prof_gdump, prof_final) where its
 * prof_prefix says: the newest dump written since the start, else the newest
 * at all (the profile says how old).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc/agent_proto.h"
#include "alloc/alloc_je.h"
#include "alloc/alloc_int.h"
#include "core/fsutil.h"
#include "core/internal.h"
#include "alloc/jedump.h"
#include "alloc/jeprof.h"

#define ENVIRON_LIMIT (1 << 20)

struct je_priv {
	/* -- CMD */
	char dir[PATH_MAX];		/* the private directory; "" when none */
	int dir_fd;			/* open on it and locked; -1 when none */
	int lg_sample;
	uint64_t requests;		/* dumps asked for */
	char lib[PATH_MAX];		/* the libjemalloc preloaded, "" when the program has one */
	/* -p PID */
	char dump_dir[PATH_MAX];	/* where it writes: PID/cwd/... or PID/root/... */
	char dump_name[NAME_MAX + 1];	/* "BASENAME.PID." */
	char prof_prefix[PATH_MAX];	/* as configured, for messages */
	/* the last build's failure, for the front end (tk_alloc_je__error) */
	char error[512];
};

static struct je_priv *priv_get(struct tk_alloc *a)
{
	struct je_priv *p = a->priv;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->lg_sample = TK_JEDUMP_DEFAULT_LG_SAMPLE;
	p->dir_fd = -1;
	a->priv = p;
	return p;
}

const char *tk_alloc_je__error(const struct tk_alloc *a)
{
	const struct je_priv *p = a->priv;

	return p && p->error[0] ? p->error : NULL;
}

static const char *proc_root(const struct tk_alloc *a)
{
	return a->opts.proc_root && *a->opts.proc_root ? a->opts.proc_root : "/proc";
}

/* ---- -- CMD ----------------------------------------------------------------------- */

/* The dumps' private directories: JE_DIR_PARENT/JE_DIR_PREFIX PID.XXXXXX (mkdtemp). */
#define JE_DIR_PARENT "/tmp"
#define JE_DIR_PREFIX "tracekit-je."

/* The creator's pid when @name is exactly "tracekit-je.PID.XXXXXX" (ours), else 0. */
static pid_t stale_dir_pid(const char *name)
{
	const char *p = name + strlen(JE_DIR_PREFIX);
	long pid = 0;
	int i;

	if (strncmp(name, JE_DIR_PREFIX, strlen(JE_DIR_PREFIX)) || *p < '1' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9' && pid <= 0x7fffffff; p++)
		pid = pid * 10 + (*p - '0');
	if (*p++ != '.' || pid > 0x7fffffff)
		return 0;
	for (i = 0; i < 6; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9')))
			return 0;
	return p[6] ? 0 : (pid_t)pid;
}

/*
 * What a killed run (SIGKILL) left in JE_DIR_PARENT: our directories (the
 * name, a directory and no symlink, our uid, mode 0700) whose creator is gone
 * (kill(PID, 0) says ESRCH) and whose lock nobody holds. Nothing else.
 */
static void remove_stale_dirs(void)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int dfd, fd;

	dfd = open(JE_DIR_PARENT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		pid_t pid = stale_dir_pid(de->d_name);

		if (!pid || pid == getpid() || !kill(pid, 0) || errno != ESRCH)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid() || (st.st_mode & 07777) != 0700)
			continue;
		fd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!flock(fd, LOCK_EX | LOCK_NB))
			tk_remove_flat_dir_at(dfd, de->d_name);
		close(fd);
	}
	closedir(d);
}

static int prepare_cmd(struct tk_alloc *a, struct je_priv *p, char *why, size_t why_sz)
{
	struct tk_jedump_program prog = { .linkage = TK_JEDUMP_NONE };
	char agent[PATH_MAX + 32], prog_path[PATH_MAX], conf[PATH_MAX + 256], prefix[PATH_MAX];
	const char *conf_env = "MALLOC_CONF";
	int err;

	if (a->opts.mode == TK_ALLOC_MODE_GROWTH) {
		snprintf(why, why_sz, "growth mode needs eBPF; jemalloc's profiler samples "
			 "allocations");
		return -EOPNOTSUPP;
	}
	snprintf(agent, sizeof(agent), "%s/%s", a->preload_dir, TK_PRELOAD_AGENT);
	if (access(agent, R_OK)) {
		err = -errno;
		snprintf(why, why_sz, "%s: %s (it answers tracekit's dump requests in the "
			 "command)", agent, strerror(-err));
		return err;
	}
	if (strpbrk(agent, ": ")) {
		snprintf(why, why_sz, "%s: LD_PRELOAD cannot name a path with ':' or ' '", agent);
		return -EINVAL;
	}

	/* the program's own jemalloc, if any: then no second one */
	if (!tk_find_command(a->opts.argv[0], prog_path, sizeof(prog_path)))
		tk_jedump__program(prog_path, &prog);
	if (prog.linkage == TK_JEDUMP_STATIC && prog.prof_built == 0) {
		snprintf(why, why_sz, "%s has jemalloc linked in statically, built without "
			 "profiling (--enable-prof): its heap cannot be profiled by jemalloc; eBPF "
			 "can (where bpf(2) is allowed)", prog_path);
		return -EOPNOTSUPP;
	}
	if (prog.linkage == TK_JEDUMP_STATIC)
		conf_env = prog.conf_env;
	if (prog.linkage == TK_JEDUMP_NONE) {
		err = tk_jedump__find_lib(p->lib, sizeof(p->lib));
		if (err) {
			snprintf(why, why_sz, "no %s found to preload (install libjemalloc2, or set "
				 "TRACEKIT_LIBJEMALLOC=PATH)", TK_JEDUMP_LIB);
			return err;
		}
	}

	p->lg_sample = a->opts.mode == TK_ALLOC_MODE_FULL ? 0 : tk_jedump__lg_sample(a->sample_bytes);
	remove_stale_dirs();
	/* our pid in the name, so that a next run can tell when we are gone (SIGKILL) */
	snprintf(p->dir, sizeof(p->dir), "%s/%s%d.XXXXXX", JE_DIR_PARENT, JE_DIR_PREFIX,
		 (int)getpid());
	if (!mkdtemp(p->dir)) {
		err = -errno;
		p->dir[0] = '\0';
		snprintf(why, why_sz, "cannot create a directory for the dumps: %s", strerror(-err));
		return err;
	}
	/* held to the end: a run in another pid namespace leaves the directory alone */
	p->dir_fd = open(p->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p->dir_fd >= 0)
		flock(p->dir_fd, LOCK_EX | LOCK_NB);
	snprintf(prefix, sizeof(prefix), "%s/jeprof", p->dir);
	err = tk_jedump__malloc_conf(conf, sizeof(conf), p->lg_sample, prefix);
	if (err) {
		snprintf(why, why_sz, "cannot build MALLOC_CONF: %s", strerror(-err));
		return err;
	}

	/*
	 * TK_ENV_AGENT_JEMALLOC makes the session create the agent's socket pair
	 * (a->agent_fd ours, TK_ENV_AGENT_FD the command's end).
	 */
	if (p->lib[0])
		err = tk_alloc__setenv(a, "LD_PRELOAD", "%s:%s", agent, p->lib);
	else
		err = tk_alloc__setenv(a, "LD_PRELOAD", "%s", agent);
	if (!err)
		err = tk_alloc__setenv(a, conf_env, "%s", conf);
	if (!err)
		err = tk_alloc__setenv(a, TK_ENV_AGENT_JEMALLOC, "1");
	if (err) {
		snprintf(why, why_sz, "cannot set the command's environment: %s", strerror(-err));
		return err;
	}

	snprintf(a->describe, sizeof(a->describe),
		 "jemalloc's heap profiler (a sample every %llu bytes on average) in %s%s%s, "
		 "dumps in %s", 1ULL << p->lg_sample,
		 p->lib[0] ? p->lib : prog.linkage == TK_JEDUMP_SHARED ? prog.needed :
								      "the program's own jemalloc",
		 p->lib[0] ? " (preloaded)" : prog.linkage == TK_JEDUMP_SHARED ? " (its own)" : "",
		 prog.linkage == TK_JEDUMP_STATIC && prog.prof_built < 0 ?
			 ", if it was built with profiling" : "",
		 p->dir);
	return 0;
}

/* ---- -p PID ----------------------------------------------------------------------- */

/* The prof_prefix @pid configured (environment), else jemalloc's default "jeprof". */
static void pid_prefix(struct tk_alloc *a, struct je_priv *p)
{
	const struct tk_proc_info *pi = &a->caps->proc;
	char rel[64], name[64], *env = NULL;
	size_t len = 0, i, off;

	snprintf(p->prof_prefix, sizeof(p->prof_prefix), "jeprof");
	for (i = 0; pi->alloc_prefix[i] && i < sizeof(name) - 12; i++)
		name[i] = pi->alloc_prefix[i] >= 'a' && pi->alloc_prefix[i] <= 'z' ?
				  pi->alloc_prefix[i] - 'a' + 'A' : pi->alloc_prefix[i];
	snprintf(name + i, sizeof(name) - i, "MALLOC_CONF=");
	snprintf(rel, sizeof(rel), "%d/environ", (int)a->pid);
	if (tk_read_file_alloc(proc_root(a), rel, ENVIRON_LIMIT, &env, &len))
		return;
	for (off = 0; off < len; off += strlen(env + off) + 1) {
		if (!strncmp(env + off, name, strlen(name)))
			tk_jedump__conf_prefix(env + off + strlen(name), p->prof_prefix,
					       sizeof(p->prof_prefix));
	}
	free(env);
}

static int open_pid(struct tk_alloc *a, struct je_priv *p, char *why, size_t why_sz)
{
	const struct tk_proc_info *pi;
	char rel[PATH_MAX + 64], *slash;
	const char *base;

	if (!a->caps || a->caps->pid != a->pid) {
		snprintf(why, why_sz, "no capability report of process %d", (int)a->pid);
		return -EINVAL;
	}
	pi = &a->caps->proc;
	if (pi->allocator != TK_ALLOC_JEMALLOC) {
		snprintf(why, why_sz, "process %d does not use jemalloc (%s)", (int)a->pid,
			 tk_allocator__name(pi->allocator));
		return -EOPNOTSUPP;
	}
	if (pi->jemalloc_prof_built == 0) {
		snprintf(why, why_sz, "process %d's jemalloc was built without profiling (%s)",
			 (int)a->pid, pi->jemalloc_prof_built_evidence);
		return -EOPNOTSUPP;
	}
	if (pi->jemalloc_prof_active != 1) {
		snprintf(why, why_sz, "process %d's jemalloc profiling is not active (start it "
			 "with MALLOC_CONF=prof:true): %s", (int)a->pid,
			 pi->jemalloc_prof_active_evidence);
		return -EOPNOTSUPP;
	}
	pid_prefix(a, p);
	/* a relative prefix is the process's cwd's; an absolute one is under its root */
	if (p->prof_prefix[0] == '/')
		snprintf(rel, sizeof(rel), "%d/root%s", (int)a->pid, p->prof_prefix);
	else
		snprintf(rel, sizeof(rel), "%d/cwd/%s", (int)a->pid, p->prof_prefix);
	if (tk_path_join(p->dump_dir, sizeof(p->dump_dir), proc_root(a), rel)) {
		snprintf(why, why_sz, "prof_prefix %s: too long", p->prof_prefix);
		return -ENAMETOOLONG;
	}
	slash = strrchr(p->dump_dir, '/');
	base = slash + 1;
	snprintf(p->dump_name, sizeof(p->dump_name), "%s.%d.", base, (int)a->pid);
	*slash = '\0';
	snprintf(a->describe, sizeof(a->describe),
		 "jemalloc heap dumps process %d writes itself (%s.%d.*.heap)", (int)a->pid,
		 p->prof_prefix, (int)a->pid);
	return 0;
}

/* ---- the ops ---------------------------------------------------------------------- */

static int je_prepare_env(struct tk_alloc *a, char *why, size_t why_sz)
{
	struct je_priv *p = priv_get(a);

	if (!p) {
		snprintf(why, why_sz, "out of memory");
		return -ENOMEM;
	}
	if (!a->opts.argv)
		return 0;
	return prepare_cmd(a, p, why, why_sz);
}

static int je_open(struct tk_alloc *a, char *why, size_t why_sz)
{
	struct je_priv *p = priv_get(a);

	if (!p) {
		snprintf(why, why_sz, "out of memory");
		return -ENOMEM;
	}
	a->hook = TK_ALLOC_HOOK_NONE;
	if (!a->opts.argv)
		return open_pid(a, p, why, why_sz);
	if (!p->dir[0]) {
		snprintf(why, why_sz, "the command's environment was not prepared");
		return -EINVAL;
	}
	return 0;
}

static int je_start(struct tk_alloc *a, char *why, size_t why_sz)
{
	return 0;	/* MALLOC_CONF set prof_active:true from the command's start */
}

static int je_poll(struct tk_alloc *a, int timeout_ms)
{
	/* nothing arrives between dumps */
	if (timeout_ms > 0 && poll(NULL, 0, timeout_ms) < 0 && errno == EINTR)
		return -EINTR;
	return 0;
}

static int je_drain(struct tk_alloc *a)
{
	return 0;	/* the final build takes the dump */
}

/* The dump to read now for -- CMD: asked of the agent, or the command's last one. */
static int cmd_dump(struct tk_alloc *a, struct je_priv *p, char *path, size_t size,
		    bool *requested)
{
	char name[64];
	int err;

	*requested = false;
	/* its final dump: it has exited */
	snprintf(name, sizeof(name), "jeprof.%d.", (int)a->pid);
	if (!tk_jedump__newest(p->dir, name, 0, path, size, NULL) && strstr(path, ".f.heap"))
		return 0;
	if (a->agent_fd >= 0) {
		snprintf(path, size, "%s/request.%llu.heap", p->dir,
			 (unsigned long long)++p->requests);
		err = tk_jedump__request(a->agent_fd, path, TK_JEDUMP_REQUEST_TIMEOUT_MS);
		if (!err) {
			*requested = true;
			return 0;
		}
		if (err == -ETIMEDOUT) {
			snprintf(p->error, sizeof(p->error), "process %d did not answer a heap "
				 "dump request within %d s", (int)a->pid,
				 TK_JEDUMP_REQUEST_TIMEOUT_MS / 1000);
			return err;
		}
		if (err != -EPIPE && err != -ENOTCONN) {
			snprintf(p->error, sizeof(p->error), "process %d could not write a heap "
				 "dump: %s%s", (int)a->pid, strerror(-err),
				 err == -ENOENT ? " (no mallctl reachable in it: a jemalloc linked "
				 "in and not exported answers only with its final dump, at exit)" : "");
			return err;
		}
		/* the agent is gone: the command exited (or exec'd) */
	}
	if (!tk_jedump__newest(p->dir, name, 0, path, size, NULL))
		return 0;
	/* a program the command started, which inherited MALLOC_CONF */
	if (!tk_jedump__newest(p->dir, NULL, 0, path, size, NULL))
		return 0;
	snprintf(p->error, sizeof(p->error), "the command left no heap dump: jemalloc writes "
		 "its last at exit (prof_final), which a process killed by a signal or ending "
		 "with _exit() skips");
	return -ENOENT;
}

/* The pid in a dump's name "jeprof.PID.SEQ...heap"; @fallback when it has none. */
static uint32_t dump_pid(const char *path, uint32_t fallback)
{
	const char *base = tk_path_basename(path), *dot = strchr(base, '.');
	unsigned long v;
	char *end;

	if (!dot || strncmp(base, "jeprof.", 7))
		return fallback;
	v = strtoul(dot + 1, &end, 10);
	return end != dot + 1 && *end == '.' && v > 0 && v < (1UL << 22) ? (uint32_t)v : fallback;
}

static int je_build(struct tk_alloc *a, uint64_t min_age_ns, bool final, struct tk_profile **out)
{
	struct je_priv *p = a->priv;
	char path[PATH_MAX + 64];
	int64_t mtime = 0, now = tk_now_ns(CLOCK_REALTIME);
	bool requested = false, stale = false;
	uint64_t period = 0;
	uint32_t pid = a->pid;
	int err;

	*out = NULL;
	if (!p)
		return -EINVAL;
	p->error[0] = '\0';
	if (a->opts.argv) {
		err = cmd_dump(a, p, path, sizeof(path), &requested);
		if (err)
			return err;
		if (!requested)
			pid = dump_pid(path, a->pid);
	} else {
		err = tk_jedump__newest(p->dump_dir, p->dump_name, a->start_ns, path, sizeof(path),
					&mtime);
		if (err == -ENOENT) {
			err = tk_jedump__newest(p->dump_dir, p->dump_name, 0, path, sizeof(path),
						&mtime);
			stale = !err;
		}
		if (err) {
			snprintf(p->error, sizeof(p->error), "no heap dump from %d yet: jemalloc "
				 "writes them at prof_interval / prof_gdump / exit (prof_final) — "
				 "set one of those in its MALLOC_CONF; looked for %s.%d.*.heap%s%s",
				 (int)a->pid, p->prof_prefix, (int)a->pid, err == -ENOENT ? "" : ": ",
				 err == -ENOENT ? "" : strerror(-err));
			return err;
		}
	}

	err = tk_jedump__load(path, a->sym, pid, "jemalloc", &period, out);
	if (requested)
		unlink(path);
	if (err) {
		snprintf(p->error, sizeof(p->error), "cannot read the heap dump %s: %s", path,
			 strerror(-err));
		return err;
	}
	tk_profile__add_comment(*out, "backend jemalloc: %s heap dump of pid %u, sample period "
				"%llu bytes", requested ? "a requested" : "the last", pid,
				(unsigned long long)period);
	if (stale)
		tk_profile__add_comment(*out, "pid %d wrote no dump since the capture started: "
					"this one is %lld s old", (int)a->pid,
					(long long)((now - mtime) / 1000000000));
	if (min_age_ns)
		tk_profile__add_comment(*out, "--min-age is ignored with the jemalloc backend: "
					"its dumps do not say when an object was allocated");
	(*out)->time_nanos = a->start_ns;
	(*out)->duration_nanos = a->start_ns ? now - a->start_ns : 0;
	return 0;
}


static void je_free(struct tk_alloc *a)
{
	struct je_priv *p = a->priv;

	if (!p)
		return;
	if (p->dir[0])
		tk_remove_flat_dir_at(AT_FDCWD, p->dir);
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	free(p);
	a->priv = NULL;
}

const struct tk_alloc_backend tk_alloc_backend_jemalloc = {
	.name = "jemalloc",
	.prepare_env = je_prepare_env,
	.open = je_open,
	.start = je_start,
	.poll = je_poll,
	.drain = je_drain,
	.build = je_build,
	.free = je_free,
};
