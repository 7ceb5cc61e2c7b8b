// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A session's result and its writers (include/tracekit/session.h). */
#include <errno.h>
#include <stdlib.h>

#include "core/outfile.h"
#include "core/session.h"

const struct tk_profile *tk_result__profile(const struct tk_result *r)
{
	return r ? r->profile : NULL;
}

bool tk_result__has_format(const struct tk_result *r, enum tk_format fmt)
{
	if (!r)
		return false;
	if (r->report && (fmt == TK_FORMAT_TEXT || fmt == TK_FORMAT_JSON))
		return true;
	return r->profile != NULL;
}

int tk_result__write(const struct tk_result *r, enum tk_format fmt, FILE *f, int top)
{
	if (!r || !f)
		return -EINVAL;
	if (!tk_result__has_format(r, fmt))
		return -ENOTSUP;
	if (r->report && (fmt == TK_FORMAT_TEXT || fmt == TK_FORMAT_JSON))
		return r->write_report(r->report, fmt, f, top);
	if (fmt == TK_FORMAT_TEXT)
		return tk_profile__write_text(r->profile, f, top);
	return tk_profile__write(r->profile, fmt, f);
}

int tk_result__write_file(const struct tk_result *r, const char *path, enum tk_format fmt,
			  int top)
{
	struct tk_outfile out;
	int err;

	if (!r || !path)
		return -EINVAL;
	if (!tk_result__has_format(r, fmt))
		return -ENOTSUP;
	err = tk_outfile__open(&out, path);
	if (err)
		return err;
	err = tk_result__write(r, fmt, out.f, top);
	if (err) {
		tk_outfile__abort(&out);
		return err;
	}
	return tk_outfile__commit(&out);
}

void tk_result__free(struct tk_result *r)
{
	if (!r)
		return;
	tk_profile__free(r->profile);
	if (r->report && r->free_report)
		r->free_report(r->report);
	free(r);
}
