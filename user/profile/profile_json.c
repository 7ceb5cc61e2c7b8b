// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * JSON writer: one compact object,
 *   {"backend", "freq_hz", "period_ns", "time_nanos", "duration_nanos",
 *    "sample_types": [{"type", "unit"}], "losses": {NAME: COUNT},
 *    "comments": [...], "samples": TOTAL,
 *    "stacks": [{"pid", "tid", "comm", "count", "values": [...],
 *                "frames": [{"name", "module", "address", "kernel"}]}]}
 * one stack per sample, frames leaf first; "count" is the first value
 * (samples), "module" the mapping's file (null when none), "address" a hex
 * string (kernel addresses do not fit a double).
 */
#include <errno.h>
#include <stdio.h>

#include "core/json.h"
#include "profile/profile.h"
#include "profile/profile_int.h"

static const char *module_of(const struct tk_profile *p, const struct tk_location *l)
{
	if (l->mapping_id && p->mappings[l->mapping_id - 1].file &&
	    p->mappings[l->mapping_id - 1].file[0])
		return p->mappings[l->mapping_id - 1].file;
	return l->kernel ? "[kernel.kallsyms]" : NULL;
}

static void stack(struct tk_json *j, const struct tk_profile *p, const struct tk_frames *fr,
		  const struct tk_sample *s)
{
	char addr[24];
	uint32_t i;
	int v;

	tk_json__begin_object(j, NULL);
	tk_json__uint(j, "pid", s->pid);
	tk_json__uint(j, "tid", s->tid);
	tk_json__string(j, "comm", s->comm);
	if (s->thread_state)
		tk_json__string(j, "thread_state", s->thread_state);
	if (s->began_before)
		tk_json__string(j, "off_cpu_began", "before_capture");
	if (s->began_before && s->off_before_ns > 0)
		tk_json__int(j, "off_cpu_before_ns", s->off_before_ns);
	tk_json__int(j, "count", tk_sample__count(p, s));
	tk_json__begin_array(j, "values");
	for (v = 0; v < p->nr_values; v++)
		tk_json__int(j, NULL, s->values[v]);
	tk_json__end_array(j);
	tk_json__begin_array(j, "frames");
	for (i = 0; i < s->nr_locations; i++) {
		const struct tk_location *l = &p->locations[s->location_ids[i] - 1];

		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)l->address);
		tk_json__begin_object(j, NULL);
		tk_json__string(j, "name", tk_frames__at(fr, s, i)->name);
		tk_json__string(j, "module", module_of(p, l));
		tk_json__string(j, "address", addr);
		tk_json__bool(j, "kernel", l->kernel);
		tk_json__end_object(j);
	}
	tk_json__end_array(j);
	tk_json__end_object(j);
}

int tk_profile__write_json(const struct tk_profile *p, FILE *f)
{
	struct tk_frames fr;
	struct tk_json j;
	size_t i;
	int err;

	err = tk_frames__build(p, TK_FRAMES_BY_NAME, &fr);
	if (err)
		return err;
	tk_json__init(&j, f, false);
	tk_json__begin_object(&j, NULL);
	tk_json__string(&j, "backend", p->backend);
	tk_json__int(&j, "freq_hz", p->freq_hz);
	tk_json__int(&j, "period_ns", p->period);
	tk_json__int(&j, "time_nanos", p->time_nanos);
	tk_json__int(&j, "duration_nanos", p->duration_nanos);
	tk_json__begin_array(&j, "sample_types");
	for (i = 0; i < (size_t)p->nr_values; i++) {
		tk_json__begin_object(&j, NULL);
		tk_json__string(&j, "type", p->value_types[i].type);
		tk_json__string(&j, "unit", p->value_types[i].unit);
		tk_json__end_object(&j);
	}
	tk_json__end_array(&j);
	tk_json__begin_object(&j, "losses");
	for (i = 0; i < (size_t)p->nr_losses && i < TK_PROFILE_MAX_LOSSES; i++)
		tk_json__uint(&j, p->losses[i].name, p->losses[i].count);
	tk_json__end_object(&j);
	tk_json__begin_array(&j, "comments");
	for (i = 0; i < (size_t)p->nr_comments; i++)
		tk_json__string(&j, NULL, p->comments[i]);
	tk_json__end_array(&j);
	tk_json__int(&j, "samples", tk_profile__total(p));
	tk_json__begin_array(&j, "stacks");
	for (i = 0; i < p->nr_samples; i++)
		stack(&j, p, &fr, &p->samples[i]);
	tk_json__end_array(&j);
	tk_json__end_object(&j);
	err = tk_json__finish(&j);
	if (!err && (fflush(f) || ferror(f)))
		err = -EIO;
	tk_frames__free(&fr);
	return err;
}
