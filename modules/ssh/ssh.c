/* SPDX-License-Identifier: MIT */
/*
 * ssh: passwordless SSH between cluster nodes with host-key checking on
 * (docs/conventions.md "Trust").  Inputs are the peers discovery found; outputs:
 *
 *   ~user/.ssh/id_<type>{,.pub}     the user's key pair, made if absent
 *   ~user/.ssh/authorized_keys      a managed block per cluster: every peer's
 *                                   key for the same user, from="<network>"
 *   /etc/hpcinit/ssh_known_hosts    every peer's host keys under all its names
 *   /etc/ssh/ssh_config.d/90-hpcinit.conf
 *                                   StrictHostKeyChecking yes + that file for
 *                                   the cluster's hosts
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fsutil.h"
#include "sshkey.h"
#include "ssh.h"

#define SYS_CONF "/etc/ssh/ssh_config"

static void self_hostname(const struct ctx *c, const struct peerset *ps, char *buf, size_t len)
{
	for (size_t i = 0; ps && i < ps->n; i++)
		if (ps->v[i].self && record_hostname_valid(ps->v[i].hostname)) {
			snprintf(buf, len, "%s", ps->v[i].hostname);
			return;
		}
	if (!node_hostname(c, buf, len))
		snprintf(buf, len, "localhost");
}

static int user_converge(struct ctx *c, struct report *r, const char *user,
			 struct ssh_tally *t)
{
	const struct spec *s = c->spec;
	char *pub = NULL, *body = NULL, *old = NULL, *old_block = NULL;
	const char *ak;
	char host[256];
	struct ssh_user u;
	bool as_user;
	int ret;

	ret = ssh_user_open(c, r, user, "authorized_keys", &u);
	if (ret < 0)
		goto out;
	ak = u.path;
	ret = ssh_user_key(c, r, user, s->ssh.key_type, &pub);
	if (ret < 0 && !(ret == -ENOENT && !ctx_may_write(c) && fs_exists(c, u.home)))
		goto out;
	self_hostname(c, c->out->peers, host, sizeof(host));
	body = ak_render(s, c->out->peers, user, pub, host, r);
	as_user = sshkey_fsid_user(c, u.home, u.uid, u.gid);
	if (fs_read(c, ak, &old, NULL) == 0)
		old_block = managed_block_get(old, s->cluster.name);
	if (c->mode != RUN_PLAN)         /* plan shows the diff itself */
		ak_report_diff(c, r, ak, old_block, body);
	if (ctx_may_write(c) || fs_exists(c, u.sshdir))
		ret = fs_managed_block(c, r, ak, s->cluster.name, body, 0600, u.uid, u.gid);
	else
		ret = 0;        /* check/plan without ~/.ssh: reported by ssh_user_key */
	sshkey_fsid_restore(as_user);
	if (ret >= 0) {
		for (const char *p = body; (p = strchr(p, '\n')); p++)
			t->user_keys++;
		ret = 0;
	}
out:
	free(old);
	free(old_block);
	free(body);
	free(pub);
	ssh_user_close(&u);
	return ret;
}

/*
 * The drop-in only works when the system ssh_config includes
 * ssh_config.d before any line that sets the same options.
 */
static void check_include(struct ctx *c, struct report *r)
{
	char *text = NULL;
	bool included = false, overridden = false;

	if (fs_read(c, SYS_CONF, &text, NULL) < 0) {
		free(text);
		return;         /* no system file: the drop-in alone is not read either */
	}
	for (char *p = text; p && *p && !included;) {
		char *nl = strchr(p, '\n');
		char *w;

		if (nl)
			*nl = '\0';
		w = p + strspn(p, " \t");
		if (strncasecmp(w, "Include", 7) == 0 && strstr(w, "ssh_config.d/"))
			included = true;
		else if (strncasecmp(w, "StrictHostKeyChecking", 21) == 0 ||
			 strncasecmp(w, "GlobalKnownHostsFile", 20) == 0)
			overridden = true;
		p = nl ? nl + 1 : NULL;
	}
	if (!included) {
		report_finding(r, ST_DEGRADED, "ssh.config.no-include",
			       SYS_CONF " does not include " CONF_DIR "/*.conf, so " CONF_PATH
			       " has no effect: add \"Include " CONF_DIR "/*.conf\" at its top");
	} else if (overridden) {
		report_finding(r, ST_DEGRADED, "ssh.config.include-too-late",
			       SYS_CONF " sets StrictHostKeyChecking or GlobalKnownHostsFile before "
			       "it includes " CONF_DIR "; ssh uses the first value, so move the Include up");
	}
	free(text);
}

/* kh: want's known_hosts when already rendered (taken), else NULL. */
static int write_system_files(struct ctx *c, struct report *r, const struct khosts *want, char *kh)
{
	const struct spec *s = c->spec;

	if (!kh)
		kh = s->ssh.host_keys == HOSTKEYS_CA ? ca_kh_render(s, want) : kh_render(s, want);
	char *conf = conf_render(s, want);
	int ret = 0;

	if (!fs_exists(c, "/etc/hpcinit"))
		ret = fs_mkdir_p(c, r, "/etc/hpcinit", 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, KH_PATH, kh, strlen(kh), 0644, 0, 0);
	if (ret >= 0 && !fs_exists(c, CONF_DIR))
		ret = fs_mkdir_p(c, r, CONF_DIR, 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, CONF_PATH, conf, strlen(conf), 0644, 0, 0);
	/* Also when neither is on: what an earlier ca or hostbased spec made goes. */
	if (ret >= 0)
		ret = ca_hostbased_converge(c, r, want, kh);
	free(kh);
	free(conf);
	return ret < 0 ? ret : 0;
}

