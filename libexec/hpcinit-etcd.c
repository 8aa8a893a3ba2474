/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-etcd: every etcd call of hpcinit, in its own process so that the
 * agent never maps libcurl or json-c (a node that does not use etcd never
 * runs this).  Its HTTP is its own on http:// endpoints, and libcurl,
 * loaded on first use, on https:// (etcd-http.c).  It talks to etcd's v3
 * JSON gateway (etcd 3.4 and 3.5: the same /v3/... calls); keys and values
 * travel base64-encoded in the JSON.
 * JSON is parsed with json-c, the library Debian's own tools use, which
 * also parses the watch stream object by object.
 *
 *   hpcinit-etcd [OPTIONS] sync KEY TTL_S [LEASE [PREFIX [EXPECT MS]]]   (the value on stdin)
 *       keep LEASE alive (or grant a new lease of TTL_S when it is gone or
 *       0), and put KEY=value under it unless etcd holds exactly that (a
 *       lease granted just now holds nothing yet: no range to ask first).
 *       Prints "lease ID", "ttl T", "put 0|1", "rev R", "date T" (etcd's
 *       clock: the HTTP Date of its last answer).  TTL_S 0: put with no
 *       lease (the ssh CA's certificates, which outlive any one lease).
 *       With PREFIX, then a line "list" and what list PREFIX prints; with
 *       EXPECT and MS, what await PREFIX EXPECT MS prints, except that a
 *       record saying "formed: true" (a member saw the cluster formed: the
 *       agent does not wait then) ends the wait as well: a node's whole
 *       apply (publish, list, wait for its peers) is one process.
 *   hpcinit-etcd [OPTIONS] list PREFIX
 *       "rev R", then per key "kv KEYLEN VALUELEN LEASE" and the key and
 *       value bytes, then a newline.
 *   hpcinit-etcd [OPTIONS] keepalive LEASE       "ttl T" (0: the lease is gone)
 *   hpcinit-etcd [OPTIONS] leave KEY [LEASE]     revoke LEASE, delete KEY
 *   hpcinit-etcd [OPTIONS] await PREFIX EXPECT MS [REV]
 *       as list, once PREFIX holds EXPECT keys or after MS: one process
 *       for a node's whole wait for its peers (a range, then a watch whose
 *       events keep the membership, keys and values: the answer needs no
 *       second range); "waited 1" first when it had to watch.  With REV
 *       (>0), stdin holds the membership at revision REV as list printed
 *       it (the caller's last list): no range at all, the watch starts
 *       after REV (a compacted REV, or stdin that does not parse: a range).
 *   hpcinit-etcd [OPTIONS] serve
 *       the calls above (not watch) one after another in this one process,
 *       each request and answer framed (lib/rendezvous/etcd-proto.h): a
 *       step's calls start one helper, not one each.
 *   hpcinit-etcd [OPTIONS] watch PREFIX [REV]
 *       runs until killed, streaming the membership under PREFIX: "reset",
 *       every key as list prints it, "synced" when it starts (and again
 *       after a reconnect or a compacted revision, when events may have been
 *       missed); then per batch of events one "kv KL VL LEASE" (a put, key
 *       and value follow) or "del KL" (a deletion, the key follows) each,
 *       and "synced".  The reader keeps the membership without listing
 *       again.  With REV (a reader that has the view at revision REV) it
 *       starts with the events after REV instead; a REV compacted away
 *       gives the whole membership as at a start.  Lines "endpoint URL: ..." on stderr say what failed.
 *
 * Options: --endpoint URL (repeat; tried in turn, the next after a
 * connection failure or a 5xx answer), --cacert FILE, --cert FILE --key
 * FILE, --auth FILE ("user:password", etcd's token auth), --timeout MS
 * (one request; default 5000), --deadline MS (the agent's deadline for
 * this run, less a margin; default ETCD_RUN_MS in lib/rendezvous/etcd-proto.h, plus the
 * wait).  An endpoint that took a request and gave no answer within the
 * timeout (a busy member) is asked again, with twice the timeout and a
 * pause with jitter, until the deadline is near.  --put always: sync puts
 * without asking for the key first (the caller knows its record changed).
 *
 * Exit 0 on success, 2 on usage errors, 1 when no endpoint answered (stderr
 * names every endpoint and what it answered), 3 when etcd refused the call.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "escape.h"
#include "etcd-client.h"
#include "number.h"

/* ---- subcommands ---- */

static bool put_always;                 /* --put always: sync puts without comparing first */

static int lease_keepalive(int64_t lease, int64_t *ret_ttl)
{
	json_object *req = json_object_new_object(), *j = NULL, *res = NULL;
	int r;

	json_object_object_add(req, "ID", i64_obj(lease));
	r = request("/v3/lease/keepalive", req, &j);
	if (r == 0) {
		/* {"result": {"ID": ..., "TTL": ...}}; no TTL: the lease is gone */
		if (!(res = jget(j, "result", json_type_object)))
			res = j;
		*ret_ttl = get_i64(res, "TTL");
	} else if (r == R_REFUSED) {
		*ret_ttl = 0;
		r = 0;
	}
	json_object_put(j);
	return r;
}

static bool serving;                    /* serve: stdin is the requests; a call's own stdin is call_in */
static const char *call_in;
static size_t call_in_len;

/* stdin, at most max bytes (a record; an await's membership); *ret NUL-terminated. */
static int read_stdin(char **ret, size_t *ret_len, size_t max)
{
	size_t n = 0, cap = 4096;
	char *p;

	if (serving) {
		n = call_in_len < max ? call_in_len : max;
		p = malloc(n + 1);
		if (!p)
			abort();
		memcpy(p, call_in, n);
		p[n] = '\0';
		*ret = p;
		*ret_len = n;
		return 0;
	}
	p = malloc(cap);
	if (!p)
		abort();
	for (;;) {
		ssize_t k;

		if (n + 1 >= cap) {
			if (cap >= max)
				break;
			cap *= 2;
			p = realloc(p, cap);
			if (!p)
				abort();
		}
		k = read(0, p + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	p[n] = '\0';
	*ret = p;
	*ret_len = n;
	return 0;
}

/*
 * What this process (serve: one step's calls) last put: a node's record is
 * put by its own node only, so a second sync of the same key under the same
 * lease with a different value (the announce after the first publish) needs
 * no range to know it differs, and a lease this process granted or kept
 * alive less than half its TTL ago needs no keepalive (etcd keeps a lease
 * its TTL from the grant; a leader change only lengthens it).  A lease
 * revoked in between (hpcinit leave takes the run lock; an admin) makes the
 * put fail: then a new lease is granted and the put made again.
 */
static struct {
	char *key, *value;
	size_t vlen;
	int64_t lease, ttl, at_ms;      /* the lease's TTL as of at_ms (mono_ms) */
} mine;

static void mine_note(const char *k, const char *value, size_t vlen, int64_t lease, int64_t ttl, bool alive)
{
	if (!mine.key || strcmp(mine.key, k)) {
		free(mine.key);
		mine.key = strdup(k);
	}
	free(mine.value);
	mine.value = malloc(vlen + 1);
	if (!mine.key || !mine.value)
		abort();
	memcpy(mine.value, value, vlen);
	mine.vlen = vlen;
	if (alive || mine.lease != lease) {
		mine.ttl = alive ? ttl : 0;
		mine.at_ms = mono_ms();
	}
	mine.lease = lease;
}

static int cmd_sync(const char *k, int64_t ttl_s, int64_t lease)
{
	json_object *req, *j = NULL, *kvs = NULL;
	int64_t ttl = 0, rev = 0, age;
	char *value = NULL;
	size_t vlen = 0;
	bool same = false, fresh = false, alive = false, mine_lease;
	int r;

	read_stdin(&value, &vlen, STDIN_MAX);
	if (ttl_s == 0)
		lease = 0;
	age = mono_ms() - mine.at_ms;
	mine_lease = lease > 0 && lease == mine.lease && mine.ttl > 0 && age < mine.ttl * 1000 / 2;
again:
	if (mine_lease) {
		ttl = mine.ttl - (age + 999) / 1000;
	} else if (lease > 0) {
		r = lease_keepalive(lease, &ttl);
		if (r < 0)
			goto out;
		alive = ttl > 0;
	}
	if (ttl <= 0 && ttl_s > 0) {
		fresh = true;
		req = json_object_new_object();
		json_object_object_add(req, "TTL", i64_obj(ttl_s));
		r = request("/v3/lease/grant", req, &j);
		if (r < 0)
			goto out;
		lease = get_i64(j, "ID");
		ttl = get_i64(j, "TTL");
		json_object_put(j);
		j = NULL;
		if (lease <= 0) {
			fprintf(stderr, "hpcinit-etcd: etcd granted no lease\n");
			r = R_REFUSED;
			goto out;
		}
		alive = true;
	}
	/*
	 * Put only what differs: an unchanged record wakes no watcher.  The
	 * caller that knows it differs (--put always) saves the range.
	 */
	if (put_always || (mine.key && !strcmp(mine.key, k) && mine.lease == lease &&
			   (mine.vlen != vlen || memcmp(mine.value, value, vlen))))
		fresh = true;
	req = json_object_new_object();
	json_object_object_add(req, "key", b64_obj(k, strlen(k)));
	r = fresh ? 0 : request("/v3/kv/range", req, &j);
	if (fresh)
		json_object_put(req);
	if (r < 0)
		goto out;
	rev = fresh ? 0 : header_rev(j);
	if (!fresh && jlen(kvs = jget(j, "kvs", json_type_array)) == 1) {
		json_object *kv = json_object_array_get_idx(kvs, 0);
		unsigned char *have;
		size_t hl = 0;

		if ((have = b64_str(jstr(kv, "value"), &hl))) {
			same = hl == vlen && memcmp(have, value, vlen) == 0 && get_i64(kv, "lease") == lease;
			free(have);
		}
	}
	json_object_put(j);
	j = NULL;
	if (!same) {
		req = json_object_new_object();
		json_object_object_add(req, "key", b64_obj(k, strlen(k)));
		json_object_object_add(req, "value", b64_obj(value, vlen));
		json_object_object_add(req, "lease", i64_obj(lease));
		r = request("/v3/kv/put", req, &j);
		if (r == R_REFUSED && mine_lease) {
			/* the lease this process held is gone (revoked): ask as a first sync would */
			json_object_put(j);
			j = NULL;
			mine_lease = false;
			mine.lease = 0;
			fresh = false;
			goto again;
		}
		if (r < 0)
			goto out;
		rev = header_rev(j);
	}
	if (lease > 0)
		mine_note(k, value, vlen, lease, ttl, alive);
	printf("lease %" PRId64 "\nttl %" PRId64 "\nput %d\nrev %" PRId64 "\n", lease, ttl, !same, rev);
	if (etcd_date)
		printf("date %" PRId64 "\n", etcd_date);
	r = 0;
out:
	json_object_put(j);
	free(value);
	return r < 0 ? exit_of(r) : EX_OK;
}


static int cmd_keepalive(int64_t lease)
{
	int64_t ttl = 0;
	int r = lease_keepalive(lease, &ttl);

	if (r < 0)
		return exit_of(r);
	printf("ttl %" PRId64 "\n", ttl);
	return EX_OK;
}

static int cmd_leave(const char *k, int64_t lease)
{
	json_object *req, *j = NULL;
	int revoked = 0, r;

	if (lease > 0) {
		req = json_object_new_object();
		json_object_object_add(req, "ID", i64_obj(lease));
		r = request("/v3/lease/revoke", req, &j);
		if (r == R_DOWN)
			return EX_DOWN;
		revoked = r == 0;       /* -2: not found, expired already */
		json_object_put(j);
		j = NULL;
	}
	req = json_object_new_object();
	json_object_object_add(req, "key", b64_obj(k, strlen(k)));
	r = request("/v3/kv/deleterange", req, &j);
	if (r < 0)
		return exit_of(r);
	printf("revoked %d\ndeleted %" PRId64 "\n", revoked, get_i64(j, "deleted"));
	json_object_put(j);
	return EX_OK;
}

/* ---- main ---- */

static int usage(void)
{
	fprintf(stderr, "usage: hpcinit-etcd --endpoint URL... [--cacert F] [--cert F --key F] [--auth F] "
		"[--timeout MS] [--deadline MS] [--put always] COMMAND\n"
		"  sync KEY TTL_S [LEASE [PREFIX [EXPECT MS]]] < VALUE | list PREFIX | keepalive LEASE | leave KEY [LEASE] | "
		"watch PREFIX [REV] | await PREFIX EXPECT MS [REV] | serve\n");
	return EX_USAGE;
}

static bool parse_i64(const char *s, int64_t *ret)
{
	long long v;

	if (!num_ll(s, 0, INT64_MAX, &v))
		return false;
	*ret = v;
	return true;
}

/* etcd's authenticate carries the password itself: only over TLS.  false (said) when an endpoint is not https://. */
static bool auth_over_tls(void)
{
	for (size_t k = 0; k < etcd_n_endpoints; k++)
		if (strncmp(etcd_endpoints[k], "https://", 8) != 0) {
			fprintf(stderr, "hpcinit-etcd: endpoint %s is not https://: the password of "
				"%s would cross the network in clear text; refused (use https:// "
				"endpoints with discovery.auth_file)\n", safe_str(etcd_endpoints[k], 0), etcd_auth_file);
			return false;
		}
	return true;
}

/* A call's own option (--put always, --deadline MS): 1 when o is one (taken), 0 when not, -1 when wrong. */
static int call_opt(const char *o, const char *v, int64_t *deadline)
{
	long long ms;

	if (!strcmp(o, "--put") && !strcmp(v, "always")) {
		put_always = true;
		return 1;
	}
	if (!strcmp(o, "--deadline")) {
		*deadline = num_ll(v, 1, INT32_MAX, &ms) ? ms : 0;
		return 1;
	}
	return 0;
}

/* The command at argv[i] (its arguments after it, up to argc): the exit code. */
static int run(int argc, char **argv, int i, int64_t deadline)
{
	int64_t a = 0, b = 0;
	const char *cmd = argv[i++];
	int ret;

	/*
	 * Retries of slow answers end before the agent's deadline for this run
	 * (ETCD_RUN_MS, plus the wait of an await); a watch runs for good and
	 * gives each call that time from its start.
	 */
	etcd_deadline_ms = 0;
	if (strcmp(cmd, "watch") != 0 && etcd_n_endpoints) {
		int64_t wait = 0;

		if (!strcmp(cmd, "await") && argc - i >= 3)
			(void)parse_i64(argv[i + 2], &wait);
		else if (!strcmp(cmd, "sync") && argc - i == 6)
			(void)parse_i64(argv[i + 5], &wait);
		etcd_deadline_ms = mono_ms() + (deadline ? deadline :
			ETCD_RUN_MS(etcd_timeout_ms, (int64_t)etcd_n_endpoints) - etcd_timeout_ms + wait);
	}
	if (!strcmp(cmd, "sync") && argc - i >= 2 && argc - i <= 6 && argc - i != 5 &&
	    parse_i64(argv[i + 1], &a) && (argc - i == 2 || parse_i64(argv[i + 2], &b))) {
		int64_t want = 0, ms = 0;

		if (argc - i == 6 && (!parse_i64(argv[i + 4], &want) || !parse_i64(argv[i + 5], &ms) || ms <= 0))
			ret = usage();
		else if ((ret = cmd_sync(argv[i], a, b)) == EX_OK && argc - i >= 4) {
			/* The same process lists (or waits for the peers) next: no second start. */
			printf("list\n");
			ret = argc - i == 6 ? cmd_await(argv[i + 3], want, (long)ms, 0, NULL, 0, true) : cmd_list(argv[i + 3]);
		}
	} else if (!strcmp(cmd, "list") && argc - i == 1)
		ret = cmd_list(argv[i]);
	else if (!strcmp(cmd, "keepalive") && argc - i == 1 && parse_i64(argv[i], &a))
		ret = cmd_keepalive(a);
	else if (!strcmp(cmd, "leave") && (argc - i == 1 || argc - i == 2) &&
		 (argc - i == 1 || parse_i64(argv[i + 1], &b)))
		ret = cmd_leave(argv[i], b);
	else if (!strcmp(cmd, "await") && (argc - i == 3 || argc - i == 4) && parse_i64(argv[i + 1], &a) &&
		 parse_i64(argv[i + 2], &b) && b > 0) {
		int64_t from = 0;
		char *seed = NULL;
		size_t seed_len = 0;

		if (argc - i == 4 && (!parse_i64(argv[i + 3], &from) || from <= 0))
			ret = usage();
		else {
			/* With REV: the membership at REV on stdin (what list printed). */
			if (from)
				read_stdin(&seed, &seed_len, ETCD_OUT_MAX);
			ret = cmd_await(argv[i], a, (long)b, from, seed, seed_len, false);
		}
		free(seed);
	}
	else if (!strcmp(cmd, "watch") && !serving && (argc - i == 1 || (argc - i == 2 && parse_i64(argv[i + 1], &a))))
		ret = cmd_watch(argv[i], argc - i == 2 ? a : 0);
	else
		ret = usage();
	fflush(stdout);
	return ret;
}

/* One line of at most max bytes from f, its newline dropped; false at EOF or past max. */
static bool line_in(FILE *f, char *buf, size_t max)
{
	size_t n;

	if (!fgets(buf, (int)max, f))
		return false;
	n = strlen(buf);
	if (!n || buf[n - 1] != '\n')
		return false;
	buf[n - 1] = '\0';
	return true;
}

/* n bytes of f into a new NUL-terminated buffer; NULL when f ends first. */
static char *bytes_in(FILE *f, size_t n)
{
	char *p = malloc(n + 1);

	if (!p)
		abort();
	if (fread(p, 1, n, f) != n) {
		free(p);
		return NULL;
	}
	p[n] = '\0';
	return p;
}

/*
 * serve (lib/rendezvous/etcd-proto.h): the calls of one step in one
 * process: the agent starts it once, not once a call (this process's
 * start, its libraries' loading and relocation, is most of a short call's
 * cost).  Each call runs as a run of its own would, its stdout and stderr
 * caught and sent back framed.  A request that does not parse ends it
 * (exit 2): the agent then runs the call on its own.
 */
static int serve(void)
{
	FILE *out = stdout, *err = stderr;
	char line[64];

	serving = true;
	while (line_in(stdin, line, sizeof(line))) {
		char *av[ETCD_SERVE_ARGS_MAX + 1] = { 0 }, *data = NULL, *ob = NULL, *eb = NULL;
		size_t inlen = 0, ol = 0, el = 0;
		unsigned ac = 0, k = 0;
		int64_t deadline = 0;
		FILE *o, *e;
		int rc = -1, j = 0;

		{
			const char *q = line + 5;
			unsigned long long la, li;

			/* ETCD_SERVE_CALL: "call ARGC STDIN-LEN" */
			if (strncmp(line, "call ", 5) || !num_ull_field(&q, 10, ETCD_SERVE_ARGS_MAX, &la) || la == 0 ||
			    !num_ull_field(&q, 10, ETCD_OUT_MAX, &li) || (*q && *q != '\n'))
				return EX_USAGE;
			ac = (unsigned)la;
			inlen = (size_t)li;
		}
		for (; k < ac; k++) {
			long long len;

			if (!line_in(stdin, line, sizeof(line)) || !num_ll(line, 0, 65536, &len) ||
			    !(av[k] = bytes_in(stdin, (size_t)len)) || fgetc(stdin) != '\n')
				break;
		}
		if (k == ac)
			data = bytes_in(stdin, inlen);
		if (!data) {
			for (k = 0; k < ac; k++)
				free(av[k]);
			return EX_USAGE;
		}
		put_always = false;
		while ((unsigned)j + 1 < ac && !strncmp(av[j], "--", 2) && call_opt(av[j], av[j + 1], &deadline) == 1)
			j += 2;
		call_in = data;
		call_in_len = inlen;
		if (!(o = open_memstream(&ob, &ol)) || !(e = open_memstream(&eb, &el)))
			abort();
		stdout = o;
		stderr = e;
		rc = (unsigned)j < ac ? run((int)ac, av, j, deadline) : usage();
		fflush(o);
		fflush(e);
		stdout = out;
		stderr = err;
		fclose(o);
		fclose(e);
		fprintf(out, ETCD_SERVE_DONE "\n", rc, ol, el);
		fwrite(ob, 1, ol, out);
		fwrite(eb, 1, el, out);
		fflush(out);
		free(ob);
		free(eb);
		free(data);
		for (k = 0; k < ac; k++)
			free(av[k]);
	}
	return EX_OK;
}

#ifdef HPCINIT_ETCD_MODULE
/*
 * hpcinit-etcd.so: this program as a module, entered in a child the agent
 * forked (proc_start_module): the same process it would be, without the
 * exec, the dynamic loader and libc's start (on a VM each start asks the
 * CPU for its features and caches, and every such question traps to the
 * hypervisor).  Only this symbol is visible.
 */
__attribute__((visibility("default"))) int hpcinit_etcd_main(int argc, char **argv);
__attribute__((visibility("default"))) int hpcinit_etcd_main(int argc, char **argv)
#else
int main(int argc, char **argv)
#endif
{
	int i = 1, ret;
	int64_t deadline = 0;

	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		long long ms;

		if (!v)
			return usage();
		if (!strcmp(o, "--endpoint") && etcd_n_endpoints < MAX_ENDPOINTS)
			etcd_endpoints[etcd_n_endpoints++] = v;
		else if (!strcmp(o, "--cacert"))
			etcd_cacert = v;
		else if (!strcmp(o, "--cert"))
			etcd_cert = v;
		else if (!strcmp(o, "--key"))
			etcd_key = v;
		else if (!strcmp(o, "--auth"))
			etcd_auth_file = v;
		else if (!strcmp(o, "--timeout"))
			etcd_timeout_ms = num_ll(v, 1, LONG_MAX, &ms) ? (long)ms : 5000;
		else if (call_opt(o, v, &deadline) != 1)
			return usage();
	}
	if (i >= argc || !etcd_cert != !etcd_key)
		return usage();
	if (etcd_n_endpoints == 0)
		return usage();
	signal(SIGPIPE, SIG_DFL);
	srandom((unsigned)getpid() ^ (unsigned)mono_ms());      /* the retries' jitter differs by node */
	if (etcd_auth_file && !auth_over_tls())
		return EX_REFUSED;
	if (etcd_auth_file && etcd_n_endpoints) {
		int r = authenticate();

		if (r < 0)
			return exit_of(r);
	}
	ret = !strcmp(argv[i], "serve") && argc - i == 1 ? serve() : run(argc, argv, i, deadline);
	fflush(stdout);
	http_cleanup();
	free(etcd_token);
	return ret;
}
