/* SPDX-License-Identifier: MIT */
/*
 * kernel step, Debian/Ubuntu: the newer kernel apt would install
 * (kernel.updates), and whether the packages that upgrade installs ship the
 * modules of kernel.modules.
 *
 *   newest    apt-cache show --no-all-versions <the kernel metapackages
 *             dpkg has>: the newest linux-image-<rel> their candidates
 *             depend on (the index as it is: never a refresh, never a lock).
 *   modules   for a kernel not installed yet: apt-get -s install <those
 *             metapackages> says which packages the upgrade installs, and
 *             apt's Contents indices (/var/lib/apt/lists/ *_Contents-*,
 *             which apt update fetches where apt-file is installed), read
 *             through apt-helper cat-file (apt's own decompression), what
 *             they ship: a module exists for <rel> when one of them ships
 *             lib/modules/<rel>/.../<module>.ko*.  No Contents index:
 *             unknown (-ENODATA), and the kernel is judged once installed
 *             (kernel.c: its /lib/modules).
 *
 * Both answers are kept in /run/hpcinit/kernel-update, keyed on the mtimes
 * of the lists directory and the dpkg status, the running release and the
 * module list: check (every 2 minutes) asks apt again only after apt update
 * or dpkg changed something.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"
#include "kernel.h"
#include "number.h"
#include "proc.h"

#define APT_CACHE_PATH "/run/hpcinit/kernel-update"
#define APT_LISTS "/var/lib/apt/lists"
#define APT_HELPER "/usr/lib/apt/apt-helper"
#define APT_SIM_TIMEOUT_MS 30000
#define APT_SCAN_TIMEOUT_MS 40000        /* with two apt runs of 30 s, inside the step's 120 s */
#define APT_SCAN_MAX_OUT (256 * 1024)

/* apt's answer for this run (struct dpkg_db's upd). */
struct apt_upd {
	bool asked;
	int ret;                        /* newest: 0, -ENOENT, or -errno */
	struct kernel_update u;
	int contents;                   /* -ENODATA no Contents index, 0 scanned, -errno failed */
	struct strlist found;           /* "module\tpackage\tpath": shipped by what the upgrade installs */
	struct strlist elsewhere;       /* "module\tpackage": in the index, not installed by the upgrade */
};

void *apt_upd_new(void)
{
	return xcalloc(1, sizeof(struct apt_upd));
}

void apt_upd_free(void *state)
{
	struct apt_upd *a = state;

	if (!a)
		return;
	strlist_free(&a->found);
	strlist_free(&a->elsewhere);
	free(a);
}

/* apt's own options for c's root: a fake root gets Dir= and the dpkg status under it. */
static void apt_args(const struct ctx *c, const char *prog, struct strlist *av)
{
	strlist_push(av, prog);
	if (c->root && *c->root && strcmp(c->root, "/") != 0) {
		strlist_push_take(av, xasprintf("-oDir=%s/", c->root));
		strlist_push_take(av, xasprintf("-oDir::State::status=%s/var/lib/dpkg/status", c->root));
	}
	strlist_push(av, "-oDebug::NoLocking=true");
}

static const char **argv_of(const struct strlist *l)
{
	const char **v = xcalloc(l->n + 1, sizeof(*v));

	for (size_t i = 0; i < l->n; i++)
		v[i] = l->v[i];
	return v;
}

/* "Inst linux-image-6.1.0-99-amd64 (6.1.999-1 repo [amd64])" -> name and version. */
bool apt_inst_line(const char *line, char *name, size_t nn, char *ver, size_t vn)
{
	const char *p, *e;

	if (strncmp(line, "Inst ", 5) != 0)
		return false;
	p = line + 5;
	e = p + strcspn(p, " \n");
	if (e == p || (size_t)(e - p) >= nn)
		return false;
	memcpy(name, p, (size_t)(e - p));
	name[e - p] = '\0';
	ver[0] = '\0';
	p = strchr(e, '(');
	if (p && strchr(e, '\n') && p > strchr(e, '\n'))
		p = NULL;
	if (p) {
		p++;
		e = p + strcspn(p, " )\n");
		if ((size_t)(e - p) < vn) {
			memcpy(ver, p, (size_t)(e - p));
			ver[e - p] = '\0';
		}
	}
	return true;
}

