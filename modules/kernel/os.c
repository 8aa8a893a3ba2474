/* SPDX-License-Identifier: MIT */
/*
 * kernel step: what the node runs and has installed.  /etc/os-release (which
 * package-manager family holds the kernel), the running release and its
 * sources, rpm-style version order, and the kernels in /boot and the modules
 * directories.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "fsutil.h"
#include "kernel.h"

const char *distro_name(enum distro d)
{
	switch (d) {
	case DISTRO_DEBIAN:
		return "Debian/Ubuntu";
	case DISTRO_RHEL:
		return "RHEL family";
	case DISTRO_SUSE:
		return "SLES/openSUSE";
	case DISTRO_AZL:
		return "Azure Linux";
	case DISTRO_UNKNOWN:
		break;
	}
	return "unknown";
}

/* ---- /etc/os-release ------------------------------------------------- */

/* Value of KEY= in os-release text, unquoted, into buf ("" when absent). */
static void osrel_get(const char *text, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);

	buf[0] = '\0';
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);

		if (ll > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
			const char *v = p + kl + 1;
			size_t vl = ll - kl - 1;

			if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
				v++;
				vl -= 2;
			}
			if (vl >= n)
				vl = n - 1;
			memcpy(buf, v, vl);
			buf[vl] = '\0';
			return;
		}
		p = nl ? nl + 1 : NULL;
	}
}

static enum distro distro_of_word(const char *w)
{
	static const struct { const char *id; enum distro d; } map[] = {
		{ "debian", DISTRO_DEBIAN }, { "ubuntu", DISTRO_DEBIAN },
		{ "rhel", DISTRO_RHEL }, { "centos", DISTRO_RHEL }, { "rocky", DISTRO_RHEL },
		{ "almalinux", DISTRO_RHEL }, { "fedora", DISTRO_RHEL }, { "ol", DISTRO_RHEL },
		{ "sles", DISTRO_SUSE }, { "sled", DISTRO_SUSE }, { "suse", DISTRO_SUSE },
		{ "opensuse", DISTRO_SUSE }, { "opensuse-leap", DISTRO_SUSE },
		{ "opensuse-tumbleweed", DISTRO_SUSE },
		{ "mariner", DISTRO_AZL }, { "azurelinux", DISTRO_AZL },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(w, map[i].id) == 0)
			return map[i].d;
	return DISTRO_UNKNOWN;
}

/* ID decides; ID_LIKE (space-separated) is the fallback for derivatives. */
void os_info_parse(const char *text, struct os_info *ret)
{
	char like[256], *save = NULL;

	memset(ret, 0, sizeof(*ret));
	osrel_get(text, "ID", ret->id, sizeof(ret->id));
	osrel_get(text, "PRETTY_NAME", ret->pretty, sizeof(ret->pretty));
	osrel_get(text, "ID_LIKE", like, sizeof(like));
	ret->family = distro_of_word(ret->id);
	for (char *w = strtok_r(like, " ", &save); w && ret->family == DISTRO_UNKNOWN;
	     w = strtok_r(NULL, " ", &save))
		ret->family = distro_of_word(w);
}

/* ---- kernel release and versions ------------------------------------- */

/* A release is used in paths and package names: no '/', no spaces. */
bool valid_release(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= KREL_MAX || s[0] == '.')
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr("._+~-", *p)))
			return false;
	return true;
}

/*
 * The running kernel: --kernel-release, else (fake roots only) the file
 * <root>/etc/hpcinit/kernel-release, else uname(2).
 */