static int ssh_run(struct ctx *c, struct report *r)
{
	const struct spec *s = c->spec;
	struct khosts old = { 0 }, want = { 0 };
	struct ssh_tally t = { 0 };
	char *text = NULL, *now = NULL;
	int ret, err = 0, sys_err = 0;
	bool *ok;
	bool compare = c->mode == RUN_CHECK && s->ssh.host_keys != HOSTKEYS_CA;

	want_build(c, r, c->out->peers, &want);
	if (fs_read(c, KH_PATH, &text, NULL) == 0) {
		/*
		 * The steady state: the file is what want renders to.  Read back,
		 * it would pin the same keys under the same ids and name nobody
		 * departed, so judging against it is judging against nothing;
		 * parsing 10,000 entries only to find that was a fifth of the
		 * step.  check still reads it, for kh_compare.
		 */
		now = compare || s->ssh.host_keys == HOSTKEYS_CA ? NULL : kh_render(s, &want);
		if (!now || strcmp(now, text) != 0) {
			kh_parse(text, &old);
			free(now);
			now = NULL;
		}
	}
	/*
	 * Judged against nothing, want changes only where host_keys: scan
	 * fetches a key for a peer without one; else the text just rendered
	 * is the one to write.
	 */
	if (s->ssh.host_keys == HOSTKEYS_SCAN) {
		free(now);
		now = NULL;
	}
	want_judge(c, r, &old, &want, &t);
	if (compare)
		kh_compare(r, &old, &want);
	ret = write_system_files(c, r, &want, now);
	if (ret < 0)
		err = sys_err = ret;
	check_include(c, r);
	ok = users_converge(c, r);
	for (size_t i = 0; i < s->ssh.users.n; i++) {
		if (!ok[i]) {           /* ssh.user.unresolved says so */
			err = err ? err : -ENOENT;
			continue;
		}
		ret = user_converge(c, r, s->ssh.users.v[i], &t);
		if (ret < 0) {
			if (!err)
				err = ret;
		} else {
			t.users++;
		}
	}

	if (t.refused) {
		struct strbuf names = STRBUF_INIT;

		for (size_t i = 0; i < t.refused_hosts.n; i++)
			sb_printf(&names, "%s%s", i ? ", " : "", t.refused_hosts.v[i]);
		report_set(r, ST_FAILED, "host key changed while the node stayed up: %s; refused "
			   "(see details)", sb_str(&names));
		sb_free(&names);
	} else if (sys_err) {
		report_set(r, ST_FAILED, "the system ssh files are not in place: %s (see findings); "
			   "%zu of %zu users set up", strerror(-sys_err), t.users, s->ssh.users.n);
	} else if (err) {
		report_set(r, ST_FAILED, "%zu of %zu users set up; %s", t.users, s->ssh.users.n,
			   strerror(-err));
	} else {
		/* Degraded when a finding says so (report_finding raised the status). */
		if (s->ssh.host_keys == HOSTKEYS_CA)
			report_set(r, ST_OK, "%zu nodes, host keys trusted through the cluster's CA%s, "
				   "%zu users with %zu authorized keys", t.peers,
				   s->ssh.hostbased ? ", host-based login" : "", t.users, t.user_keys);
		else
			report_set(r, ST_OK,
				   "%zu nodes, %zu host keys pinned%s%s, %zu users with %zu authorized keys",
				   t.peers, t.host_keys, t.tofu ? " (some trusted on first use)" : "",
				   s->ssh.hostbased ? ", host-based login" : "", t.users, t.user_keys);
	}
	strlist_free(&t.refused_hosts);
	free(ok);
	khosts_free(&old);
	khosts_free(&want);
	free(text);
	return err;
}

static bool ssh_enabled(const struct spec *s)
{
	return s->ssh.present;
}

static uint64_t ssh_timeout(const struct spec *s)
{
	/* A first scan fetches one host key per peer, one after the other. */
	/* ca: the head may sign one certificate per member (ssh-keygen each). */
	/* users_wait: a directory slow at boot is waited for on top (modules/ssh/users.c). */
	return (s->ssh.host_keys == HOSTKEYS_SCAN || s->ssh.host_keys == HOSTKEYS_CA ? 10 * 60 * 1000 :
		60 * 1000) + s->ssh.users_wait_ms;
}

static const char *const ssh_needs[] = { "discovery", NULL };

const struct module ssh_module = {
	.name = "ssh",
	.enabled = ssh_enabled,
	.needs = ssh_needs,
	.timeout_ms = ssh_timeout,
	.check = ssh_run,
	.apply = ssh_run,
	.inputs = OUT_PEERS,
	/* users' homes (~/.ssh) on NFS; host_keys: ca's certs/ in the rendezvous */
	.isolate = true,
	.shares_child = true,   /* reads its peers and the spec; sshkey.c gives back the fs identity it takes */
};
