// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The kernel's BTF, looked for where libbpf 1.1 looks (btf__load_vmlinux_btf):
 * the kernel's own in sysfs, then vmlinux files on disk. A file that is there
 * but unreadable, empty or not BTF does not count, as it does not for libbpf;
 * the bpf.btf entry says what was tried and how each place failed. The
 * kernel's own BTF is what tp_btf and fentry programs attach by; a file on disk
 * serves CO-RE relocation only.
 *
 * The files on disk are looked for beside sys_root: under its parent directory
 * ("/" for "/sys"), so that a fixture tree holds them too.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/btf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "caps/caps_int.h"
#include "core/fsutil.h"
#include "core/kfeat.h"

#define SYS_BTF "kernel/btf/vmlinux"

/* libbpf 1.1.2's places after sysfs (src/btf.c), in its order; %1$s is the release */
static const char *const disk_btf[] = {
	"boot/vmlinux-%1$s",
	"lib/modules/%1$s/vmlinux-%1$s",
	"lib/modules/%1$s/build/vmlinux",
	"usr/lib/modules/%1$s/kernel/vmlinux",
	"usr/lib/debug/boot/vmlinux-%1$s",
	"usr/lib/debug/boot/vmlinux-%1$s.debug",
	"usr/lib/debug/lib/modules/%1$s/vmlinux",
};

/* the same, for people (no word longer than the text report's 65 columns of reason) */
#define DISK_BTF_NAMES                                                                   \
	"/boot/vmlinux-KVER, /lib/modules/KVER/{vmlinux-KVER,build/vmlinux}, "                \
	"/usr/lib/modules/KVER/kernel/vmlinux, /usr/lib/debug/boot/vmlinux-KVER[.debug], "   \
	"/usr/lib/debug/lib/modules/KVER/vmlinux"

enum btf_state { BTF_OK, BTF_ABSENT, BTF_UNREADABLE, BTF_EMPTY, BTF_INVALID };

/* Raw BTF whose sections lie within the file (linux/btf.h): the check without a parse. */
static int check_header(const char *path)
{
	struct btf_header h;
	struct stat st;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h))
		err = -EINVAL;
	else if (h.magic != BTF_MAGIC || h.version != BTF_VERSION || h.hdr_len < sizeof(h))
		err = -EINVAL;
	else if ((uint64_t)h.hdr_len + h.type_off + h.type_len > (uint64_t)st.st_size ||
		 (uint64_t)h.hdr_len + h.str_off + h.str_len > (uint64_t)st.st_size)
		err = -EINVAL;
	close(fd);
	return err;
}

/*
 * Is @path BTF, as libbpf takes it (readable, then btf__parse)? With @parse the
 * parsed BTF goes to *@btf; without, only a raw file's header is checked.
 * The running kernel's own file is not parsed again: the BTF kfeat parsed for
 * this process (its first place is the same file) is shared, *@shared set.
 */
static enum btf_state try_btf(const char *path, bool parse, struct btf **btf, int *err,
			      bool *shared)
{
	struct stat st;
	struct btf *b;

	*err = 0;
	if (stat(path, &st)) {
		*err = -errno;
		return errno == ENOENT || errno == ENOTDIR ? BTF_ABSENT : BTF_UNREADABLE;
	}
	if (faccessat(AT_FDCWD, path, R_OK, AT_EACCESS)) {
		*err = -errno;
		return BTF_UNREADABLE;
	}
	if (S_ISREG(st.st_mode) && st.st_size == 0)
		return BTF_EMPTY;
	if (!parse || !strcmp(path, "/" "sys/" SYS_BTF)) {
		*err = check_header(path);
		if (*err || !parse)
			return *err ? BTF_INVALID : BTF_OK;
		/* a header that holds in sysfs: libbpf's first place, where kfeat's parse stops */
		b = tk_kfeat__btf_get();
		if (b) {
			*btf = b;
			*shared = true;
			return BTF_OK;
		}
	}
	b = btf__parse(path, NULL);
	if (!b) {
		*err = errno ? -errno : -EINVAL;
		return BTF_INVALID;
	}
	*btf = b;
	return BTF_OK;
}

/* How @state failed, for people: "is empty", "is unreadable (Permission denied)" */
static void state_words(char *buf, size_t size, enum btf_state state, int err)
{
	char msg[96];

	/* libbpf's own codes too: "Invalid BPF object format" (-LIBBPF_ERRNO__FORMAT) */
	libbpf_strerror(err, msg, sizeof(msg));
	switch (state) {
	case BTF_UNREADABLE:
		snprintf(buf, size, "is unreadable (%s)", msg);
		break;
	case BTF_EMPTY:
		snprintf(buf, size, "is empty");
		break;
	case BTF_INVALID:
		snprintf(buf, size, "holds no BTF libbpf can parse (%s)", msg);
		break;
	default:
		snprintf(buf, size, "is absent");
		break;
	}
}

