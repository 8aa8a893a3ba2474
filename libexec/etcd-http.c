/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-etcd's HTTP (etcd-client.h, http_post): one POST of a JSON body,
 * the answer's bytes to a callback as they arrive.  For http:// endpoints
 * the helper speaks HTTP/1.1 itself over a TCP socket: linked, libcurl
 * and its thirty-odd libraries (TLS, Kerberos, LDAP, ssh...) cost every
 * start of the helper ~5 ms of CPU in the dynamic loader alone, on every
 * node, for a plain-text request on a private network (docs/performance.md).
 * For https:// (TLS, client certificates) libcurl does it: loaded with
 * dlopen on the first https request (as common/base/crypto.c loads
 * libcrypto), its functions typed from curl's own headers; where it cannot
 * be loaded, the helper says so and ends (exit 127), as the dynamic loader
 * did when it was linked.
 *
 * What the built-in client keeps of what curl did: a connect timeout
 * (CONNECT_MS) and a total one per request, failures in curl's words
 * ("Couldn't connect to server (Connection refused)"), the answer's Date
 * (etcd's clock), Content-Length and chunked bodies, a streamed body (the
 * watch) with TCP keepalive and a stall limit, no proxy ever, IPv6
 * literals ([::1]:2379), and one connection kept alive across the calls
 * of a process (a serve session's requests share it).
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "escape.h"
#include "etcd-client.h"
#include "number.h"
#include "strbuf.h"

#ifndef CURL_SONAME
#define CURL_SONAME "libcurl.so.4"
#endif

/* The connection's options (main sets them; etcd-client.c's authenticate the token) and etcd's clock. */
const char *etcd_cacert, *etcd_cert, *etcd_key;
long etcd_timeout_ms = 5000;
char *etcd_token;
int64_t etcd_date;

int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Text from the peer (a status line, a header) made safe for a message: escaped, at most 80 bytes. */
static const char *peer_text(const char *s)
{
	static struct strbuf sb;
	size_t n = strlen(s);

	sb.len = 0;
	if (sb.buf)
		sb.buf[0] = '\0';
	esc_append(&sb, s, n < 80 ? n : 80, false);
	if (n > 80)
		sb_append(&sb, "...");
	return sb_str(&sb);
}

#define STREAM_IDLE_MS (600 * 1000)     /* a watch: no byte for this long ends it (a dead member) */
#define HEADERS_MAX (64 * 1024)         /* an answer's status line and headers, in all */

/* ---- the answer's Date: RFC 7231's IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT" ---- */

/* Exactly n digits at *p, as a number in [min, max]; *p moved past them. */
static bool date_num(const char **p, size_t n, unsigned min, unsigned max, int *ret)
{
	unsigned long long v;
	const char *end;

	if (!num_ull_prefix(*p, 10, max, &v, &end) || (size_t)(end - *p) != n || v < min)
		return false;
	*ret = (int)v;
	*p = end;
	return true;
}

static bool date_lit(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n))
		return false;
	*p += n;
	return true;
}

/* The seconds since the epoch of an IMF-fixdate; 0 when s is not one. */
int64_t http_date(const char *s)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	struct tm tm = { 0 };
	const char *m;
	time_t t;

	while (*s == ' ' || *s == '\t')
		s++;
	if (strlen(s) < 29 || s[3] != ',' || s[4] != ' ')
		return 0;
	s += 5;
	if (!date_num(&s, 2, 1, 31, &tm.tm_mday) || !date_lit(&s, " "))
		return 0;
	m = strstr(months, (char[4]){ s[0], s[1], s[2], '\0' });
	if (!m || (m - months) % 3)
		return 0;
	tm.tm_mon = (int)(m - months) / 3;
	s += 3;
	if (!date_lit(&s, " ") || !date_num(&s, 4, 1970, 9999, &tm.tm_year) || !date_lit(&s, " ") ||
	    !date_num(&s, 2, 0, 23, &tm.tm_hour) || !date_lit(&s, ":") || !date_num(&s, 2, 0, 59, &tm.tm_min) ||
	    !date_lit(&s, ":") || !date_num(&s, 2, 0, 60, &tm.tm_sec) || !date_lit(&s, " GMT"))
		return 0;
	tm.tm_year -= 1900;
	t = timegm(&tm);
	return t > 0 ? (int64_t)t : 0;
}

/* ---- the URL ---- */

struct url {
	char host[256];                 /* without the brackets of an IPv6 literal */
	char port[8];
	char authority[300];            /* host[:port] as written: the Host header and the connection's key */
	const char *path;
};