/* linux-image-<rel> (or linux-image-unsigned-<rel>) -> rel, else NULL. */
static const char *image_release(const char *pkg)
{
	size_t len;

	if (strncmp(pkg, "linux-image-", 12) != 0)
		return NULL;
	pkg += 12;
	if (strncmp(pkg, "unsigned-", 9) == 0)
		pkg += 9;
	len = strlen(pkg);
	if (!isdigit((unsigned char)pkg[0]) || (len > 4 && strcmp(pkg + len - 4, "-dbg") == 0) ||
	    (len > 7 && strcmp(pkg + len - 7, "-dbgsym") == 0) || !valid_release(pkg))
		return NULL;
	return pkg;
}

/* Run apt's argv; its stdout in *ret_out.  0, or -errno with a detail in r. */
static int run_apt(struct report *r, const struct strlist *av, char **ret_out)
{
	const char **argv = argv_of(av);
	struct proc_result pr;
	int ret = proc_run(argv, NULL, NULL, APT_SIM_TIMEOUT_MS, &pr);

	free(argv);
	*ret_out = NULL;
	if (ret < 0) {
		report_detail(r, "kernel.updates: cannot run %s: %s", av->v[0], strerror(-ret));
		return ret;
	}
	if (pr.exit_code != 0) {
		const char *e = strstr(pr.err, "E: ");

		report_detail(r, "kernel.updates: %s failed (exit %d): %.*s", av->v[0], pr.exit_code,
			      (int)strcspn(e ? e : pr.err, "\n"), e ? e : pr.err);
		proc_result_free(&pr);
		return -EIO;
	}
	*ret_out = pr.out;
	pr.out = NULL;
	proc_result_free(&pr);
	return 0;
}

/* One Depends: value: the newest linux-image-<rel> it names (and its "(= version)"). */
void apt_depends_newest(const char *deps, struct kernel_update *u, bool *found)
{
	for (const char *p = deps; p && *p;) {
		char name[192], ver[96] = "";
		size_t n;
		const char *rel;

		while (*p == ' ' || *p == ',' || *p == '|')
			p++;
		n = strcspn(p, " ,|(\n");
		if (n == 0 || n >= sizeof(name)) {
			p += n + (p[n] != '\0');
			continue;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		while (*p == ' ')
			p++;
		if (*p == '(') {
			const char *q = p + 1;

			while (*q == '=' || *q == ' ' || *q == '>' || *q == '<')
				q++;
			n = strcspn(q, " )");
			if (n < sizeof(ver)) {
				memcpy(ver, q, n);
				ver[n] = '\0';
			}
			p = strchr(p, ')') ? strchr(p, ')') + 1 : p + strlen(p);
		}
		rel = image_release(name);
		if (rel && strlen(rel) < sizeof(u->rel) && (!*found || kver_cmp(rel, u->rel) > 0)) {
			memcpy(u->rel, rel, strlen(rel) + 1);
			snprintf(u->pkg, sizeof(u->pkg), "%s", name);
			snprintf(u->version, sizeof(u->version), "%s", ver);
			*found = true;
		}
		p += strcspn(p, ",|");
	}
}

/* prog (apt-cache, apt-get) with the root's options, words, then metas: its output in *out, or -errno. */
static int ask_metas(const struct ctx *c, struct report *r, const char *prog, const char *const *words,
		     const struct strlist *metas, char **out)
{
	struct strlist av = { 0 };
	int ret;

	apt_args(c, prog, &av);
	for (; *words; words++)
		strlist_push(&av, *words);
	for (size_t i = 0; i < metas->n; i++)
		strlist_push(&av, metas->v[i]);
	ret = run_apt(r, &av, out);
	strlist_free(&av);
	return ret;
}

/* apt-cache show --no-all-versions metas: the newest kernel image their candidates depend on. */
static int ask_candidates(const struct ctx *c, struct report *r, const struct strlist *metas,
			  struct kernel_update *u)
{
	static const char *const words[] = { "show", "--no-all-versions", NULL };
	bool found = false;
	char *out;
	int ret;

	ret = ask_metas(c, r, "apt-cache", words, metas, &out);
	if (ret < 0)
		return ret;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, "Depends:", 8) == 0)
			apt_depends_newest(l + 8, u, &found);
		else if (strncmp(l, "Pre-Depends:", 12) == 0)
			apt_depends_newest(l + 12, u, &found);
	}
	free(out);
	return found ? 0 : -ENOENT;
}

/* apt-get -s install metas: every package that upgrade would install. */
static int ask_inst(const struct ctx *c, struct report *r, const struct strlist *metas, struct strlist *inst)
{
	static const char *const words[] = { "-s", "-q", "install", NULL };
	char *out;
	int ret;

	ret = ask_metas(c, r, "apt-get", words, metas, &out);
	if (ret < 0)
		return ret;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char name[192], ver[96];

		if (apt_inst_line(l, name, sizeof(name), ver, sizeof(ver)))
			strlist_push(inst, name);
	}
	free(out);
	return 0;
}

