// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Asking JVMs for their perf maps, for the symbolizer (symbolize_state.h):
 * a JVM's compiled code is anonymous until it writes /tmp/perf-NSPID.map,
 * which it does when asked as `jcmd PID Compiler.perfmap` asks
 * (proc/jvm.h: the attach mechanism, by a child acting as the JVM's user in
 * the JVM's root). The map holds what is compiled at that moment, so a long
 * capture asks again as code is compiled: a second after the JVM is first
 * seen, then after 2, 4, 8, 16 and every 30 seconds; and a lookup that finds
 * a JVM's code unnamed asks at once (at most once a second), while the JVM
 * lives. Each JVM asked, or not asked and why, is said once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proc/jvm.h"
#include "sym/symbolize_state.h"

#define NSEC_PER_SEC 1000000000LL
#define FIRST_ASK_NS NSEC_PER_SEC
#define MAX_PERIOD_S 30
#define LOOKUP_GAP_NS NSEC_PER_SEC	/* between asks a lookup makes */

struct sym_jvm {
	struct tk_jvm_ask *ask;		/* in flight; NULL: none */
	int64_t due_ns;			/* the next periodic ask */
	int64_t asked_ns;		/* when the last one ended */
	uint32_t asks;			/* answered so far */
	bool refused;			/* not to be asked again */
	bool told_ok, told_fail;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

void tk_symbolizer__set_jit_ask(struct tk_symbolizer *s, bool on, tk_sym_note_fn note,
				void *ctx)
{
	s->jit_ask = on;
	s->note = note;
	s->note_ctx = ctx;
}

static struct sym_jvm *jvm_of(struct sym_proc *p)
{
	if (!p->jvm_ask) {
		p->jvm_ask = calloc(1, sizeof(*p->jvm_ask));
		if (p->jvm_ask)
			p->jvm_ask->due_ns = now_ns() + FIRST_ASK_NS;
	}
	return p->jvm_ask;
}

static void say(struct tk_symbolizer *s, bool warn, const char *msg)
{
	if (s->note)
		s->note(s->note_ctx, warn, msg);
}

/* An ask ended with @rc (1: the map is written) and @why. */
static void finish(struct tk_symbolizer *s, struct sym_proc *p, struct sym_jvm *v, int rc,
		   const char *why)
{
	const struct tk_jvm_info *info = v->ask ? tk_jvm_ask__info(v->ask) : NULL;
	uint32_t uid = info ? info->uid : 0, nspid = info ? info->nspid : p->pid;
	uint64_t period;
	char msg[512];

	tk_jvm_ask__free(v->ask);
	v->ask = NULL;
	v->asked_ns = now_ns();
	if (rc == 1) {
		if (!v->asks++)
			s->st.jvm_asked++;
		period = v->asks < 5 ? 1ull << v->asks : MAX_PERIOD_S;
		v->due_ns = v->asked_ns + (int64_t)(period < MAX_PERIOD_S ? period : MAX_PERIOD_S) *
					  NSEC_PER_SEC;
		if (!v->told_ok) {
			v->told_ok = true;
			snprintf(msg, sizeof(msg), "tracekit: asked JVM %u (uid %u) for its perf "
				 "map, as 'jcmd %u Compiler.perfmap' does, as its user (again as "
				 "it compiles; --no-jit-ask: never)", p->pid, uid, nspid);
			say(s, false, msg);
		}
		tk_symbolizer__jit_reread(s, p);
		return;
	}
	/* a timeout may pass; a JVM that must not be signalled, or said no, is left alone */
	v->refused = rc != -ETIMEDOUT || v->asks == 0;
	v->due_ns = v->asked_ns + MAX_PERIOD_S * NSEC_PER_SEC;
	if (!v->told_fail && rc != -ESRCH) {
		v->told_fail = true;
		s->st.jvm_ask_failed++;
		snprintf(s->jvm_failure, sizeof(s->jvm_failure), "JVM %u: %s", p->pid,
			 why && *why ? why : strerror(-rc));
		snprintf(msg, sizeof(msg), "tracekit: JVM %u was not asked for its perf map, its "
			 "compiled frames stay unnamed: %s", p->pid, why && *why ? why :
			 strerror(-rc));
		say(s, true, msg);
	}
}

/* Start an ask now; false when none could start (the reason is said by finish). */
static bool start(struct tk_symbolizer *s, struct sym_proc *p, struct sym_jvm *v)
{
	char why[256];
	int err;

	err = tk_jvm_ask__start(s->proc_root, p->pid, &v->ask, why, sizeof(why));
	if (err) {
		v->ask = NULL;
		finish(s, p, v, err, why);
		return false;
	}
	return true;
}

static int poll_ask(struct tk_symbolizer *s, struct sym_proc *p, struct sym_jvm *v, bool wait)
{
	char why[256];
	int rc = tk_jvm_ask__poll(v->ask, wait, why, sizeof(why));

	if (rc)
		finish(s, p, v, rc, why);
	return rc;
}

void tk_symbolizer__jvm_tick(struct tk_symbolizer *s, struct sym_proc *p)
{
	struct sym_jvm *v;

	if (!s->jit_ask || !p->jvm)
		return;
	v = jvm_of(p);
	if (!v || v->refused)
		return;
	if (v->ask)
		poll_ask(s, p, v, false);
	else if (now_ns() >= v->due_ns)
		start(s, p, v);
}

bool tk_symbolizer__jvm_ask_now(struct tk_symbolizer *s, struct sym_proc *p)
{
	struct sym_jvm *v;

	if (!s->jit_ask || !p->jvm)
		return false;
	v = jvm_of(p);
	if (!v || v->refused)
		return false;
	if (!v->ask && v->asked_ns && now_ns() - v->asked_ns < LOOKUP_GAP_NS)
		return false;
	if (!v->ask && !start(s, p, v))
		return false;
	return poll_ask(s, p, v, true) == 1;
}

void tk_symbolizer__jvm_settle(struct tk_symbolizer *s, struct sym_proc *p)
{
	if (p->jvm_ask && p->jvm_ask->ask)
		poll_ask(s, p, p->jvm_ask, true);
}

void tk_symbolizer__free_jvm(struct sym_proc *p)
{
	if (!p->jvm_ask)
		return;
	tk_jvm_ask__free(p->jvm_ask->ask);
	free(p->jvm_ask);
	p->jvm_ask = NULL;
}
