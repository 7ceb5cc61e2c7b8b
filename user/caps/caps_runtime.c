// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The target process's JIT runtime (`tracekit caps -p PID`, entry
 * process.jit): which one (a JVM, node) and its version, and what it needs
 * for whole stacks with named frames, with the remedy. Detection is
 * proc/jit_runtime.c's; this file only says it.
 *
 * - A JVM: its compiled frames are walked only with -XX:+PreserveFramePointer
 *   (without it the walk goes astray at the first one), and named from its
 *   perf map, which tracekit asks it for unless attach is disabled or it
 *   cannot be signalled (-Xrs with no listener).
 * - node: V8 keeps frame pointers; its frames are named with --perf-basic-prof
 *   (a perf map) or --perf-prof (a jitdump); --interpreted-frames-native-stack
 *   names interpreted functions too (else each is
 *   Builtins_InterpreterEntryTrampoline).
 */
#include <stdio.h>
#include <string.h>

#include "caps/caps_int.h"
#include "proc/jit_runtime.h"

static void jvm(struct tk_caps *caps, const struct tk_jit_runtime *rt)
{
	const struct tk_jvm_info *j = &rt->jvm;
	char names[384], walk[256], remedy[256] = "";
	bool ok = true;
	struct tk_cap *c;

	if (j->preserve_fp == 1) {
		snprintf(walk, sizeof(walk), "-XX:+PreserveFramePointer is on: compiled Java "
			 "frames are walked");
	} else {
		ok = false;
		snprintf(walk, sizeof(walk), "-XX:+PreserveFramePointer is %s: a walk goes astray "
			 "at the first compiled Java frame", j->preserve_fp == 0 ? "off" :
			 "not among its arguments");
		snprintf(remedy, sizeof(remedy), "restart it with -XX:+PreserveFramePointer");
	}
	if (j->attach == 0) {
		ok = false;
		snprintf(names, sizeof(names), "attach is disabled (-XX:+DisableAttachMechanism): "
			 "tracekit cannot ask it for its perf map%s", rt->perf_map ?
			 " (one exists)" : ", its compiled frames stay unnamed");
		snprintf(remedy + strlen(remedy), sizeof(remedy) - strlen(remedy), "%s%s",
			 remedy[0] ? "; " : "", "restart it without -XX:+DisableAttachMechanism "
			 "(or with -XX:+DumpPerfMapAtExit: named once it exits)");
	} else if (!j->sigquit_caught && !j->listener) {
		ok = false;
		snprintf(names, sizeof(names), "it does not catch SIGQUIT (-Xrs) and has no attach "
			 "listener: it is not asked for its perf map%s", rt->perf_map ?
			 " (one exists)" : ", its compiled frames stay unnamed");
		snprintf(remedy + strlen(remedy), sizeof(remedy) - strlen(remedy), "%s%s",
			 remedy[0] ? "; " : "", "restart it without -Xrs, or with "
			 "-XX:+DumpPerfMapAtExit (named once it exits)");
	} else {
		snprintf(names, sizeof(names), "%s; tracekit asks it for it as it compiles, as "
			 "'jcmd %u Compiler.perfmap' does, as uid %u (--no-jit-ask: not)",
			 rt->perf_map ? "its perf map exists" : "no perf map yet", rt->nspid,
			 j->uid);
	}
	c = set(caps, TK_CAP_PROC_JIT, ok ? TK_SUPPORTED : TK_UNSUPPORTED);
	VALUE(c, "JVM %s", rt->version[0] ? rt->version : "(version unknown)");
	REASON(c, "%s; %s%s%s", walk, names, rt->jvm_err ? "; its performance data was not "
	       "read: " : "", rt->jvm_err ? rt->jvm_why : "");
	REMEDY(c, "%s", remedy);
}

static void node(struct tk_caps *caps, const struct tk_jit_runtime *rt)
{
	bool named = rt->perf_basic_prof || rt->perf_prof || rt->perf_map || rt->jitdump;
	struct tk_cap *c = set(caps, TK_CAP_PROC_JIT, named ? TK_SUPPORTED : TK_UNSUPPORTED);

	VALUE(c, "node %s", rt->version[0] ? rt->version : "(version unknown)");
	REASON(c, "V8 keeps frame pointers: JavaScript frames are walked; %s; %s",
	       rt->perf_basic_prof || rt->perf_map ? "--perf-basic-prof: named from its perf map" :
	       rt->perf_prof || rt->jitdump ? "--perf-prof: named from its jitdump" :
	       "no --perf-basic-prof nor --perf-prof: its JavaScript frames stay unnamed",
	       rt->interpreted_native ? "--interpreted-frames-native-stack: interpreted "
	       "functions named too" : "without --interpreted-frames-native-stack each "
	       "interpreted function shows as Builtins_InterpreterEntryTrampoline");
	if (!named || !rt->interpreted_native)
		REMEDY(c, "restart it as node --perf-basic-prof --interpreted-frames-native-stack "
		       "(and --no-turbo-inlining for exact call chains)");
}

void snap_jit_runtime(struct snap *s, struct tk_caps *caps)
{
	struct tk_jit_runtime rt;
	struct tk_cap *c;
	int err = tk_jit_runtime__detect(s->proc, caps->pid, &rt);

	if (err) {
		c = set(caps, TK_CAP_PROC_JIT, TK_UNSUPPORTED);
		VALUE(c, "unknown");
		REASON(c, "cannot read /proc/%d/maps: %s", caps->pid, strerror(-err));
		return;
	}
	if (rt.kind == TK_JIT_JVM)
		jvm(caps, &rt);
	else if (rt.kind == TK_JIT_NODE)
		node(caps, &rt);
	else {
		c = set(caps, TK_CAP_PROC_JIT, TK_SUPPORTED);
		VALUE(c, "none");
		REASON(c, "no JVM (libjvm.so) or node in its mappings");
	}
}
