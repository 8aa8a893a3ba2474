/* SPDX-License-Identifier: MIT */
/* Names and paths: the rules, each written once (see names.h). */
#include "config.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "ascii.h"
#include "names.h"
#include "number.h"
#include "strbuf.h"

bool name_has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

const char *name_check_cluster(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63)
		return "1 to 63 characters";
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum((unsigned char)s[i]) && s[i] != '-')
			return "only lower-case letters, digits and '-'";
	if (s[0] == '-' || s[n - 1] == '-')
		return "not starting or ending with '-'";
	return NULL;
}

static bool valid_label(const char *s, size_t n, unsigned flags)
{
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum((unsigned char)s[i]) && s[i] != '-' &&
		    !((flags & NAME_WILD) && (s[i] == '*' || s[i] == '?')) &&
		    !((flags & NAME_UNDERSCORE) && s[i] == '_'))
			return false;
	return s[0] != '-' && s[n - 1] != '-';
}

bool name_host_valid(const char *s, unsigned flags)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253)
		return false;
	for (const char *p = s;;) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		if (!valid_label(p, l, flags))
			return false;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

bool name_hostname_valid(const char *s)
{
	return name_host_valid(s, 0);
}

bool name_ip_valid(const char *s)
{
	unsigned char a[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

bool name_user_validn(const char *s, size_t n)
{
	if (n == 0 || n > 32)
		return false;
	if (!is_alnum((unsigned char)s[0]) && s[0] != '_')
		return false;
	for (size_t i = 1; i < n; i++) {
		if (s[i] == '$' && i == n - 1)
			break;
		if (!is_alnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	}
	for (size_t i = 0; i < n; i++)
		if (!is_digit((unsigned char)s[i]))
			return true;
	return false;        /* all digits reads as a uid */
}

bool name_user_valid(const char *s)
{
	return name_user_validn(s, strlen(s));
}

const char *name_check_user(const char *s)
{
	return name_user_valid(s) ? NULL :
		"not a valid user name (letters, digits, '.', '_', '-', at most 32, not starting with '-')";
}

const char *name_check_pam_domain(const char *s)
{
	if (!strcmp(s, "*"))
		return NULL;
	if (s[0] == '@')
		return name_user_valid(s + 1) ? NULL : "not a valid group name after '@'";
	return name_user_valid(s) ? NULL : "expected '*', a user name or @group";
}

const char *name_check_module(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 55)
		return "not a kernel module name (1 to 55 letters, digits, '_' or '-')";
	for (size_t i = 0; i < n; i++)
		if (!is_alnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return "not a kernel module name (1 to 55 letters, digits, '_' or '-')";
	return NULL;
}

const char *name_check_option(const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return "empty option";
	if (n > NAME_ITEM_MAX)
		return "option is longer than 255 characters";
	if (strchr(s, ','))
		return "one option per entry: write [a, b], not \"a,b\"";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f || s[i] == '#' || s[i] == '"' ||
		    s[i] == '\'' || s[i] == '\\')
			return "options cannot hold spaces, quotes, '#' or '\\'";
	/* exports(5) puts the options in parentheses after the clients */
	if (strpbrk(s, "()"))
		return "options cannot hold '(' or ')'";
	return NULL;
}

/* The n bytes at s: 1 to maxlen digits, a port number from min to 65535. */
static bool port_valid(const char *s, size_t n, size_t maxlen, unsigned long long min)
{
	char buf[8];
	unsigned long long v;

	if (n == 0 || n > maxlen || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return num_ull(buf, 10, 65535, &v) && v >= min;
}

const char *name_check_mount_option(const char *s)
{
	const char *why = name_check_option(s);

	if (why || strncmp(s, "port=", 5))
		return why;
	/* mount.nfs reads port=N as the server's NFS port: a number up to 65535. */
	if (!port_valid(s + 5, strlen(s + 5), 6, 0))
		return "port= needs a number from 0 to 65535";
	return NULL;
}

bool name_ifname_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= IFNAMSIZ || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == ':' || (unsigned char)s[i] <= ' ' ||
		    (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

const char *name_check_ifname(const char *s)
{
	return name_ifname_valid(s) ? NULL : "1 to 15 characters, no '/', ':' or spaces";
}

const char *name_check_glob(const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return "empty pattern";
	if (n > NAME_ITEM_MAX)
		return "pattern is longer than 255 characters";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '/')
			return "a pattern matches one name and cannot hold '/'";
		if (c <= ' ' || c == 0x7f)
			return "a pattern cannot hold spaces or control characters";
		if (c == '\\') {
			if (++i >= n)
				return "pattern ends with '\\'";
		} else if (c == '[') {
			size_t j = i + 1;

			if (j < n && (s[j] == '!' || s[j] == '^'))
				j++;
			if (j < n && s[j] == ']')
				j++;
			while (j < n && s[j] != ']')
				j++;
			if (j >= n)
				return "'[' without a closing ']'";
			i = j;
		}
	}
	return NULL;
}

char *name_path_normalize(const char *s, const char **why)
{
	size_t n = strlen(s), o = 0;
	char *out;

	if (s[0] != '/') {
		*why = "expected an absolute path (starting with /)";
		return NULL;
	}
	if (n > NAME_PATH_MAX) {
		*why = "path is longer than 4095 characters";
		return NULL;
	}
	if (name_has_control(s)) {
		*why = "path holds a control character";
		return NULL;
	}
	out = xmalloc(n + 1);
	for (size_t i = 0; i < n;) {
		size_t l;

		while (s[i] == '/')
			i++;
		l = strcspn(s + i, "/");
		if (l == 0)
			break;
		if (l == 2 && s[i] == '.' && s[i + 1] == '.') {
			free(out);
			*why = "'..' is not allowed in a path";
			return NULL;
		}
		if (!(l == 1 && s[i] == '.')) {
			out[o++] = '/';
			memcpy(out + o, s + i, l);
			o += l;
		}
		i += l;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

const char *name_check_url(const char *s)
{
	size_t n = strlen(s);

	if (!((!strncmp(s, "http://", 7) || !strncmp(s, "https://", 8)) && n > 8))
		return "expected http:// or https:// and a host";
	if (n > 1024)
		return "a URL is at most 1024 characters";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f || s[i] == '"' || s[i] == '\'' ||
		    s[i] == '\\')
			return "a URL cannot hold spaces, quotes, '\\' or control characters";
	return NULL;
}

char *name_url_host(const char *url)
{
	const char *p = strstr(url, "://"), *e;

	if (!p)
		return NULL;
	p += 3;
	if (*p == '[') {
		e = strchr(++p, ']');
	} else {
		e = p + strcspn(p, ":/?#");
	}
	if (!e || e == p)
		return NULL;
	return xstrndup(p, (size_t)(e - p));
}

bool name_is_localhost(const char *s)
{
	static const char *const names[] = {
		"localhost", "localhost.localdomain", "localhost4", "localhost4.localdomain4",
		"localhost6", "localhost6.localdomain6", "ip6-localhost", "ip6-loopback",
		"ip6-localnet", "ip6-mcastprefix", "ip6-allnodes", "ip6-allrouters", "broadcasthost",
		NULL,
	};
	size_t n = strlen(s);
	char c = (char)(s[0] | 0x20);   /* each name above starts with l, i or b, in any case */

	/* Every peer's name is asked about, 10,000 a refresh at that size: most go no further. */
	if (c == 'l' || c == 'i' || c == 'b')
		for (size_t i = 0; names[i]; i++)
			if (strcasecmp(s, names[i]) == 0)
				return true;
	/* anything.localhost is loopback too (RFC 6761). */
	return n > 10 && strcasecmp(s + n - 10, ".localhost") == 0;
}

bool name_same_host(const char *a, const char *b)
{
	const char *da = strchr(a, '.'), *db = strchr(b, '.');

	if (strcasecmp(a, b) == 0)
		return true;
	if (!da && db)
		return (size_t)(db - b) == strlen(a) && strncasecmp(a, b, strlen(a)) == 0;
	if (da && !db)
		return (size_t)(da - a) == strlen(b) && strncasecmp(a, b, strlen(b)) == 0;
	return false;
}

bool name_hosts_lookup(const char *text, const char *name, char *out, size_t len)
{
	const char *ws = " \t\r";

	for (const char *l = text; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char *line = xstrndup(l, n), *save = NULL, *addr, *tok;
		char *hash = strchr(line, '#');

		if (hash)
			*hash = '\0';
		addr = strtok_r(line, ws, &save);
		while (addr && (tok = strtok_r(NULL, ws, &save)))
			if (name_same_host(tok, name)) {
				snprintf(out, len, "%s", addr);
				free(line);
				return true;
			}
		free(line);
		l = e ? e + 1 : NULL;
	}
	return false;
}

const char *name_check_endpoint(const char *s)
{
	static const char why[] = "expected a URL like https://10.0.0.4:2379 (http or https, a host "
				  "and an optional port, no path)";
	const char *h, *end, *colon = NULL;
	char host[256];
	size_t n;

	if (!strncmp(s, "https://", 8))
		h = s + 8;
	else if (!strncmp(s, "http://", 7))
		h = s + 7;
	else
		return why;
	end = h + strlen(h);
	if (end > h && end[-1] == '/')
		end--;
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));

		if (!rb)
			return why;
		n = (size_t)(rb - h - 1);
		if (n == 0 || n >= sizeof(host))
			return why;
		memcpy(host, h + 1, n);
		host[n] = '\0';
		if (!strchr(host, ':') || !name_ip_valid(host))
			return why;
		if (rb + 1 < end && rb[1] != ':')
			return why;
		colon = rb + 1 < end ? rb + 1 : NULL;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		n = (size_t)((colon ? colon : end) - h);
		if (n == 0 || n >= sizeof(host))
			return why;
		memcpy(host, h, n);
		host[n] = '\0';
		if (!name_ip_valid(host) && !name_hostname_valid(host))
			return why;
	}
	if (colon && memchr(colon, '/', (size_t)(end - colon)))
		return why;
	if (colon && !port_valid(colon + 1, (size_t)(end - colon - 1), 5, 1))
		return "the port after ':' must be a number from 1 to 65535";
	return NULL;
}

const char *name_check_host_port(const char *s)
{
	const char *colon = strrchr(s, ':');
	char host[254];
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	if (n == 0 || n >= sizeof(host))
		return "expected a host like head1 or 10.0.0.4:6817";
	memcpy(host, s, n);
	host[n] = '\0';
	if (colon && !port_valid(colon + 1, strlen(colon + 1), 5, 1))
		return "expected a port from 1 to 65535 after ':'";
	if (!name_hostname_valid(host) && !name_ip_valid(host))
		return "expected a host like head1 or 10.0.0.4:6817";
	return NULL;
}

const char *name_check_feature(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n)
		return "1 to 63 letters, digits, '_', '.' or '-'";
	return NULL;
}
