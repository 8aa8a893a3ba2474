/* SPDX-License-Identifier: MIT */
/*
 * The users' key pairs (~user/.ssh/id_<type>{,.pub}), below the ssh step
 * that installs them and discovery that publishes them.  A missing pair is
 * made by the helper (hpcinit-ssh keygen, libssh) and written here; an
 * existing private key is never replaced, and the
 * public half is read from it (OpenSSH format: without the helper).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "mounts.h"
#include "sshkey.h"
#include "userkeys.h"

static const char *key_file(enum key_type t)
{
	switch (t) {
	case KEY_ECDSA:
		return "id_ecdsa";
	case KEY_RSA:
		return "id_rsa";
	case KEY_ED25519:
		break;
	}
	return "id_ed25519";
}

int ssh_user_open(const struct ctx *c, struct report *r, const char *name, const char *file,
		  struct ssh_user *ret)
{
	char *what;
	bool as_user;
	int r2;

	memset(ret, 0, sizeof(*ret));
	r2 = fs_lookup_user(c, name, &ret->uid, &ret->gid, &ret->home);
	if (r2 < 0) {
		report_detail(r, "user %s: not found %s; create the account first "
			      "(cloud-init users:, the directory) or remove it from ssh.users", name,
			      ctx_real_root(c) ? "through NSS (getpwnam)" : "in /etc/passwd");
		return r2;
	}
	ret->sshdir = xasprintf("%s/.ssh", strcmp(ret->home, "/") == 0 ? "" : ret->home);
	ret->path = xasprintf("%s/%s", ret->sshdir, file);
	what = xasprintf("user %s's home", name);
	r2 = mounts_require(c, r, what, ret->home);
	free(what);
	if (r2 < 0)
		return r2;
	/*
	 * As the user when the home is theirs: on an NFS home exported with
	 * root_squash (a 0700 home, Debian's default), root cannot even look
	 * into it; the user can.
	 */
	as_user = sshkey_fsid_user(c, ret->home, ret->uid, ret->gid);
	r2 = sshkey_check_path(c, r, ret->sshdir, true, ret->uid);
	if (r2 == 0)
		r2 = sshkey_check_path(c, r, ret->path, false, ret->uid);
	sshkey_fsid_restore(as_user);
	return r2;
}

void ssh_user_close(struct ssh_user *u)
{
	free(u->home);
	free(u->sshdir);
	free(u->path);
	memset(u, 0, sizeof(*u));
}

/* Make a pair with the helper and write the private half; its public half in *ret_canon. */
static int make_pair(struct ctx *c, struct report *r, const char *user, const char *priv,
		     enum key_type type, uid_t uid, gid_t gid, char **ret_canon)
{
	char *privtxt = NULL, err[256] = "";
	int ret;

	ret = sshkey_generate(type, ret_canon, &privtxt, err, sizeof(err));
	if (ret < 0) {
		report_detail(r, "user %s: key generation failed: %s", user, err);
		return ret;
	}
	ret = fs_write(c, r, priv, privtxt, strlen(privtxt), 0600, uid, gid);
	explicit_bzero(privtxt, strlen(privtxt));
	free(privtxt);
	if (ret < 0) {
		free(*ret_canon);
		*ret_canon = NULL;
	}
	return ret;
}

int ssh_user_key(struct ctx *c, struct report *r, const char *user, enum key_type type,
		 char **ret_pub)
{
	char *pub = NULL, *canon = NULL, *line = NULL;
	const char *priv;
	struct ssh_user u;
	bool as_user = false;
	int ret;

	ret = ssh_user_open(c, r, user, key_file(type), &u);
	if (ret < 0)
		goto out;
	priv = u.path;
	pub = xasprintf("%s.pub", priv);
	if (!fs_exists(c, u.home)) {
		/* Creating it here would leave a root-owned home (and defeat pam_mkhomedir). */
		report_detail(r, "user %s: home directory %s does not exist; create it "
			      "(useradd -m, cloud-init users:) before hpcinit runs", user, u.home);
		ret = -ENOENT;
		goto out;
	}
	as_user = sshkey_fsid_user(c, u.home, u.uid, u.gid);
	ret = fs_mkdir_p(c, r, u.sshdir, 0700, u.uid, u.gid);
	if (ret < 0)
		goto out;

	if (fs_exists(c, priv)) {
		/* Never overwrite a key the user has: derive the public half from it. */
		char *text = NULL;
		size_t len = 0;

		ret = fs_read(c, priv, &text, &len);
		if (ret == 0)
			ret = sshkey_public_of_private(text, len, &canon);
		if (text)
			explicit_bzero(text, len);
		free(text);
		if (ret < 0) {
			report_detail(r, "%s: existing private key cannot be read (passphrase or "
				      "unsupported format); leaving it alone", priv);
			ret = -EINVAL;
			goto out;
		}
	} else if (!ctx_may_write(c)) {
		report_changed(r, priv);
		report_raise(r, ST_CHANGED);
		report_detail(r, "%s: missing; apply generates a %s key pair", priv, key_file(type) + 3);
		ret = -ENOENT;
		goto out;
	} else {
		ret = make_pair(c, r, user, priv, type, u.uid, u.gid, &canon);
		if (ret < 0)
			goto out;
	}
	line = xasprintf("%s %s@hpcinit\n", canon, user);
	/* The .pub file is derived data: keep it matching the private key. */
	ret = fs_write(c, r, pub, line, strlen(line), 0644, u.uid, u.gid);
	if (ret < 0)
		goto out;
	line[strlen(line) - 1] = '\0';
	*ret_pub = line;
	line = NULL;
	ret = 0;
out:
	sshkey_fsid_restore(as_user);
	free(canon);
	free(line);
	free(pub);
	ssh_user_close(&u);
	return ret;
}
