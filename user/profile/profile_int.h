/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Shared by the profile model (profile.c) and its writers (profile_*.c); not
 * part of the API: the frames every writer names the same way.
 */
#ifndef __TK_PROFILE_INT_H
#define __TK_PROFILE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "profile/profile.h"

/*
 * How writers name a location: its function's name, or, without a function,
 * "module+0xOFFSET" (module: the mapping file's base name) or "0xADDRESS".
 */
struct tk_frame {
	const char *name;
	const char *filename;	/* the function's filename, or NULL */
	const char *module;	/* base name of the mapping file, "[kernel.kallsyms]", or NULL */
	bool kernel;
};

enum tk_frames_key {
	TK_FRAMES_BY_NAME,	/* one frame per (name, kernel): flame graphs */
	TK_FRAMES_BY_FUNCTION,	/* one frame per (name, filename): as pprof aggregates */
};

struct tk_frames {
	struct tk_frame *frames;
	size_t nr;
	uint32_t *of_loc;	/* location index (id - 1) → frame index */
	char **owned;		/* made-up names, freed with the frames */
	size_t nr_owned;
};

/*
 * Ids of mappings, functions and locations are their array position + 1, and
 * every reference points at an existing entry. Returns 0 or -EINVAL.
 */
int tk_profile__check(const struct tk_profile *p);
int tk_frames__build(const struct tk_profile *p, enum tk_frames_key key, struct tk_frames *fr);
void tk_frames__free(struct tk_frames *fr);
/* The frame of a sample's @i-th location (leaf first). */
static inline const struct tk_frame *tk_frames__at(const struct tk_frames *fr,
						   const struct tk_sample *s, uint32_t i)
{
	return &fr->frames[fr->of_loc[s->location_ids[i] - 1]];
}


/*
 * The value the text, folded, SVG and JSON writers count: the profile's default
 * sample type (inuse_space of a heap profile), else the first (samples/count).
 */
static inline int tk_profile__display_index(const struct tk_profile *p)
{
	int i;

	for (i = 0; p->default_sample_type && i < p->nr_values; i++)
		if (p->value_types[i].type && !strcmp(p->value_types[i].type,
						       p->default_sample_type))
			return i;
	return 0;
}

static inline int64_t tk_sample__count(const struct tk_profile *p, const struct tk_sample *s)
{
	return p->nr_values > 0 ? s->values[tk_profile__display_index(p)] : 0;
}

int64_t tk_profile__total(const struct tk_profile *p);

#endif /* __TK_PROFILE_INT_H */