/* ---- the Contents indices ------------------------------------------------ */

struct scan {
	char **argv;                    /* apt-helper cat-file <files> */
	char prefix[2][KREL_MAX + 32];  /* lib/modules/<rel>/, usr/lib/modules/<rel>/ */
	const struct kmod *mods;
	size_t n;
};

/* "mlx5_ib.ko.zst" -> its normalized name when it is a module of mods. */
static const struct kmod *scan_match(const struct scan *s, const char *path, size_t len)
{
	const char *sfx[] = { ".ko", ".ko.xz", ".ko.zst", ".ko.gz" };
	const char *base = path;

	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			base = path + i + 1;
	for (size_t k = 0; k < 4; k++) {
		size_t bl = (size_t)(path + len - base), sl = strlen(sfx[k]);

		if (bl <= sl || memcmp(base + bl - sl, sfx[k], sl) != 0)
			continue;
		for (size_t i = 0; i < s->n; i++) {
			const char *m = s->mods[i].norm;
			size_t ml = strlen(m), j;

			if (ml != bl - sl)
				continue;
			for (j = 0; j < ml && (base[j] == '-' ? '_' : base[j]) == m[j]; j++)
				;
			if (j == ml)
				return &s->mods[i];
		}
	}
	return NULL;
}

/*
 * In the engine's child: apt-helper cat-file in a grandchild, its lines
 * filtered here: only the modules asked for, as "module\tpackages\tpath\n".
 */
static void scan_child(void *arg, int fd)
{
	const struct scan *s = arg;
	static char path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", lc[] = "LC_ALL=C";
	char *envp[] = { path, lc, NULL };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int p[2], st;
	pid_t pid;
	FILE *f;

	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		close(fd);
		execve(s->argv[0], s->argv, envp);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0 || !(f = fdopen(p[0], "r")))
		return;
	while ((len = getline(&line, &cap, f)) > 0) {
		const struct kmod *m;
		size_t plen, k;
		char *pk;

		for (k = 0; k < 2 && strncmp(line, s->prefix[k], strlen(s->prefix[k])) != 0; k++)
			;
		if (k == 2)
			continue;
		/* "path<blanks>section/pkg,section/pkg2": the path ends at the last blank run. */
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == ' '))
			line[--len] = '\0';
		pk = strrchr(line, ' ');
		if (!pk || strrchr(line, '\t') > pk)
			pk = strrchr(line, '\t');
		if (!pk)
			continue;
		plen = (size_t)(pk - line);
		while (plen && (line[plen - 1] == ' ' || line[plen - 1] == '\t'))
			plen--;
		m = scan_match(s, line, plen);
		if (m) {
			char *out = xasprintf("%s\t%s\t/%.*s\n", m->norm, pk + 1, (int)plen, line);

			(void)fd_write_all(fd, out, strlen(out));
			free(out);
		}
	}
	free(line);
	fclose(f);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		(void)fd_write_all(fd, "!failed\n", 8);
}

/* The Contents indices apt keeps (host paths), or none. */
static void contents_files(const struct ctx *c, struct strlist *out)
{
	char *dir = ctx_path(c, APT_LISTS);
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && strstr(e->d_name, "_Contents-"))
			strlist_push_take(out, xasprintf("%s/%s", dir, e->d_name));
	if (d)
		closedir(d);
	free(dir);
}

/* Scan the Contents indices for rel's modules; sort what is found by whether the upgrade installs it. */
static int scan_contents(const struct ctx *c, struct report *r, const char *rel, const struct strlist *inst,
			 struct apt_upd *a)
{
	const struct strlist *names = &c->spec->kernel.modules;
	const struct proc_limits lim = { .timeout_ms = APT_SCAN_TIMEOUT_MS, .reap_ms = 1000 };
	struct strlist files = { 0 }, av = { 0 };
	struct proc_child ch = { 0 };
	struct kmod *mods;
	struct scan s;
	int ret;

