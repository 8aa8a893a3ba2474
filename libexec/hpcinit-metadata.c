/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-metadata: the calls to the cloud's metadata service that need
 * JSON (Azure Scheduled Events), in a process of their own so the agent
 * links neither libcurl nor json-c.  Run by lib/metadata/metadata.c alone,
 * through proc.c under a deadline.
 *
 *   hpcinit-metadata [--timeout MS] events URL
 *       "self NAME" (this VM's name, from the instance metadata at the same
 *       scheme, host and port), "incarnation N", then one line an event:
 *       "event ID TYPE STATUS RESOURCE,RESOURCE..." (each field one safe word)
 *   hpcinit-metadata [--timeout MS] ack URL EVENT_ID
 *       acknowledge (start) the event: POST {"StartRequests":[{"EventId":ID}]}.
 *
 * Exit codes as hpcinit-etcd's (lib/rendezvous/etcd-proto.h): 0, 1 the
 * service did not answer, 2 usage, 3 its answer is not an events document.
 * The HTTP and JSON client is the helpers' one (etcd-client.c).
 */
#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "etcd-client.h"
#include "number.h"

static CURL *curl;              /* this helper links libcurl (hpcinit-etcd loads it for https only) */

/* ---- Azure Scheduled Events ---- */

/* One request to one URL with "Metadata: true"; 0 and the body, or -1 (stderr says why). */
static int imds(const char *url, const char *body, struct http_buf *b)
{
	struct curl_slist *h = curl_slist_append(NULL, "Metadata: true");
	long status = 0;
	CURLcode cc;

	if (body)
		h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_reset(curl);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");       /* IMDS is never proxied */
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, etcd_timeout_ms);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, b);
	if (body)
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
	cc = curl_easy_perform(curl);
	curl_slist_free_all(h);
	if (cc == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK || status < 200 || status > 299) {
		fprintf(stderr, "hpcinit-metadata: %s: %s\n", url,
			cc != CURLE_OK ? curl_easy_strerror(cc) : "unexpected HTTP status");
		if (cc == CURLE_OK)
			fprintf(stderr, "hpcinit-metadata: %s answered HTTP %ld\n", url, status);
		return -1;
	}
	return 0;
}

/* Text fields of the events document may hold anything: print them as one safe word. */
static void put_word(const char *s)
{
	if (!s || !*s)
		s = "-";
	for (; *s; s++)
		putchar((*s > ' ' && *s < 0x7f && *s != ',') ? *s : '_');
}

/* The events document (an answer of the Scheduled Events endpoint), one line an event. */
static void events_print(json_object *j)
{
	json_object *evs = jget(j, "Events", json_type_array);

	printf("incarnation %" PRId64 "\n", get_i64(j, "DocumentIncarnation"));
	for (size_t i = 0; i < jlen(evs); i++) {
		json_object *e = json_object_array_get_idx(evs, i);
		json_object *res = jget(e, "Resources", json_type_array);
		size_t n = jlen(res), printed = 0;

		fputs("event ", stdout);
		put_word(jstr(e, "EventId"));
		putchar(' ');
		put_word(jstr(e, "EventType"));
		putchar(' ');
		put_word(jstr(e, "EventStatus"));
		putchar(' ');
		for (size_t k = 0; k < n; k++) {
			const char *name = json_object_get_string(jget_idx_str(res, k));

			if (!name)
				continue;
			if (printed++)
				putchar(',');
			put_word(name);
		}
		if (!printed)
			putchar('-');
		putchar('\n');
	}
}

static int cmd_events(const char *url)
{
	struct http_buf b = { 0 }, nb = { 0 };
	json_object *j;
	const char *p = strstr(url, "://");
	char base[512], name_url[640];
	size_t bl;

	/* This VM's name: the instance metadata service at the same scheme, host and port. */
	p = p ? strchr(p + 3, '/') : NULL;
	bl = p ? (size_t)(p - url) : strlen(url);
	if (bl >= sizeof(base)) {
		fprintf(stderr, "hpcinit-metadata: %s: URL too long\n", url);
		return EX_USAGE;
	}
	memcpy(base, url, bl);
	base[bl] = '\0';
	snprintf(name_url, sizeof(name_url),
		 "%s/metadata/instance/compute/name?api-version=2021-02-01&format=text", base);
	if (imds(name_url, NULL, &nb) == 0 && nb.p) {
		fputs("self ", stdout);
		put_word(nb.p);
		putchar('\n');
	}
	free(nb.p);
	if (imds(url, NULL, &b) < 0) {
		free(b.p);
		return EX_DOWN;
	}
	j = json_tokener_parse(b.p ? b.p : "");
	free(b.p);
	if (!j) {
		fprintf(stderr, "hpcinit-metadata: %s: the answer is not JSON\n", url);
		return EX_REFUSED;
	}
	events_print(j);
	json_object_put(j);
	return EX_OK;
}

static int cmd_ack(const char *url, const char *id)
{
	json_object *req = json_object_new_object(), *arr = json_object_new_array(),
		    *one = json_object_new_object();
	struct http_buf b = { 0 };
	int r;

	json_object_object_add(one, "EventId", json_object_new_string(id));
	json_object_array_add(arr, one);
	json_object_object_add(req, "StartRequests", arr);
	r = imds(url, json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), &b);
	json_object_put(req);
	free(b.p);
	if (r < 0)
		return EX_DOWN;
	printf("acknowledged %s\n", id);
	return EX_OK;
}

static int usage(void)
{
	fprintf(stderr, "usage: hpcinit-metadata [--timeout MS] events URL | ack URL EVENT_ID\n");
	return EX_USAGE;
}

int main(int argc, char **argv)
{
	int i = 1, ret;
	long long ms;

	if (i + 1 < argc && !strcmp(argv[i], "--timeout")) {
		etcd_timeout_ms = num_ll(argv[i + 1], 1, LONG_MAX, &ms) ? (long)ms : 5000;
		i += 2;
	}
	if (i >= argc)
		return usage();
	signal(SIGPIPE, SIG_DFL);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(curl = curl_easy_init())) {
		fprintf(stderr, "hpcinit-metadata: libcurl did not start\n");
		return EX_DOWN;
	}
	if (!strcmp(argv[i], "events") && argc - i == 2)
		ret = cmd_events(argv[i + 1]);
	else if (!strcmp(argv[i], "ack") && argc - i == 3)
		ret = cmd_ack(argv[i + 1], argv[i + 2]);
	else
		ret = usage();
	fflush(stdout);
	curl_easy_cleanup(curl);
	curl_global_cleanup();
	return ret;
}
