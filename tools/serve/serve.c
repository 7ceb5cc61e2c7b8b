// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit serve: profiles on tap, in the conventions fleets already scrape.
 *
 *   /debug/pprof/profile?seconds=N   CPU, Go's net/http/pprof convention (what
 *                                    `go tool pprof URL`, Parca and Pyroscope ask)
 *   /debug/pprof/heap?pid=P&seconds=N  the allocations of one process
 *   /metrics                         Prometheus text: NUMA migrations by reason and
 *                                    node pair, tracekit's own losses and cost,
 *                                    capability states as 0/1 gauges
 *
 * It runs as root on hosts shared with users, containers and browsers that are
 * not to be trusted, so every request carries a credential (a token of --token-file,
 * or one generated at start into a root-only file), a browser's cross-site
 * request is refused whatever it carries, and what a capture may cost is
 * capped by the server, not the client. HTTP is libmicrohttpd's (Debian's
 * libmicrohttpd12), a maintained, fuzzed server library, run with a thread per
 * connection so a capture can block its connection's thread for its N
 * seconds while the others are served; serve_conn.c keeps slow clients from
 * holding the connections. Each capture is an ordinary session, opened for the
 * request and freed at its end: nothing is attached while nothing is asked.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "cli.h"
#include "serve.h"

#define TOKEN_DIR "/run/tracekit"

struct srv srv;
const char *const serve_slot_name[SLOT__COUNT] = { "cpu", "alloc" };