	contents_files(c, &files);
	if (files.n == 0)
		return -ENODATA;
	strlist_push(&av, APT_HELPER);
	strlist_push(&av, "cat-file");
	for (size_t i = 0; i < files.n; i++)
		strlist_push(&av, files.v[i]);
	mods = kmods_new(names);
	s.argv = xcalloc(av.n + 1, sizeof(*s.argv));
	for (size_t i = 0; i < av.n; i++)
		s.argv[i] = av.v[i];
	snprintf(s.prefix[0], sizeof(s.prefix[0]), "lib/modules/%s/", rel);
	snprintf(s.prefix[1], sizeof(s.prefix[1]), "usr/lib/modules/%s/", rel);
	s.mods = mods;
	s.n = names->n;
	ch.max_out = APT_SCAN_MAX_OUT;
	ret = proc_start_fn(&ch, scan_child, &s, 0);
	if (ret == 0) {
		proc_wait(&ch, 1, &lim);
		if (ch.timed_out || !ch.eof)
			ret = -ETIMEDOUT;
		else if (strstr(sb_str(&ch.out), "!failed\n"))
			ret = -EIO;
	}
	for (char *save = NULL, *l = ret == 0 ? strtok_r(ch.out.buf, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *pkgs = strchr(l, '\t'), *path = pkgs ? strchr(pkgs + 1, '\t') : NULL;

		if (!path)
			continue;
		*pkgs++ = '\0';
		*path++ = '\0';
		for (char *s2 = NULL, *p = strtok_r(pkgs, ",", &s2); p; p = strtok_r(NULL, ",", &s2)) {
			const char *name = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;

			if (strlist_has(inst, name))
				strlist_push_take(&a->found, xasprintf("%s\t%s\t%s", l, name, path));
			else
				strlist_push_take(&a->elsewhere, xasprintf("%s\t%s", l, name));
		}
	}
	if (ret < 0)
		report_detail(r, "kernel.updates: reading apt's Contents indices with %s cat-file: %s",
			      APT_HELPER, strerror(-ret));
	proc_child_free(&ch);
	free(s.argv);
	kmods_free(mods, names->n);
	strlist_free(&av);
	strlist_free(&files);
	return ret;
}

/* ---- the cache ------------------------------------------------------------ */

static long long mtime_ns(const struct ctx *c, const char *path)
{
	char *hp = ctx_path(c, path);
	struct stat st;
	long long t = -1;

	if (stat(hp, &st) == 0)
		t = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	free(hp);
	return t;
}

static char *cache_key(const struct ctx *c, const char *running, const struct strlist *metas)
{
	struct strbuf sb = STRBUF_INIT;
	const struct strlist *names = &c->spec->kernel.modules;

	sb_printf(&sb, "%lld %lld %s", mtime_ns(c, APT_LISTS), mtime_ns(c, "/var/lib/dpkg/status"), running);
	for (size_t i = 0; i < metas->n; i++)
		sb_printf(&sb, " %s", metas->v[i]);
	sb_append(&sb, " |");
	for (size_t i = 0; i < names->n; i++)
		sb_printf(&sb, " %s", names->v[i]);
	return sb_steal(&sb);
}

/* The cached answer when its key is this one: true, *a filled. */
static bool cache_load(const struct ctx *c, const char *key, struct apt_upd *a)
{
	char *text = NULL, *save = NULL;
	bool ok = false;

	if (fs_read(c, APT_CACHE_PATH, &text, NULL) < 0)
		return false;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(l, ' ');

		if (!v || l[0] == '#')
			continue;
		*v++ = '\0';
		if (strcmp(l, "key") == 0) {
			ok = strcmp(v, key) == 0;
		} else if (!ok) {
			break;
		} else if (strcmp(l, "none") == 0) {
			a->ret = -ENOENT;
		} else if (strcmp(l, "newest") == 0) {
			const char *q = v;

			if (!num_word_field(&q, a->u.rel, sizeof(a->u.rel)) ||
			    !num_word_field(&q, a->u.pkg, sizeof(a->u.pkg)) || !valid_release(a->u.rel))
				ok = false;
			else
				(void)num_word_field(&q, a->u.version, sizeof(a->u.version));
			if (strcmp(a->u.version, "-") == 0)
				a->u.version[0] = '\0';
			a->ret = 0;
		} else if (strcmp(l, "contents") == 0) {
			a->contents = strcmp(v, "none") == 0 ? -ENODATA : strcmp(v, "scanned") == 0 ? 0 :
				      strcmp(v, "unscanned") == 0 ? 1 : -EIO;
		} else if (strcmp(l, "found") == 0) {
			strlist_push(&a->found, v);
		} else if (strcmp(l, "elsewhere") == 0) {
			strlist_push(&a->elsewhere, v);
		}
	}
	free(text);
	if (!ok) {
		strlist_free(&a->found);
		strlist_free(&a->elsewhere);
	}
	return ok;
}