/* http://HOST[:PORT][/PATH], HOST a name, an IPv4 or a bracketed IPv6 literal. */
static bool url_parse(const char *url, struct url *u)
{
	const char *a = url + 7, *end, *h, *he;
	unsigned long long port = 80;

	if (strncmp(url, "http://", 7))
		return false;
	end = a + strcspn(a, "/?#");
	u->path = *end == '/' ? end : "/";
	if ((size_t)(end - a) >= sizeof(u->authority) || memchr(a, '@', (size_t)(end - a)))
		return false;
	memcpy(u->authority, a, (size_t)(end - a));
	u->authority[end - a] = '\0';
	h = u->authority;
	if (*h == '[') {
		he = strchr(h, ']');
		if (!he)
			return false;
		h++;
		a = he + 1;
	} else {
		he = h + strcspn(h, ":");
		a = he;
	}
	if (*a == ':' && !(a[1] && num_ull(a + 1, 10, 65535, &port)))
		return false;
	if (*a && *a != ':')
		return false;
	if (he == h || (size_t)(he - h) >= sizeof(u->host))
		return false;
	memcpy(u->host, h, (size_t)(he - h));
	u->host[he - h] = '\0';
	snprintf(u->port, sizeof(u->port), "%llu", port);
	return true;
}

/* ---- one connection, kept alive between calls ---- */

struct conn {
	int fd;                         /* -1: none */
	char key[300];                  /* the authority it is to */
	char buf[16384];
	size_t pos, len;                /* unread bytes: buf[pos..len) */
};

static struct conn cn = { .fd = -1 };

void http_close(void)
{
	if (cn.fd >= 0)
		close(cn.fd);
	cn.fd = -1;
	cn.pos = cn.len = 0;
}

/* Milliseconds to wait for end (-1: forever), at most idle (0: no limit). */
static int wait_ms(int64_t end, int64_t idle)
{
	int64_t w = -1;

	if (end) {
		w = end - mono_ms();
		if (w < 0)
			w = 0;
	}
	if (idle && (w < 0 || w > idle))
		w = idle;
	return w > INT32_MAX ? INT32_MAX : (int)w;
}

static void fail(struct http_call *c, enum http_fail f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct http_call *c, enum http_fail f, const char *fmt, ...)
{
	va_list ap;

	c->fail = f;
	va_start(ap, fmt);
	vsnprintf(c->what, sizeof(c->what), fmt, ap);
	va_end(ap);
}

/* One address: the socket connected, or -1 and *err (ETIMEDOUT at connect_end). */
static int connect_one(const struct addrinfo *ai, int64_t connect_end, int *err)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	int one = 1;
	socklen_t len = sizeof(*err);
	struct pollfd p;

	if (fd < 0) {
		*err = errno;
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		*err = errno;
		close(fd);
		return -1;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	for (;;) {
		int r = poll(&p, 1, wait_ms(connect_end, 0));

		if (r > 0)
			break;
		if (r == 0 || errno != EINTR) {
			*err = r == 0 ? ETIMEDOUT : errno;
			close(fd);
			return -1;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, err, &len) < 0 || *err) {
		if (!*err)
			*err = errno;
		close(fd);
		return -1;
	}
	return fd;
}

/* A new connection to u, each of its addresses in turn within the connect timeout. */
static bool http_connect(struct http_call *c, const struct url *u, int64_t end)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	long cms = etcd_timeout_ms < CONNECT_MS ? etcd_timeout_ms : CONNECT_MS;
	int64_t start = mono_ms(), connect_end = start + cms;
	int r, err = 0;

	http_close();
	if (end && end < connect_end)
		connect_end = end;
	r = getaddrinfo(u->host, u->port, &hints, &res);
	if (r) {
		fail(c, HTTP_FAILED, "Couldn't resolve host name (%s: %s)", u->host, gai_strerror(r));
		return false;
	}
	for (struct addrinfo *ai = res; ai && cn.fd < 0; ai = ai->ai_next)
		if (err != ETIMEDOUT)
			cn.fd = connect_one(ai, connect_end, &err);
	freeaddrinfo(res);
	if (cn.fd < 0) {
		if (err == ETIMEDOUT)
			fail(c, HTTP_TIMEDOUT, "Timeout was reached (no connection in %" PRId64 " ms)",
			     connect_end - start);
		else
			fail(c, HTTP_FAILED, "Couldn't connect to server (%s)", strerror(err));
		return false;
	}
	snprintf(cn.key, sizeof(cn.key), "%s", u->authority);
	return true;
}