int running_release(const struct ctx *c, char *buf, size_t n, const char **ret_src)
{
	struct utsname u;

	*ret_src = "uname";
	if (c->kernel_release) {
		snprintf(buf, n, "%s", c->kernel_release);
		*ret_src = "--kernel-release";
	} else if (!ctx_real_root(c) && fs_exists(c, KERNEL_RELEASE_FILE)) {
		char *text = NULL;
		int r = fs_read(c, KERNEL_RELEASE_FILE, &text, NULL);

		if (r < 0)
			return r;
		text[strcspn(text, " \t\r\n")] = '\0';
		snprintf(buf, n, "%s", text);
		free(text);
		*ret_src = KERNEL_RELEASE_FILE;
	} else {
		if (uname(&u) < 0)
			return -errno;
		snprintf(buf, n, "%s", u.release);
		*ret_src = "uname";
	}
	return valid_release(buf) ? 0 : -EINVAL;
}

/*
 * Compare kernel releases the way rpm's vercmp does: runs of digits compare
 * numerically, runs of letters as strings, anything else separates.  "~"
 * sorts before everything (pre-releases).  Good for 5.15.0-1057-azure vs
 * 5.15.0-1061-azure and 4.18.0-513.24.1.el8_9 vs 4.18.0-553.el8_10.
 */
int kver_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		while (*a && !isalnum((unsigned char)*a) && *a != '~')
			a++;
		while (*b && !isalnum((unsigned char)*b) && *b != '~')
			b++;
		if (*a == '~' || *b == '~') {
			if (*a != '~')
				return 1;
			if (*b != '~')
				return -1;
			a++;
			b++;
			continue;
		}
		if (!*a || !*b)
			return *a ? 1 : *b ? -1 : 0;
		const char *sa = a, *sb = b;
		bool num = isdigit((unsigned char)*a);

		if (num != (bool)isdigit((unsigned char)*b))
			return num ? 1 : -1;   /* a number is newer than letters */
		if (num) {
			while (*sa == '0')
				sa++;
			while (*sb == '0')
				sb++;
			a = sa;
			b = sb;
			while (isdigit((unsigned char)*a))
				a++;
			while (isdigit((unsigned char)*b))
				b++;
			if ((a - sa) != (b - sb))
				return (a - sa) > (b - sb) ? 1 : -1;
		} else {
			while (isalpha((unsigned char)*a))
				a++;
			while (isalpha((unsigned char)*b))
				b++;
		}
		size_t la = (size_t)(a - sa), lb = (size_t)(b - sb);
		int c = strncmp(sa, sb, la < lb ? la : lb);

		if (c)
			return c > 0 ? 1 : -1;
		if (la != lb)
			return la > lb ? 1 : -1;
	}
	return 0;
}
/* ---- installed kernels ------------------------------------------------ */

void add_release(struct strlist *out, const char *rel)
{
	if (valid_release(rel) && !strlist_has(out, rel))
		strlist_push(out, rel);
}

/*
 * Kernels the boot loader could pick: /boot/vmlinuz-<rel>, /lib/modules/<rel>/vmlinuz
 * (the package manager adds what its database knows: struct kernel_pm .installed).
 */
void installed_kernels(const struct ctx *c, struct strlist *out)
{
	const char *moddirs[] = { "/lib/modules", "/usr/lib/modules" };
	char *boot = ctx_path(c, "/boot");
	DIR *d = opendir(boot);
	struct dirent *e;

	free(boot);
	if (d) {
		while ((e = readdir(d)))
			if (strncmp(e->d_name, "vmlinuz-", 8) == 0 &&
			    strncmp(e->d_name + 8, "0-rescue", 8) != 0)
				add_release(out, e->d_name + 8);
		closedir(d);
	}
	for (size_t k = 0; k < 2; k++) {
		char *md = ctx_path(c, moddirs[k]);

		d = opendir(md);
		if (d) {
			while ((e = readdir(d))) {
				char *vm;

				if (e->d_name[0] == '.')
					continue;
				vm = xasprintf("%s/%s/vmlinuz", moddirs[k], e->d_name);
				if (fs_exists(c, vm))
					add_release(out, e->d_name);
				free(vm);
			}
			closedir(d);
		}
		free(md);
	}
}