/* /run/hpcinit is hpcinit's own: check keeps its answer there too (plan writes nothing). */
static void cache_store(const struct ctx *c, const char *key, const struct apt_upd *a)
{
	struct strbuf sb = STRBUF_INIT;
	struct report scratch;
	struct ctx w = *c;

	/* A deadline is no answer; apt's own failure (a broken dependency) is one, until apt or dpkg change. */
	if (c->mode == RUN_PLAN || (a->ret < 0 && a->ret != -ENOENT) || a->contents == -ETIMEDOUT)
		return;
	sb_printf(&sb, "# hpcinit kernel step: what apt would install (kernel.updates); asked again when the key changes\n"
		  "key %s\n", key);
	if (a->ret == 0)
		sb_printf(&sb, "newest %s %s %s\n", a->u.rel, a->u.pkg, a->u.version[0] ? a->u.version : "-");
	else
		sb_append(&sb, "none -\n");
	sb_printf(&sb, "contents %s\n", a->contents == -ENODATA ? "none" : a->contents == 0 ? "scanned" :
		  a->contents == 1 ? "unscanned" : "failed");
	for (size_t i = 0; i < a->found.n; i++)
		sb_printf(&sb, "found %s\n", a->found.v[i]);
	for (size_t i = 0; i < a->elsewhere.n; i++)
		sb_printf(&sb, "elsewhere %s\n", a->elsewhere.v[i]);
	w.mode = RUN_APPLY;
	report_init(&scratch);
	if (fs_mkdir_p(&w, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write(&w, &scratch, APT_CACHE_PATH, sb.buf, sb.len, 0644, 0, 0);
	report_free(&scratch);
	sb_free(&sb);
}

/* ---- the hooks' bodies (pm_apt.c) ------------------------------------------ */

int apt_newest(struct ctx *c, struct report *r, const char *running, const struct strlist *metas,
	       bool (*installed)(const char *rel, const void *arg), const void *inst_arg, void *state,
	       struct kernel_update *ret)
{
	struct apt_upd *a = state;
	struct strlist inst = { 0 };
	char *key;

	if (a->asked)
		goto answer;
	a->asked = true;
	a->contents = 1;                /* not scanned */
	if (metas->n == 0) {
		a->ret = -ENOENT;
		report_detail(r, "kernel.updates: no kernel metapackage installed (like linux-image-amd64, "
			      "linux-azure): nothing brings a newer kernel in");
		goto answer;
	}
	key = cache_key(c, running, metas);
	if (cache_load(c, key, a)) {
		free(key);
		goto answer;
	}
	a->ret = ask_candidates(c, r, metas, &a->u);
	/* Only a kernel newer than the running one, not on disk yet, needs the file lists. */
	if (a->ret == 0 && kver_cmp(a->u.rel, running) > 0 && c->spec->kernel.modules.n &&
	    !installed(a->u.rel, inst_arg)) {
		int ri = ask_inst(c, r, metas, &inst);

		a->contents = ri < 0 ? ri : scan_contents(c, r, a->u.rel, &inst, a);
	}
	cache_store(c, key, a);
	free(key);
	strlist_free(&inst);
answer:
	if (a->ret == 0)
		*ret = a->u;
	return a->ret;
}

int apt_update_modules(struct ctx *c, struct report *r, const struct kernel_update *u, void *state,
		       struct kmod *mods, size_t n)
{
	struct apt_upd *a = state;

	if (!a || !a->asked || a->ret < 0 || strcmp(a->u.rel, u->rel) != 0 || a->contents == 1)
		return -EOPNOTSUPP;
	if (a->contents == -ENODATA) {
		report_detail(r, "kernel.updates: apt has no Contents index in %s (apt-file's configuration has "
			      "apt update fetch them): which modules %s ships is known once it is installed",
			      APT_LISTS, u->pkg);
		return -ENODATA;
	}
	if (a->contents < 0)
		return a->contents;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < a->found.n && !mods[i].path; k++) {
			const char *f = a->found.v[k], *t1 = strchr(f, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;

			if (t2 && (size_t)(t1 - f) == strlen(mods[i].norm) && strncmp(f, mods[i].norm, (size_t)(t1 - f)) == 0)
				mods[i].path = xasprintf("%.*s: %s", (int)(t2 - t1 - 1), t1 + 1, t2 + 1);
		}
		for (size_t k = 0; k < a->elsewhere.n && !mods[i].path && !mods[i].other; k++) {
			const char *f = a->elsewhere.v[k], *t1 = strchr(f, '\t');

			if (t1 && (size_t)(t1 - f) == strlen(mods[i].norm) && strncmp(f, mods[i].norm, (size_t)(t1 - f)) == 0)
				mods[i].other = xstrdup(t1 + 1);
		}
	}
	return 0;
}