static const char usage_serve[] =
	"Usage: tracekit serve [OPTIONS]\n"
	"\n"
	"Serve profiles over HTTP in the conventions fleets already scrape:\n"
	"  /debug/pprof/profile?seconds=N   a CPU profile (Go's net/http/pprof: `go\n"
	"                  tool pprof http://tracekit:TOKEN@HOST:PORT/debug/pprof/profile`,\n"
	"                  Parca, Pyroscope); also pid=PID (repeatable), cgroup=DIR,\n"
	"                  hz=HZ, off_cpu=1\n"
	"  /debug/pprof/heap?pid=PID&seconds=N   the allocations of one process\n"
	"                  (mode=sampled or growth)\n"
	"  /metrics        Prometheus text: NUMA page migrations by reason and node\n"
	"                  pair, tracekit's losses and cost, capabilities as 0/1\n"
	"seconds defaults to 30. One capture per collector at a time: another gets\n"
	"429 with Retry-After. Nothing is attached while nothing is asked; /metrics\n"
	"starts counting NUMA migrations at its first scrape.\n"
	"\n"
	"Every request needs the token, as 'Authorization: Bearer TOKEN' or as the\n"
	"password of Basic authentication (any user name). Without --token-file, one\n"
	"is generated at start into /run/tracekit/serve-ADDR:PORT.token (root only;\n"
	"its path is printed). A browser's request for a page of another site is\n"
	"refused (403) whatever it carries.\n"
	"\n"
	"      --listen ADDR    ADDR:PORT, [ADDR6]:PORT, or unix:PATH (default\n"
	"                       127.0.0.1:6060); a unix socket is mode 0600, root's\n"
	"                       alone, and asks no token unless a token file is given\n"
	"      --token-file FILE  the token: the first line of FILE, a regular file of\n"
	"                       root's, mode 0600 or stricter, 16 to 511 printable\n"
	"                       characters\n"
	"      --no-auth        loopback only: no token. Every local user and container\n"
	"                       sharing this network namespace can then profile any\n"
	"                       process as root and read its stacks\n"
	"      --allow-remote   listen on an address that is not loopback\n"
	"      --max-seconds N  the longest capture a request may ask (default 60)\n"
	"      --max-hz N       the highest hz a request may ask (default 1000)\n"
	"      --allow-off-cpu  let requests ask off_cpu=1 (a cost on every context\n"
	"                       switch; refused by default)\n"
	"      --no-jit-ask     captures do not ask JVMs for their perf maps (by\n"
	"                       default a JVM sampled is asked, as its own user, as\n"
	"                       'jcmd PID Compiler.perfmap' asks; see tracekit cpu)\n"
	"      --alloc-budget PCT  a heap profile is sampled only while its measured\n"
	"                       cost stays within PCT %% of a CPU (default 2), else\n"
	"                       growth (page faults); it is ended early past it\n"
	"      --cgroup DIR     /metrics: only the migrations of tasks in this cgroup\n"
	"                       v2 directory (labelled cgroup=DIR)\n"
	"      --max-connections N  connections at once (default 16, 1 to 1024)\n"
	"      --max-per-address N  connections at once from one address (default 8)\n"
	"  -v, --verbose        log each request on stderr, and libbpf's messages\n"
	"  -h, --help           this help\n"
	"\n"
	"A connection has 10 s from its start, or its last reply, to send a request's\n"
	"headers; past the connection limits, the one that has waited longest for\n"
	"them is closed to make room. SIGINT or SIGTERM ends serve: running captures\n"
	"are stopped, their clients get 503. Exit codes: 0 served until asked to\n"
	"stop, 1 could not serve, 2 bad usage.\n";

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	if (!env.verbose)
		return;
	fputs("tracekit: serve: libmicrohttpd: ", stderr);
	vfprintf(stderr, fmt, ap);
}

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* A unix socket at @path, mode 0600; a stale one (nobody listening) is replaced. */
static int listen_unix(const char *path, char *why, size_t why_sz)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, err;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(why, why_sz, "the socket path is longer than %zu bytes",
			 sizeof(sun.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			snprintf(why, why_sz, "'%s' exists and is not a socket", path);
			return -EEXIST;
		}
		if (!connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
			close(fd);
			snprintf(why, why_sz, "'%s' is in use by another server", path);
			return -EADDRINUSE;
		}
		unlink(path);
		close(fd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
	}
	old = umask(0177);
	err = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
	umask(old);
	if (!err && listen(fd, 64))
		err = -errno;
	if (err) {
		snprintf(why, why_sz, "cannot listen on '%s': %s", path, strerror(-err));
		close(fd);
		return err;
	}
	return fd;
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" (every address); the socket, and whether it is loopback. */
static int listen_tcp(const char *addr, bool *loopback, char *where, size_t where_sz, char *why,
		      size_t why_sz)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	char host[256], port[16], shown[INET6_ADDRSTRLEN];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai = NULL;
	const char *colon;
	int fd, one = 1, err;
	long p;

	if (addr[0] == '[') {
		colon = strstr(addr, "]:");
		if (!colon) {
			snprintf(why, why_sz, "invalid address '%s' ([ADDR6]:PORT)", addr);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 1), addr + 1);
		colon++;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || strchr(addr, ':') != colon) {
			snprintf(why, why_sz, "invalid address '%s' (ADDR:PORT, [ADDR6]:PORT or "
				 "unix:PATH)", addr);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	}
	if (parse_long(colon + 1, 0, 65535, &p)) {
		snprintf(why, why_sz, "invalid port in '%s' (0 to 65535)", addr);
		return -EINVAL;
	}
	snprintf(port, sizeof(port), "%ld", p);
	err = getaddrinfo(host[0] && strcmp(host, "*") ? host : NULL, port, &hints, &ai);
	if (err) {
		snprintf(why, why_sz, "cannot resolve '%s': %s", host, gai_strerror(err));
		return -EINVAL;
	}
	*loopback = is_loopback(ai->ai_addr);
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		freeaddrinfo(ai);
		return err;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		err = -errno;
		snprintf(why, why_sz, "cannot listen on %s: %s", addr, strerror(-err));
		close(fd);
		freeaddrinfo(ai);
		return err;
	}
	freeaddrinfo(ai);
	/* the port the kernel gave (for :0) */
	if (!getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		if (ss.ss_family == AF_INET6) {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, shown,
				  sizeof(shown));
			snprintf(where, where_sz, "http://[%s]:%u", shown,
				 ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
		} else {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, shown,
				  sizeof(shown));
			snprintf(where, where_sz, "http://%s:%u", shown,
				 ntohs(((struct sockaddr_in *)&ss)->sin_port));
		}
	}
	return fd;
}

/* The token: the first line of @path, a regular file of root's that only root can read. */
static int read_token(const char *path)
{
	char buf[TK_TOKEN_MAX + 3], why[128];
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int fd;

	/* O_NONBLOCK: a FIFO put there is refused below, not waited on */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return fail(EXIT_FAILURE, "serve: cannot open the token file '%s': %s", path,
			    strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(EXIT_FAILURE, "serve: the token file '%s' is not a regular file", path);
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return fail(EXIT_FAILURE, "serve: the token file '%s' belongs to uid %u, not to "
			    "this user (%u): whoever owns it can change the token (chown it)",
			    path, (unsigned int)st.st_uid, (unsigned int)geteuid());
	}
	if (st.st_mode & 077) {
		close(fd);
		return fail(EXIT_FAILURE, "serve: the token file '%s' can be read by others (mode "
			    "%04o): chmod 600 it", path, st.st_mode & 07777);
	}
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	len = strcspn(buf, "\n");
	if (len && buf[len - 1] == '\r')
		len--;
	if (len > TK_TOKEN_MAX)
		return fail(EXIT_FAILURE, "serve: the first line of the token file '%s' is longer "
			    "than %d characters", path, TK_TOKEN_MAX);
	if (tk_httpauth__token_invalid(buf, len, why, sizeof(why)))
		return fail(EXIT_FAILURE, "serve: the token file '%s': %s", path, why);
	memcpy(srv.token, buf, len);
	srv.token[len] = 0;
	srv.token_len = len;
	return 0;
}

