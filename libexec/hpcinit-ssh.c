/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-ssh: the libssh work of hpcinit, in its own process so that the
 * agent itself never maps libssh (and its crypto): a converged node does
 * not run this at all.  The agent starts it through proc.c (argv, no
 * shell, a deadline) and parses its output.
 *
 *   hpcinit-ssh keygen ed25519|ecdsa|rsa
 *       a new key pair: the public key ("type base64") on the first line,
 *       then the private key (OpenSSH or PEM text, as libssh writes it).
 *       The private key goes to the agent's pipe only; the agent writes it.
 *   hpcinit-ssh hostkeys [--each-type] PORT TIMEOUT_MS HOST...
 *       the host keys sshd offers, fetched by key exchange (no
 *       authentication, nothing verified): one line "HOST type base64" per
 *       key, or "HOST error ERRNO" for a host that gave none.  Without
 *       --each-type one exchange per host (the key ssh would be offered);
 *       with it, one per key type (ed25519, ecdsa, rsa).
 *
 * Exit 0 on success, 2 on usage errors, 1 when the work failed.
 */
#include "config.h"
#include "number.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libssh/libssh.h>

static int usage(void)
{
	fprintf(stderr, "usage: hpcinit-ssh keygen ed25519|ecdsa|rsa\n"
		"       hpcinit-ssh hostkeys [--each-type] PORT TIMEOUT_MS HOST...\n");
	return 2;
}

/* "type base64" of key on stdout. */
static int print_pubkey(ssh_key key, const char *prefix)
{
	char *b64 = NULL;

	if (ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK)
		return -EIO;
	printf("%s%s%s %s\n", prefix ? prefix : "", prefix ? " " : "",
	       ssh_key_type_to_char(ssh_key_type(key)), b64);
	ssh_string_free_char(b64);
	return 0;
}

static int cmd_keygen(const char *type)
{
	enum ssh_keytypes_e kt;
	int bits;
	ssh_key key = NULL;
	char *priv = NULL;
	int ret = 1;

	if (strcmp(type, "ed25519") == 0) {
		kt = SSH_KEYTYPE_ED25519;
		bits = 0;
	} else if (strcmp(type, "ecdsa") == 0) {
		kt = SSH_KEYTYPE_ECDSA_P256;
		bits = 256;
	} else if (strcmp(type, "rsa") == 0) {
		kt = SSH_KEYTYPE_RSA;
		bits = 3072;
	} else {
		return usage();
	}
	if (ssh_pki_generate(kt, bits, &key) != SSH_OK) {
		fprintf(stderr, "hpcinit-ssh: key generation failed\n");
		goto out;
	}
	if (ssh_pki_export_privkey_base64(key, NULL, NULL, NULL, &priv) != SSH_OK) {
		fprintf(stderr, "hpcinit-ssh: private key export failed\n");
		goto out;
	}
	if (print_pubkey(key, NULL) < 0) {
		fprintf(stderr, "hpcinit-ssh: public key export failed\n");
		goto out;
	}
	fputs(priv, stdout);
	if (priv[strlen(priv) - 1] != '\n')
		putchar('\n');
	ret = fflush(stdout) == 0 ? 0 : 1;
out:
	if (priv) {
		explicit_bzero(priv, strlen(priv));
		ssh_string_free_char(priv);
	}
	ssh_key_free(key);
	return ret;
}

/*
 * One key exchange with host; algos NULL lets the server and libssh agree
 * (both prefer ed25519, as ssh does).  0 and the key printed, or -errno.
 */
static int fetch_one(const char *host, unsigned port, unsigned timeout_ms, const char *algos)
{
	ssh_session s = ssh_new();
	ssh_key key = NULL;
	long sec = (long)(timeout_ms / 1000), usec = (long)(timeout_ms % 1000) * 1000;
	int no = 0, ret = -EIO;

	if (!s)
		return -ENOMEM;
	if (ssh_options_set(s, SSH_OPTIONS_HOST, host) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_PORT, &port) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &sec) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT_USEC, &usec) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, "/dev/null") < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null") < 0 ||
	    (algos && ssh_options_set(s, SSH_OPTIONS_HOSTKEYS, algos) < 0))
		goto out;
	if (ssh_connect(s) != SSH_OK) {
		ret = -ECONNREFUSED;
		goto out;
	}
	if (ssh_get_server_publickey(s, &key) == SSH_OK)
		ret = print_pubkey(key, host);
	ssh_disconnect(s);
out:
	ssh_key_free(key);
	ssh_free(s);
	return ret;
}

static int parse_uint(const char *s, unsigned max, unsigned *ret)
{
	unsigned long long v;

	if (!num_ull(s, 10, max, &v))
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

static int cmd_hostkeys(int argc, char **argv)
{
	static const char *const algos[] = {
		"ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512,rsa-sha2-256",
	};
	bool each = argc > 0 && strcmp(argv[0], "--each-type") == 0;
	unsigned port, timeout_ms;

	if (each) {
		argc--;
		argv++;
	}
	if (argc < 3 || parse_uint(argv[0], 65535, &port) < 0 ||
	    parse_uint(argv[1], 600000, &timeout_ms) < 0)
		return usage();
	for (int i = 2; i < argc; i++) {
		int got = 0, err = 0;

		if (!each) {
			err = fetch_one(argv[i], port, timeout_ms, NULL);
			got = err == 0;
		}
		for (size_t k = 0; each && k < sizeof(algos) / sizeof(algos[0]); k++) {
			int r = fetch_one(argv[i], port, timeout_ms, algos[k]);

			if (r == 0)
				got++;
			else if (!err)
				err = r;
		}
		if (!got)
			printf("%s error %d\n", argv[i], err ? -err : EIO);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2)
		return usage();
	ssh_init();
	if (strcmp(argv[1], "keygen") == 0 && argc == 3)
		ret = cmd_keygen(argv[2]);
	else if (strcmp(argv[1], "hostkeys") == 0)
		ret = cmd_hostkeys(argc - 2, argv + 2);
	else
		ret = usage();
	ssh_finalize();
	return ret;
}
