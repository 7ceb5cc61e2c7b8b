/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A profile: what a CPU or allocation session (or numa --stacks) produced —
 * samples by stack, every loss counter, notes — and its writers. pprof output
 * is what `go tool pprof` reads (docs/profile-json.md describes the JSON).
 */
#ifndef __TRACEKIT_PROFILE_H
#define __TRACEKIT_PROFILE_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tk_profile;

void tk_profile__free(struct tk_profile *p);
/* A note carried into every format (pprof comments, JSON "comments"). */
int tk_profile__add_comment(struct tk_profile *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

enum tk_format {
	TK_FORMAT_TEXT = 0,
	TK_FORMAT_PPROF,
	TK_FORMAT_FOLDED,
	TK_FORMAT_SVG,
	TK_FORMAT_JSON,
};

/* "pprof", "folded", "svg", "json", "text" → format; -EINVAL otherwise. */
int tk_format__parse(const char *name, enum tk_format *fmt);
/* From an output file name: .pb.gz/.pprof → pprof, .folded, .svg, .json, .txt; -EINVAL. */
int tk_format__from_path(const char *path, enum tk_format *fmt);

/* gzipped profile.proto */
int tk_profile__write_pprof(const struct tk_profile *p, FILE *f);
/* "comm;main;caller;callee 42" per stack (root first), value = samples */
int tk_profile__write_folded(const struct tk_profile *p, FILE *f);
/* self-contained SVG flame graph */
int tk_profile__write_svg(const struct tk_profile *p, FILE *f, const char *title);
int tk_profile__write_json(const struct tk_profile *p, FILE *f);
/* top-@top functions by self and total samples, within 80 columns */
int tk_profile__write_text(const struct tk_profile *p, FILE *f, int top);
int tk_profile__write(const struct tk_profile *p, enum tk_format fmt, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_PROFILE_H */
