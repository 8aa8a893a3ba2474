/* SPDX-License-Identifier: MIT */
/*
 * gen-records: write COUNT synthetic peer records into a rendezvous
 * directory, in exactly the format hpcinit writes (record.c), for the
 * refresh benchmark and scale tests.
 *
 *   gen-records [-s SECRET_FILE] [-p PREFIX] [-n A.B] [-k KEYS] [-a AGE_S] NODES_DIR CLUSTER COUNT
 *
 * With -e KEY_PREFIX -u URL, nothing is written: stdout gets a curl config
 * (curl -K) that puts each record into etcd at KEY_PREFIX<hostname> through
 * the JSON gateway URL (.../v3/kv/put), one process for them all.
 *
 * Node i (1-based) is PREFIX<i> (default "syn") at A.B.(i/250).(i%250+1)
 * (default 10.200), 8 slots, one host key and KEYS user keys (default 1),
 * updated AGE_S seconds ago (default 0).  Files are written 0644 by the
 * caller (root), as <hostname>.rec.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "record.h"
#include "strbuf.h"

/* base64 of n bytes of p, into sb (etcd's JSON gateway takes keys and values so). */
static void b64(struct strbuf *sb, const unsigned char *p, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
		char q[4] = { t[v >> 18 & 63], t[v >> 12 & 63], i + 1 < n ? t[v >> 6 & 63] : '=', i + 2 < n ? t[v & 63] : '=' };

		sb_appendn(sb, q, 4);
	}
}

/* One put of text at key as a curl config stanza (the JSON's quotes escaped for curl's string). */
static void curl_put(const char *url, const char *key, const char *text, bool first)
{
	struct strbuf sb = STRBUF_INIT;

	if (!first)
		sb_append(&sb, "next\n");
	sb_printf(&sb, "url = \"%s\"\noutput = \"/dev/null\"\ndata = \"{\\\"key\\\":\\\"", url);
	b64(&sb, (const unsigned char *)key, strlen(key));
	sb_append(&sb, "\\\",\\\"value\\\":\\\"");
	b64(&sb, (const unsigned char *)text, strlen(text));
	sb_append(&sb, "\\\"}\"\n");
	fwrite(sb.buf, 1, sb.len, stdout);
	sb_free(&sb);
}

static unsigned long num(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > max) {
		fprintf(stderr, "gen-records: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *prefix = "syn", *net = "10.200", *secret_file = NULL, *etcd_prefix = NULL, *url = NULL;
	char *secret = NULL;
	size_t secret_len = 0;
	unsigned long count, keys = 1, age = 0;
	int opt;

	while ((opt = getopt(argc, argv, "s:p:n:k:a:e:u:")) != -1) {
		switch (opt) {
		case 's':
			secret_file = optarg;
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'n':
			net = optarg;
			break;
		case 'k':
			keys = num(optarg, "key count", RECORD_MAX_KEYS);
			break;
		case 'a':
			age = num(optarg, "age", 100UL * 365 * 86400);
			break;
		case 'e':
			etcd_prefix = optarg;
			break;
		case 'u':
			url = optarg;
			break;
		default:
			fprintf(stderr, "usage: gen-records [-s SECRET_FILE] [-p PREFIX] [-n A.B] "
				"[-k KEYS] [-a AGE_S] [-e KEY_PREFIX -u PUT_URL] NODES_DIR CLUSTER COUNT\n");
			return 2;
		}
	}
	if (argc - optind != 3 || !etcd_prefix != !url) {
		fprintf(stderr, "gen-records: NODES_DIR CLUSTER COUNT expected\n");
		return 2;
	}
	count = num(argv[optind + 2], "count", 62500);
	if (secret_file) {
		if (fs_read_host(secret_file, 4096, &secret, &secret_len) < 0) {
			fprintf(stderr, "gen-records: cannot read %s\n", secret_file);
			return 1;
		}
		while (secret_len && (secret[secret_len - 1] == '\n' || secret[secret_len - 1] == '\r'))
			secret_len--;
	}
	for (unsigned long i = 1; i <= count; i++) {
		struct peer p = { 0 };
		char *text, *path;
		int fd;

		p.hostname = xasprintf("%s%lu", prefix, i);
		p.addr = xasprintf("%s.%lu.%lu", net, i / 250, i % 250 + 1);
		p.slots = 8;
		p.version = xstrdup(PACKAGE_VERSION);
		p.boot_id = xasprintf("00000000-0000-4000-8000-%012lu", i);
		p.updated = (int64_t)time(NULL) - (int64_t)age;
		/* Distinct, well-formed (not real) keys: 32 bytes of base64 per node. */
		{
			char *k = xasprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%043lu", i);

			strlist_push(&p.host_keys, k);
			free(k);
		}
		p.n_user_keys = keys;
		p.user_keys = xcalloc(keys ? keys : 1, sizeof(*p.user_keys));
		for (unsigned long k = 0; k < keys; k++) {
			p.user_keys[k].user = xasprintf("user%lu", k);
			p.user_keys[k].key = xasprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK%042lu user%lu@hpcinit",
						       i, k);
		}
		text = record_format(&p, argv[optind + 1], secret, secret_len);
		if (text && etcd_prefix) {
			char *key = xasprintf("%s%s", etcd_prefix, p.hostname);

			curl_put(url, key, text, i == 1);
			free(key);
			free(text);
			peer_clear(&p);
			continue;
		}
		path = xasprintf("%s/%s.rec", argv[optind], p.hostname);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (!text || fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
		    close(fd) < 0) {
			fprintf(stderr, "gen-records: %s: %s\n", path, strerror(errno));
			return 1;
		}
		free(text);
		free(path);
		peer_clear(&p);
	}
	if (secret) {
		explicit_bzero(secret, secret_len);
		free(secret);
	}
	return 0;
}