/* The whole request out; false and c->fail when the connection would not take it in time. */
static bool send_all(struct http_call *c, const char *p, size_t n, int64_t end)
{
	while (n) {
		ssize_t w = send(cn.fd, p, n, MSG_NOSIGNAL);
		struct pollfd pf = { .fd = cn.fd, .events = POLLOUT };
		int r;

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN) {
			fail(c, HTTP_FAILED, "Failed sending data to the peer (%s)", strerror(errno));
			return false;
		}
		r = poll(&pf, 1, wait_ms(end, 0));
		if (r == 0) {
			fail(c, HTTP_TIMEDOUT, "Timeout was reached (sending the request)");
			return false;
		}
		if (r < 0 && errno != EINTR) {
			fail(c, HTTP_FAILED, "Failed sending data to the peer (%s)", strerror(errno));
			return false;
		}
	}
	return true;
}

/* ---- reading the answer ---- */

struct answer {
	struct http_call *c;
	int64_t end, idle;              /* the call's end (0: none), the stall limit (0: none) */
	size_t got;                     /* bytes read on this call */
	bool reused;                    /* on a kept connection: its EOF before any byte is a retry */
};

/* More bytes into cn.buf: > 0 read, 0 the peer closed, -1 failed (c->fail set). */
static int fill(struct answer *a)
{
	struct pollfd pf = { .fd = cn.fd, .events = POLLIN };

	if (cn.pos == cn.len)
		cn.pos = cn.len = 0;
	else if (cn.len == sizeof(cn.buf) && cn.pos) {
		memmove(cn.buf, cn.buf + cn.pos, cn.len - cn.pos);
		cn.len -= cn.pos;
		cn.pos = 0;
	}
	for (;;) {
		ssize_t r = recv(cn.fd, cn.buf + cn.len, sizeof(cn.buf) - cn.len, 0);
		int w;

		if (r >= 0) {
			cn.len += (size_t)r;
			a->got += (size_t)r;
			if (r == 0)
				fail(a->c, HTTP_FAILED, a->got ? "Transferred a partial file (the connection closed "
				     "mid-answer)" : "Empty reply from server");
			return r > 0 ? 1 : 0;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			fail(a->c, HTTP_FAILED, "Recv failure: %s", strerror(errno));
			return -1;
		}
		w = poll(&pf, 1, wait_ms(a->end, a->idle));
		if (w == 0) {
			if (a->end && mono_ms() >= a->end)
				fail(a->c, HTTP_TIMEDOUT, "Timeout was reached (no answer in %ld ms)",
				     a->c->timeout_ms);
			else
				fail(a->c, HTTP_TIMEDOUT, "Operation too slow (no byte in %" PRId64 " s)",
				     a->idle / 1000);
			return -1;
		}
		if (w < 0 && errno != EINTR) {
			fail(a->c, HTTP_FAILED, "Recv failure: %s", strerror(errno));
			return -1;
		}
	}
}

/* A line of the answer (status, header, chunk size), NUL-terminated without its CRLF; NULL on a failure. */
static char *read_line(struct answer *a)
{
	for (;;) {
		char *s = cn.buf + cn.pos, *nl = memchr(s, '\n', cn.len - cn.pos);
		int r;

		if (nl) {
			cn.pos = (size_t)(nl + 1 - cn.buf);
			if (nl > s && nl[-1] == '\r')
				nl--;
			*nl = '\0';
			return s;
		}
		if (cn.pos == 0 && cn.len == sizeof(cn.buf)) {
			fail(a->c, HTTP_FAILED, "Weird server reply (a line of over %zu bytes)", sizeof(cn.buf));
			return NULL;
		}
		if ((r = fill(a)) <= 0)
			return NULL;
	}
}

/* n bytes of the body (at most; fewer when fewer arrived) to the caller: false when it stopped the call. */
static bool deliver(struct answer *a, size_t n)
{
	size_t took = a->c->on_data(cn.buf + cn.pos, 1, n, a->c->arg);

	cn.pos += n;
	if (took != n) {
		fail(a->c, HTTP_ENDED, "the stream was ended by its reader");
		return false;
	}
	return true;
}