/* sys_root's parent directory: where /boot, /lib/modules and /usr/lib are. */
static void disk_root(const char *sys, char *buf, size_t size)
{
	size_t n;

	snprintf(buf, size, "%s", sys);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	while (n > 0 && buf[n - 1] != '/')
		buf[--n] = '\0';
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	if (!n)
		snprintf(buf, size, ".");
}

/*
 * libbpf's places on disk, in order: the first that holds BTF into s->btf_path
 * (and s->btf, parsed), or false; how the ones that exist failed into @tried.
 */
static bool find_on_disk(struct snap *s, const char *release, char *tried, size_t size)
{
	char root[4096], rel[512], words[128];
	struct btf *btf = NULL;
	size_t i, off = 0;
	enum btf_state st;
	int err;

	tried[0] = '\0';
	disk_root(s->sys, root, sizeof(root));
	for (i = 0; i < sizeof(disk_btf) / sizeof(disk_btf[0]); i++) {
		snprintf(rel, sizeof(rel), disk_btf[i], release);
		if (tk_path_join(s->btf_path, sizeof(s->btf_path), root, rel))
			continue;
		st = try_btf(s->btf_path, true, &btf, &err, &s->btf_shared);
		if (st == BTF_OK) {
			if (s->cpu_only || s->alloc_only)
				btf__free(btf);	/* known to parse; nothing in this scope reads it */
			else
				s->btf = btf;
			return true;
		}
		if (st == BTF_ABSENT || off >= size)
			continue;
		state_words(words, sizeof(words), st, err);
		off += snprintf(tried + off, size - off, "%s/%s %s", off ? "; " : "", rel, words);
	}
	s->btf_path[0] = '\0';
	return false;
}

void snap_btf(struct snap *s, struct tk_caps *caps)
{
	char sys_path[4096], sysfs[640], tried[512];
	const char *release = caps->kernel_release;
	enum btf_state st;
	struct tk_cap *c;
	int err;

	if (tk_path_join(sys_path, sizeof(sys_path), s->sys, SYS_BTF))
		sys_path[0] = '\0';
	/* the CPU and allocation scopes read nothing in it: a header that holds is enough */
	st = sys_path[0] ? try_btf(sys_path, !s->cpu_only && !s->alloc_only, &s->btf, &err,
				   &s->btf_shared)
			 : BTF_ABSENT;
	if (st == BTF_OK) {
		snprintf(s->btf_path, sizeof(s->btf_path), "%s", sys_path);
		s->has_btf = s->kernel_btf = true;
		c = set(caps, TK_CAP_BTF, TK_SUPPORTED);
		VALUE(c, "%s", sys_path);
		return;
	}
	if (st == BTF_ABSENT) {
		snprintf(sysfs, sizeof(sysfs), "no %s: the kernel is built without "
			 "CONFIG_DEBUG_INFO_BTF", sys_path);
	} else {
		char words[128];

		state_words(words, sizeof(words), st, err);
		snprintf(sysfs, sizeof(sysfs), "%s %s", sys_path, words);
	}

	s->has_btf = find_on_disk(s, release, tried, sizeof(tried));
	if (s->has_btf) {
		c = set(caps, TK_CAP_BTF, TK_SUPPORTED);
		VALUE(c, "%s", s->btf_path);
		REASON(c, "%s; libbpf's CO-RE relocates against %s instead, but tp_btf and "
			  "fentry need the kernel's own BTF", sysfs, s->btf_path);
		REMEDY(c, "for tp_btf and fentry, a kernel built with CONFIG_DEBUG_INFO_BTF=y "
			  "(Debian's are)");
		return;
	}
	c = set(caps, TK_CAP_BTF, TK_UNSUPPORTED);
	VALUE(c, st == BTF_ABSENT ? "absent" : st == BTF_UNREADABLE ? "unreadable"
			  : st == BTF_EMPTY ? "empty" : "unparsable");
	if (tried[0])
		REASON(c, "%s; of the files libbpf tries next (" DISK_BTF_NAMES ", KVER %s), "
			  "%s, and the others are absent; CO-RE, tp_btf and fentry need BTF",
		       sysfs, release, tried);
	else
		REASON(c, "%s, and none of the files libbpf tries next exists (" DISK_BTF_NAMES
			  ", KVER %s); CO-RE, tp_btf and fentry need BTF", sysfs, release);
	REMEDY(c, "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian's are), or put "
		  "this kernel's BTF (a vmlinux with .BTF) in one of those files for CO-RE; perf "
		  "sampling works without it");
}