/*
 * No --token-file: a token of our own, written into TOKEN_DIR/serve-ADDR:PORT.token,
 * a file of root's that only root can read, in a directory of root's that
 * nobody else can write. The address is ours (bound), so a file of that name is
 * a stale one of an earlier serve and is replaced.
 */
static int make_token(void)
{
	char name[128], line[TK_TOKEN_MAX + 2];
	const char *addr = srv.where + strlen("http://");
	struct stat st;
	int dfd, fd, err;
	size_t len;

	err = tk_httpauth__token_new(srv.token, sizeof(srv.token));
	if (err)
		return fail(EXIT_FAILURE, "serve: cannot make a token: %s", strerror(-err));
	srv.token_len = strlen(srv.token);
	if (mkdir(TOKEN_DIR, 0700) && errno != EEXIST)
		return fail(EXIT_FAILURE, "serve: cannot create %s for the token: %s (give "
			    "--token-file)", TOKEN_DIR, strerror(errno));
	dfd = open(TOKEN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return fail(EXIT_FAILURE, "serve: cannot open %s: %s", TOKEN_DIR, strerror(errno));
	if (fstat(dfd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(dfd);
		return fail(EXIT_FAILURE, "serve: %s is not a directory of this user's that only "
			    "it can write: the token is not written there (give --token-file)",
			    TOKEN_DIR);
	}
	snprintf(name, sizeof(name), "serve-%.100s.token", addr);
	unlinkat(dfd, name, 0);
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = errno;
		close(dfd);
		return fail(EXIT_FAILURE, "serve: cannot create %s/%s: %s", TOKEN_DIR, name,
			    strerror(err));
	}
	len = (size_t)snprintf(line, sizeof(line), "%s\n", srv.token);
	if (fchmod(fd, 0600) || write(fd, line, len) != (ssize_t)len || fstat(fd, &st)) {
		err = errno ? errno : EIO;
		close(fd);
		unlinkat(dfd, name, 0);
		close(dfd);
		return fail(EXIT_FAILURE, "serve: cannot write %s/%s: %s", TOKEN_DIR, name,
			    strerror(err));
	}
	close(fd);
	close(dfd);
	srv.token_dev = st.st_dev;
	srv.token_ino = st.st_ino;
	snprintf(srv.token_path, sizeof(srv.token_path), "%s/%s", TOKEN_DIR, name);
	return 0;
}

/* Remove the token file we made, if it is still the one we made. */
static void remove_token(void)
{
	struct stat st;

	if (srv.token_path[0] && !lstat(srv.token_path, &st) && st.st_dev == srv.token_dev &&
	    st.st_ino == srv.token_ino)
		unlink(srv.token_path);
}

static void say_listening(void)
{
	fprintf(stderr, "tracekit: serve: listening on %s%s%s%s (CPU: %s; alloc: %s)\n",
		srv.where, srv.token_path[0] ? ", token in " : "", srv.token_path,
		!srv.token_len ? (srv.no_auth ? ", NO AUTHENTICATION (--no-auth)" :
				  ", root only (unix socket 0600)") :
				 srv.token_path[0] ? "" : ", token of --token-file required",
		tk_backend__name(tk_caps__backend(srv.caps, TK_COLLECT_CPU, NULL)),
		tk_backend__name(tk_caps__backend(srv.caps, TK_COLLECT_ALLOC, NULL)));
	if (srv.token_path[0] && !srv.unix_sock)
		fprintf(stderr, "tracekit: serve: e.g. curl -H \"Authorization: Bearer $(cat %s)\" "
			"%s/metrics; go tool pprof http://tracekit:$(cat %s)@%s/debug/pprof/profile\n",
			srv.token_path, srv.where, srv.token_path, srv.where + strlen("http://"));
	if (srv.no_auth)
		fprintf(stderr, "tracekit: serve: --no-auth: every local user, and every container "
			"that shares this network namespace, can start captures as root of any "
			"process and read their stacks, command names and the kernel's addresses "
			"(browsers' cross-site requests are still refused)\n");
}

int cmd_serve(int argc, char **argv)
{
	enum { OPT_LISTEN = 256, OPT_ALLOW_REMOTE, OPT_TOKEN_FILE, OPT_NO_AUTH, OPT_CGROUP,
	       OPT_MAX_CONN, OPT_MAX_PER_ADDR, OPT_MAX_SECONDS, OPT_MAX_HZ, OPT_OFF_CPU,
	       OPT_BUDGET };
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "allow-remote", no_argument, NULL, OPT_ALLOW_REMOTE },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "no-auth", no_argument, NULL, OPT_NO_AUTH },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
		{ "max-per-address", required_argument, NULL, OPT_MAX_PER_ADDR },
		{ "max-seconds", required_argument, NULL, OPT_MAX_SECONDS },
		{ "max-hz", required_argument, NULL, OPT_MAX_HZ },
		{ "allow-off-cpu", no_argument, NULL, OPT_OFF_CPU },
		CLI_JIT_OPTIONS,
		{ "alloc-budget", required_argument, NULL, OPT_BUDGET },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct tk_caps_opts capopts = { .sz = TK_OPTS_SZ(tk_caps_opts) };
	const char *listen_addr = "127.0.0.1:6060", *token_file = NULL;
	struct outputs unused = {};
	bool allow_remote = false, per_addr_set = false;
	long v, ntop = 0;
	char why[512] = "";
	struct timespec tick = { 0, 500 * 1000 * 1000 };
	sigset_t stop_set;
	MHD_socket quiesced;
	int c, err, sig, i, ret = EXIT_FAILURE;

	memset(&srv, 0, sizeof(srv));
	srv.lfd = -1;
	srv.max_conn = 16;
	srv.max_per_addr = 8;
	srv.max_seconds = 60;
	srv.max_hz = 1000;
	srv.alloc_budget = 0.02;
	pthread_mutex_init(&srv.lock, NULL);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			listen_addr = optarg;
			break;
		case OPT_ALLOW_REMOTE:
			allow_remote = true;
			break;
		case OPT_TOKEN_FILE:
			token_file = optarg;
			break;
		case OPT_NO_AUTH:
			srv.no_auth = true;
			break;
		case OPT_CGROUP:
			srv.cgroup = optarg;
			break;
		case OPT_MAX_CONN:
			if (parse_long(optarg, 1, 1024, &v))
				return usage_error("serve", "invalid --max-connections '%s' (1 to "
						   "1024)", optarg);
			srv.max_conn = (int)v;
			break;
		case OPT_MAX_PER_ADDR:
			if (parse_long(optarg, 1, 1024, &v))
				return usage_error("serve", "invalid --max-per-address '%s' (1 to "
						   "1024)", optarg);
			srv.max_per_addr = (int)v;
			per_addr_set = true;
			break;
		case OPT_MAX_SECONDS:
			if (parse_long(optarg, 1, 3600, &v))
				return usage_error("serve", "invalid --max-seconds '%s' (1 to 3600)",
						   optarg);
			srv.max_seconds = (int)v;
			break;
		case OPT_MAX_HZ:
			if (parse_long(optarg, 1, 10000, &v))
				return usage_error("serve", "invalid --max-hz '%s' (1 to 10000)",
						   optarg);
			srv.max_hz = (int)v;
			break;
		case OPT_OFF_CPU:
			srv.allow_off_cpu = true;
			break;
		case OPT_BUDGET:
			if (parse_seconds(optarg, 0, 100, &srv.alloc_budget))
				return usage_error("serve", "invalid --alloc-budget '%s' (0 to 100 "
						   "%%)", optarg);
			srv.alloc_budget /= 100;
			break;
		default:
			if ((err = common_option("serve", c, argv, usage_serve, &unused, &ntop)) !=
			    CLI_CONTINUE)
				return err;
			break;
		}
	}
	if (optind < argc)
		return usage_error("serve", "unexpected argument '%s'", argv[optind]);
	if (srv.no_auth && token_file)
		return usage_error("serve", "--no-auth and --token-file: choose one");
	if (srv.no_auth && allow_remote)
		return usage_error("serve", "--no-auth is for loopback only: a remote listener "
				   "needs a token");
	if (!per_addr_set && srv.max_per_addr > srv.max_conn)
		srv.max_per_addr = srv.max_conn;
	if (srv.cgroup && serve_check_cgroup(srv.cgroup, why, sizeof(why)))
		return fail(EXIT_FAILURE, "serve: %s", why);
	if (token_file && (err = read_token(token_file)))
		return err;
	if (serve_mhd_open(why, sizeof(why)))
		return fail(EXIT_FAILURE, "serve: %s", why);

	if (!strncmp(listen_addr, "unix:", 5)) {
		srv.unix_sock = true;
		srv.loopback = true;
		srv.lfd = listen_unix(listen_addr + 5, why, sizeof(why));
		snprintf(srv.where, sizeof(srv.where), "%s", listen_addr);
		snprintf(srv.sock_path, sizeof(srv.sock_path), "%s", listen_addr + 5);
	} else {
		srv.lfd = listen_tcp(listen_addr, &srv.loopback, srv.where, sizeof(srv.where), why,
				     sizeof(why));
		if (srv.lfd >= 0 && !srv.loopback && (!allow_remote || srv.no_auth)) {
			close(srv.lfd);
			if (srv.no_auth)
				return usage_error("serve", "--no-auth is for loopback only: %s is "
						   "not a loopback address", listen_addr);
			return usage_error("serve", "%s is not a loopback address: anyone who "
					   "reaches it could try to profile this machine; give "
					   "--allow-remote (every request then needs the token), or "
					   "listen on loopback or a unix: socket", listen_addr);
		}
	}
	if (srv.lfd < 0) {
		if (srv.lfd == -EINVAL)
			return usage_error("serve", "%s", why);
		return fail(EXIT_FAILURE, "serve: %s", why[0] ? why : strerror(-srv.lfd));
	}
	/* a unix socket of mode 0600 is root's alone: the kernel checks who connects */
	if (!token_file && !srv.no_auth && !srv.unix_sock && (err = make_token()))
		goto out_fd;

	/* one snapshot for every capture and for /metrics' capability gauges */
	if (env.verbose)
		capopts.log = cli_log;
	err = tk_caps__take(&capopts, &srv.caps);
	if (err) {
		fail(EXIT_FAILURE, "serve: cannot take the capability snapshot: %s", strerror(-err));
		goto out;
	}

	/* the stop signals are this thread's, taken by sigtimedwait; every other thread blocks them */
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGTERM);
	sigaddset(&stop_set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
	signal(SIGPIPE, SIG_IGN);
	srv.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				 MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG,
				 0, NULL, NULL, serve_handler, NULL,
				 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				 MHD_OPTION_LISTEN_SOCKET, srv.lfd,
				 MHD_OPTION_URI_LOG_CALLBACK, serve_uri_log, NULL,
				 MHD_OPTION_NOTIFY_COMPLETED, serve_completed, NULL,
				 MHD_OPTION_NOTIFY_CONNECTION, serve_conn_notify, NULL,
				 MHD_OPTION_CONNECTION_LIMIT, serve_conn_mhd_limit(),
				 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
				 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				 MHD_OPTION_END);
	if (!srv.d) {
		fail(EXIT_FAILURE, "serve: libmicrohttpd could not start on %s", srv.where);
		goto out;
	}
	say_listening();
	for (;;) {
		sig = sigtimedwait(&stop_set, NULL, &tick);
		if (sig > 0)
			break;
		serve_conn_reap();
	}
	fprintf(stderr, "tracekit: serve: %s: stopping\n", strsignal(sig));

	/* end the running captures (their clients get 503), then the server and numa */
	atomic_store(&srv.stopping, true);
	pthread_mutex_lock(&srv.lock);
	for (i = 0; i < SLOT__COUNT; i++)
		if (srv.slot[i].s)
			tk_session__stop(srv.slot[i].s);
	if (srv.numa)
		tk_session__stop(srv.numa);
	pthread_mutex_unlock(&srv.lock);
	/*
	 * No new connections; let the stopped captures send their 503 (at most
	 * 3 s). The listening socket is then ours to close, after MHD_stop_daemon.
	 */
	quiesced = MHD_quiesce_daemon(srv.d);
	for (i = 0; i < 30; i++) {
		bool busy;

		pthread_mutex_lock(&srv.lock);
		busy = srv.slot[SLOT_CPU].busy || srv.slot[SLOT_ALLOC].busy;
		pthread_mutex_unlock(&srv.lock);
		if (!busy)
			break;
		usleep(100 * 1000);
	}
	usleep(200 * 1000);
	/* joins every connection's thread: no capture and no numa start runs after it */
	MHD_stop_daemon(srv.d);
	if (quiesced == MHD_INVALID_SOCKET)
		srv.lfd = -1;	/* MHD closed it */
	serve_numa_stop();
	ret = EXIT_SUCCESS;
out:
	tk_caps__free(srv.caps);
out_fd:
	if (srv.lfd >= 0)
		close(srv.lfd);
	if (srv.unix_sock)
		unlink(srv.sock_path);
	remove_token();
	return ret;
}