/* len bytes of body (until the peer closes when until_close), as they arrive. */
static bool body_bytes(struct answer *a, unsigned long long len, bool until_close)
{
	while (until_close || len) {
		size_t have = cn.len - cn.pos, n = until_close || have < len ? have : (size_t)len;
		int r;

		if (n) {
			if (!deliver(a, n))
				return false;
			len -= until_close ? 0 : n;
			continue;
		}
		if ((r = fill(a)) == 0 && until_close) {
			a->c->fail = HTTP_OK;   /* no length: the close is the end */
			a->c->what[0] = '\0';
			return true;
		}
		if (r <= 0)
			return false;
	}
	return true;
}

/* A chunked body: each chunk's bytes as they arrive, then the trailers. */
static bool body_chunked(struct answer *a)
{
	for (;;) {
		char *line = read_line(a);
		unsigned long long size;
		const char *end;

		if (!line)
			return false;
		if (!num_ull_prefix(line, 16, UINT64_MAX / 2, &size, &end) || (*end && *end != ';' && *end != ' ')) {
			fail(a->c, HTTP_FAILED, "Weird server reply (a chunk size of \"%s\")", peer_text(line));
			return false;
		}
		if (size == 0)
			break;
		if (!body_bytes(a, size, false) || !(line = read_line(a)))
			return false;
		if (*line) {
			fail(a->c, HTTP_FAILED, "Weird server reply (no CRLF after a chunk)");
			return false;
		}
	}
	for (;;) {              /* trailers, up to the empty line */
		char *line = read_line(a);

		if (!line)
			return false;
		if (!*line)
			return true;
	}
}

struct head {
	unsigned long long length;
	bool has_length, chunked, keep;
};

/* The status line and headers; false on a failure (c->fail). */
static bool read_head(struct answer *a, struct head *h)
{
	size_t bytes = 0;
	char *line;

	do {
		const char *p;
		unsigned long long status;

		if (!(line = read_line(a)))
			return false;
		p = line + 9;
		if (strncmp(line, "HTTP/1.", 7) || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
		    !num_ull_prefix(p, 10, 999, &status, &p) || p != line + 12 || (*p && *p != ' ') || status < 100) {
			fail(a->c, HTTP_FAILED, "Weird server reply (status line \"%s\")", peer_text(line));
			return false;
		}
		a->c->status = (long)status;
		*h = (struct head){ .keep = line[7] == '1' };
		while ((line = read_line(a)) && *line) {
			char *v = strchr(line, ':');

			if ((bytes += strlen(line)) > HEADERS_MAX) {
				fail(a->c, HTTP_FAILED, "Weird server reply (headers over %d bytes)", HEADERS_MAX);
				return false;
			}
			if (!v)
				continue;
			*v++ = '\0';
			while (*v == ' ' || *v == '\t')
				v++;
			if (!strcasecmp(line, "content-length")) {
				if (!num_ull(v, 10, UINT64_MAX / 2, &h->length)) {
					fail(a->c, HTTP_FAILED, "Weird server reply (Content-Length \"%s\")",
					     peer_text(v));
					return false;
				}
				h->has_length = true;
			} else if (!strcasecmp(line, "transfer-encoding")) {
				h->chunked = strcasestr(v, "chunked") != NULL;
			} else if (!strcasecmp(line, "connection")) {
				h->keep = strcasestr(v, "close") ? false : strcasestr(v, "keep-alive") ? true : h->keep;
			} else if (!strcasecmp(line, "date")) {
				int64_t t = http_date(v);

				if (t > 0)
					etcd_date = t;
			}
		}
		if (!line)
			return false;
	} while (a->c->status < 200);   /* 100 Continue and the like: the answer follows */
	return true;
}

/* The request out on the connection, its answer in: true when whole (c->status). */
static bool exchange(struct http_call *c, const char *req, size_t req_len, struct answer *a)
{
	struct head h;
	bool ok;

	if (!send_all(c, req, req_len, a->end))
		return false;
	if (!read_head(a, &h))
		return false;
	if (c->status == 204 || c->status == 304)
		ok = true;
	else if (h.chunked)
		ok = body_chunked(a);
	else if (h.has_length)
		ok = body_bytes(a, h.length, false);
	else
		ok = body_bytes(a, 0, true), h.keep = false;
	if (!ok || !h.keep || cn.pos != cn.len)
		http_close();
	return ok;
}

