/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the peer-record parser, the only parser fed by other
 * machines.  Every input is parsed twice: without a key, and with the
 * cluster secret the seed corpus was signed with ("fuzz-secret").  A record
 * that parses must format back (record_format) into text that parses again
 * to the same node: the parser accepts nothing the writer cannot say.
 * Crashes, leaks, UB, timeouts and a failed round trip are the findings.
 * Build and run: tests/fuzz/run.sh record; make check replays the corpus.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

#define FUZZ_CLUSTER "simc"
#define FUZZ_KEY "fuzz-secret"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void round_trip(const struct peer *p, const char *key, size_t keylen)
{
	struct peer q;
	char err[256];
	char *text = record_format(p, FUZZ_CLUSTER, key, keylen);

	if (!text)
		abort();
	memset(&q, 0, sizeof(q));
	if (record_parse(text, strlen(text), FUZZ_CLUSTER, key, keylen, &q, err, sizeof(err)) != 0)
		abort();
	if (!same_str(p->hostname, q.hostname) || !same_str(p->addr, q.addr) ||
	    !same_str(p->ipoib_addr, q.ipoib_addr) || p->slots != q.slots || p->head != q.head ||
	    p->host_keys.n != q.host_keys.n || p->n_user_keys != q.n_user_keys ||
	    p->updated != q.updated || !same_str(p->users, q.users))
		abort();
	peer_clear(&q);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char key[] = FUZZ_KEY;
	const char *keys[2] = { NULL, key };
	size_t keylens[2] = { 0, sizeof(key) - 1 };

	for (int i = 0; i < 2; i++) {
		struct peer p;
		char err[256];

		memset(&p, 0, sizeof(p));
		err[0] = '\0';
		if (record_parse((const char *)data, size, FUZZ_CLUSTER, keys[i], keylens[i],
				 &p, err, sizeof(err)) == 0)
			round_trip(&p, keys[i], keylens[i]);
		else if (!err[0])
			abort();        /* every refusal says why */
		peer_clear(&p);
	}
	return 0;
}
