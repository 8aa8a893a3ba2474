/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "sshkey.h"

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

char *sshkey_canonical(const char *line)
{
	const char *p = line, *t, *b;
	size_t tl, bl;

	while (*p == ' ' || *p == '\t')
		p++;
	t = p;
	while (*p && *p != ' ' && *p != '\t' && *p != '\n')
		p++;
	tl = (size_t)(p - t);
	while (*p == ' ' || *p == '\t')
		p++;
	b = p;
	while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
		p++;
	bl = (size_t)(p - b);
	if (tl < 7 || bl < 16 || !(strncmp(t, "ssh-", 4) == 0 || strncmp(t, "ecdsa-", 6) == 0 ||
				   strncmp(t, "sk-", 3) == 0))
		return NULL;
	for (const char *q = b; q < b + bl; q++)
		if (!((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
		      (*q >= '0' && *q <= '9') || *q == '+' || *q == '/' || *q == '='))
			return NULL;
	for (const char *q = t; q < t + tl; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-' ||
		      *q == '@' || *q == '.'))
			return NULL;
	return xasprintf("%.*s %.*s", (int)tl, t, (int)bl, b);
}

int sshkey_host_pubkeys(const struct ctx *c, struct strlist *ret)
{
	char *dir = ctx_path(c, "/etc/ssh");
	DIR *d = opendir(dir);
	struct dirent *de;
	struct strlist names = { 0 };

	free(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (fnmatch("ssh_host_*_key.pub", de->d_name, 0) == 0)
			strlist_push(&names, de->d_name);
	closedir(d);
	/* Stable order: sort names. */
	for (size_t i = 1; i < names.n; i++)
		for (size_t j = i; j > 0 && strcmp(names.v[j - 1], names.v[j]) > 0; j--) {
			char *t = names.v[j];

			names.v[j] = names.v[j - 1];
			names.v[j - 1] = t;
		}
	for (size_t i = 0; i < names.n; i++) {
		char *path = xasprintf("/etc/ssh/%s", names.v[i]);
		char *text = NULL, *canon;

		if (fs_read(c, path, &text, NULL) == 0 && (canon = sshkey_canonical(text))) {
			strlist_push(ret, canon);
			free(canon);
		}
		free(text);
		free(path);
	}
	strlist_free(&names);
	return 0;
}

int sshkey_check_path(const struct ctx *c, struct report *r, const char *path,
		      bool want_dir, uid_t uid)
{
	char *hp = ctx_path(c, path);
	const char *what = want_dir ? "directory" : "file";
	struct stat st;
	int ret = 0;

	if (lstat(hp, &st) < 0) {
		ret = errno == ENOENT ? 0 : -errno;
		if (ret < 0)
			report_detail(r, "%s: %s", path, strerror(-ret));
	} else if (S_ISLNK(st.st_mode)) {
		report_detail(r, "%s: is a symbolic link; refusing to follow it "
			      "(replace it with a real %s owned by the user)", path, what);
		ret = -ELOOP;
	} else if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		report_detail(r, "%s: is not a %s; move it away", path, what);
		ret = -EEXIST;
	} else if (st.st_uid != uid) {
		report_detail(r, "%s: owned by uid %u, not by its user (uid %u); sshd's StrictModes "
			      "rejects it: chown it to the user after checking its content",
			      path, (unsigned)st.st_uid, (unsigned)uid);
		ret = -EPERM;
	} else if (st.st_mode & 022) {
		report_detail(r, "%s: writable by group or others (mode %04o); sshd's StrictModes "
			      "rejects it and its content cannot be trusted: check it, then chmod go-w",
			      path, (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
	}
	free(hp);
	return ret;
}

bool sshkey_fsid_user(const struct ctx *c, const char *home, uid_t uid, gid_t gid)
{
	char *hh, *hs;
	struct stat st;
	bool owns;

	if (geteuid() != 0 || uid == 0)
		return false;
	hh = ctx_path(c, home);
	hs = xasprintf("%s/.ssh", hh);
	owns = (lstat(hh, &st) == 0 && st.st_uid == uid) || (lstat(hs, &st) == 0 && st.st_uid == uid);
	free(hh);
	free(hs);
	if (!owns)
		return false;
	/* Group first: after setfsuid the capability to pick any gid is gone. */
	setfsgid(gid);
	setfsuid(uid);
	return true;
}

void sshkey_fsid_restore(bool switched)
{
	if (!switched)
		return;
	setfsuid(0);
	setfsgid(0);
}

int sshkey_ensure_user(struct ctx *c, struct report *r, const char *user,
		       enum key_type type, char **ret_pub)
{
	enum ssh_keytypes_e kt = type == KEY_RSA ? SSH_KEYTYPE_RSA :
				 type == KEY_ECDSA ? SSH_KEYTYPE_ECDSA_P256 : SSH_KEYTYPE_ED25519;
	int bits = type == KEY_RSA ? 3072 : type == KEY_ECDSA ? 256 : 0;
	char *home = NULL, *sshdir = NULL, *priv = NULL, *pub = NULL, *text = NULL;
	char *b64 = NULL, *privtxt = NULL, *line = NULL;
	ssh_key key = NULL;
	bool as_user = false;
	uid_t uid;
	gid_t gid;
	int ret;

	ret = fs_lookup_user(c, user, &uid, &gid, &home);
	if (ret < 0) {
		report_detail(r, "user %s: not found in /etc/passwd; create the account first "
			      "(cloud-init users:) or remove it from ssh.users", user);
		return ret;
	}
	sshdir = xasprintf("%s/.ssh", strcmp(home, "/") == 0 ? "" : home);
	priv = xasprintf("%s/%s", sshdir, key_file(type));
	pub = xasprintf("%s.pub", priv);
	if (!fs_exists(c, home)) {
		/* Creating it here would leave a root-owned home (and defeat pam_mkhomedir). */
		report_detail(r, "user %s: home directory %s does not exist; create it "
			      "(useradd -m, cloud-init users:) before hpcinit runs", user, home);
		ret = -ENOENT;
		goto out;
	}
	ret = sshkey_check_path(c, r, sshdir, true, uid);
	if (ret == 0)
		ret = sshkey_check_path(c, r, priv, false, uid);
	if (ret < 0)
		goto out;
	as_user = sshkey_fsid_user(c, home, uid, gid);
	ret = fs_mkdir_p(c, r, sshdir, 0700, uid, gid);
	if (ret < 0)
		goto out;

	if (fs_exists(c, priv)) {
		/* Never overwrite a key the user has: derive the public half from it. */
		char *hp = ctx_path(c, priv);

		ret = ssh_pki_import_privkey_file(hp, NULL, NULL, NULL, &key);
		free(hp);
		if (ret != SSH_OK) {
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
		if (ssh_pki_generate(kt, bits, &key) != SSH_OK) {
			report_detail(r, "user %s: key generation failed", user);
			ret = -EIO;
			goto out;
		}
		if (ssh_pki_export_privkey_base64(key, NULL, NULL, NULL, &privtxt) != SSH_OK) {
			report_detail(r, "user %s: private key export failed", user);
			ret = -EIO;
			goto out;
		}
		ret = fs_write(c, r, priv, privtxt, strlen(privtxt), 0600, uid, gid);
		if (ret < 0)
			goto out;
	}
	if (ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK) {
		ret = -EIO;
		goto out;
	}
	line = xasprintf("%s %s %s@hpcinit\n", ssh_key_type_to_char(ssh_key_type(key)), b64, user);
	/* The .pub file is derived data: keep it matching the private key. */
	ret = fs_write(c, r, pub, line, strlen(line), 0644, uid, gid);
	if (ret < 0)
		goto out;
	line[strlen(line) - 1] = '\0';
	*ret_pub = line;
	line = NULL;
	ret = 0;
out:
	sshkey_fsid_restore(as_user);
	if (privtxt) {
		explicit_bzero(privtxt, strlen(privtxt));
		ssh_string_free_char(privtxt);
	}
	if (b64)
		ssh_string_free_char(b64);
	ssh_key_free(key);
	free(line);
	free(text);
	free(home);
	free(sshdir);
	free(priv);
	free(pub);
	return ret;
}
