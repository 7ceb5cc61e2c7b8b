// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An embedder's watchdog: when a request is late, write what every thread of this
 * very process is doing, without stopping any of them. Built against the public
 * headers alone (build/examples/stacks_self). Runs without privileges: a process
 * may read its own threads' /proc files and memory (user stacks; kernel stacks
 * need CAP_SYS_ADMIN and are left out, said).
 *
 *   build/examples/stacks_self [FILE.json]    text on stdout, or JSON into FILE
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/tracekit.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* a request stuck on a lock the main thread holds */
static void *late_request(void *arg)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
	return arg;
}

int main(int argc, char **argv)
{
	struct tk_stacks_opts o = { .sz = TK_OPTS_SZ(tk_stacks_opts),
				    .backend = TK_BACKEND_PROC };
	struct tk_stacks_result *r;
	int self = getpid(), err;
	char why[256];
	pthread_t t;
	FILE *f = stdout;

	pthread_mutex_lock(&lock);
	pthread_create(&t, NULL, late_request, NULL);
	usleep(200000);		/* the request is late: see why */
	err = tk_stacks__take(&o, &self, 1, &r, why, sizeof(why));
	if (err) {
		fprintf(stderr, "stacks: %s\n", why);
		return 1;
	}
	if (argc > 1 && !(f = fopen(argv[1], "w"))) {
		perror(argv[1]);
		return 1;
	}
	err = argc > 1 ? tk_stacks_result__write_json(r, f) : tk_stacks_result__write_text(r, f);
	if (f != stdout)
		fclose(f);
	tk_stacks_result__free(r);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	return err ? 1 : 0;
}