/* The POST of c over the built-in client (u: its http:// URL). */
static int plain_post(struct http_call *c, const struct url *u)
{
	struct answer a = { .c = c, .idle = c->stream ? STREAM_IDLE_MS : 0 };
	char *req = NULL;
	size_t req_len = 0, body_len = strlen(c->body);
	FILE *f = open_memstream(&req, &req_len);
	bool ok;

	a.end = c->timeout_ms ? mono_ms() + c->timeout_ms : 0;
	if (!f)
		abort();
	fprintf(f, "POST %s HTTP/1.1\r\nHost: %s\r\nAccept: */*\r\nContent-Type: application/json\r\n", u->path,
		u->authority);
	if (etcd_token)
		fprintf(f, "Authorization: %s\r\n", etcd_token);
	fprintf(f, "Content-Length: %zu\r\n\r\n", body_len);
	fwrite(c->body, 1, body_len, f);
	fclose(f);
	/* A kept connection the peer closed meanwhile: its EOF before any byte, and the request again on a new one. */
	a.reused = cn.fd >= 0 && !strcmp(cn.key, u->authority) && cn.pos == cn.len;
	if (!a.reused && !http_connect(c, u, a.end)) {
		free(req);
		return -1;
	}
	c->connected = true;
	if (c->stream) {
		int one = 1, idle = 5, intvl = 2;

		setsockopt(cn.fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(cn.fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(cn.fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	}
	ok = exchange(c, req, req_len, &a);
	if (!ok && a.reused && a.got == 0 && c->fail == HTTP_FAILED) {
		c->fail = HTTP_OK;
		c->status = 0;
		a.reused = false;
		ok = http_connect(c, u, a.end) && exchange(c, req, req_len, &a);
	}
	if (!ok)
		http_close();
	free(req);
	return ok ? 0 : -1;
}

/* ---- https: libcurl, loaded on the first https request ---- */

#define CURL_FUNCTIONS(X) \
	X(curl_global_init) X(curl_global_cleanup) X(curl_easy_init) X(curl_easy_cleanup) \
	X(curl_easy_reset) X(curl_easy_setopt) X(curl_easy_perform) X(curl_easy_getinfo) \
	X(curl_easy_strerror) X(curl_slist_append) X(curl_slist_free_all)

static struct {
#define CURL_FIELD(f) __typeof__(f) *f;
	CURL_FUNCTIONS(CURL_FIELD)
#undef CURL_FIELD
} cu;
/* Calls through cu: CU(curl_easy_setopt)(...) (the name in parentheses: curl.h makes some of them macros). */
#define CU(f) (cu.f)
static CURL *curl_h;

static void curl_die(const char *what)
{
	fprintf(stderr, "hpcinit-etcd: cannot load %s (libcurl, a dependency of the package, for https:// "
		"endpoints): %s\n", CURL_SONAME, what ? what : "unknown error");
	_exit(127);
}

static void curl_load(void)
{
	/* RTLD_LOCAL: its symbols (and OpenSSL's) stay out of the global scope */
	void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	void *sym;

	if (!h)
		curl_die(dlerror());
#define CURL_LOOKUP(f) \
	sym = dlsym(h, #f); \
	if (!sym) \
		curl_die(dlerror()); \
	*(void **)&cu.f = sym;
	CURL_FUNCTIONS(CURL_LOOKUP)
#undef CURL_LOOKUP
	if (CU(curl_global_init)(CURL_GLOBAL_DEFAULT) != 0 || !(curl_h = CU(curl_easy_init)()))
		curl_die("libcurl did not start");
}

/* An answer's header line: its Date is etcd's clock (1 s), the agent's clock for the records' dates. */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	char line[128];
	size_t len = size * n;
	int64_t t;

	(void)arg;
	if (len > 5 && len < sizeof(line) && strncasecmp(data, "date:", 5) == 0) {
		memcpy(line, data + 5, len - 5);
		line[len - 5] = '\0';
		line[strcspn(line, "\r\n")] = '\0';
		if ((t = http_date(line)) > 0)
			etcd_date = t;
	}
	return len;
}

/* What a transfer that got no HTTP answer says, with the TLS setting to look at (never a key or a password). */
static void curl_failure(struct http_call *c, CURLcode cc)
{
	const char *hint = "";

	if (cc == CURLE_PEER_FAILED_VERIFICATION)
		hint = etcd_cacert ? " (the member's certificate does not verify against "
			"discovery.ca_file, or does not name this address)" :
			" (the member's certificate does not verify against the system's CAs: "
			"set discovery.ca_file)";
	else if (!etcd_cert && (cc == CURLE_RECV_ERROR || cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_SEND_ERROR))
		hint = " (TLS handshake refused: a member with --client-cert-auth needs "
			"discovery.cert_file and key_file)";
	else if (cc == CURLE_SSL_CERTPROBLEM || cc == CURLE_SSL_CONNECT_ERROR)
		hint = " (check discovery.cert_file and key_file)";
	fail(c, cc == CURLE_OPERATION_TIMEDOUT ? HTTP_TIMEDOUT : cc == CURLE_WRITE_ERROR ? HTTP_ENDED : HTTP_FAILED,
	     "%s%s", CU(curl_easy_strerror)(cc), hint);
}

static int curl_post(struct http_call *c)
{
	struct curl_slist *hdrs;
	curl_off_t connected = 0;
	CURLcode cc;

	if (!curl_h)
		curl_load();
	hdrs = CU(curl_slist_append)(NULL, "Content-Type: application/json");
	if (etcd_token) {
		char *a = malloc(strlen(etcd_token) + 32);

		if (!a)
			abort();
		sprintf(a, "Authorization: %s", etcd_token);
		hdrs = CU(curl_slist_append)(hdrs, a);
		free(a);
	}
	CU(curl_easy_reset)(curl_h);
	CU(curl_easy_setopt)(curl_h, CURLOPT_URL, c->url);
	CU(curl_easy_setopt)(curl_h, CURLOPT_POSTFIELDS, c->body);
	CU(curl_easy_setopt)(curl_h, CURLOPT_HTTPHEADER, hdrs);
	CU(curl_easy_setopt)(curl_h, CURLOPT_NOSIGNAL, 1L);
	CU(curl_easy_setopt)(curl_h, CURLOPT_CONNECTTIMEOUT_MS, etcd_timeout_ms < CONNECT_MS ? etcd_timeout_ms : CONNECT_MS);
	CU(curl_easy_setopt)(curl_h, CURLOPT_PROTOCOLS_STR, "https");
	CU(curl_easy_setopt)(curl_h, CURLOPT_NOPROXY, "*");      /* etcd is never reached through a proxy */
	if (etcd_cacert)
		CU(curl_easy_setopt)(curl_h, CURLOPT_CAINFO, etcd_cacert);
	if (etcd_cert) {
		CU(curl_easy_setopt)(curl_h, CURLOPT_SSLCERT, etcd_cert);
		CU(curl_easy_setopt)(curl_h, CURLOPT_SSLKEY, etcd_key);
	}
	if (c->timeout_ms)
		CU(curl_easy_setopt)(curl_h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	if (c->stream) {
		/* A dead member without a reset: no byte for this long ends the stream. */
		CU(curl_easy_setopt)(curl_h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		CU(curl_easy_setopt)(curl_h, CURLOPT_LOW_SPEED_TIME, (long)(STREAM_IDLE_MS / 1000));
		CU(curl_easy_setopt)(curl_h, CURLOPT_TCP_KEEPALIVE, 1L);
		CU(curl_easy_setopt)(curl_h, CURLOPT_TCP_KEEPIDLE, 5L);
		CU(curl_easy_setopt)(curl_h, CURLOPT_TCP_KEEPINTVL, 2L);
	}
	CU(curl_easy_setopt)(curl_h, CURLOPT_WRITEFUNCTION, c->on_data);
	CU(curl_easy_setopt)(curl_h, CURLOPT_WRITEDATA, c->arg);
	CU(curl_easy_setopt)(curl_h, CURLOPT_HEADERFUNCTION, on_header);
	cc = CU(curl_easy_perform)(curl_h);
	CU(curl_slist_free_all)(hdrs);
	/* A connection kept from an earlier answer reports no connect time: the caller knows that case. */
	c->connected = CU(curl_easy_getinfo)(curl_h, CURLINFO_CONNECT_TIME_T, &connected) == CURLE_OK && connected > 0;
	if (cc != CURLE_OK) {
		curl_failure(c, cc);
		return -1;
	}
	CU(curl_easy_getinfo)(curl_h, CURLINFO_RESPONSE_CODE, &c->status);
	return 0;
}

/* ---- both ---- */

int http_post(struct http_call *c)
{
	struct url u;

	c->status = 0;
	c->connected = false;
	c->fail = HTTP_OK;
	c->what[0] = '\0';
	if (!strncmp(c->url, "https://", 8))
		return curl_post(c);
	if (!url_parse(c->url, &u)) {
		fail(c, HTTP_FAILED, "URL using bad/illegal format or missing URL");
		return -1;
	}
	return plain_post(c, &u);
}

void http_cleanup(void)
{
	http_close();
	if (curl_h) {
		CU(curl_easy_cleanup)(curl_h);
		CU(curl_global_cleanup)();
		curl_h = NULL;
	}
}
