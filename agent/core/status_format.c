/* SPDX-License-Identifier: MIT */
/*
 * The status document's format (docs/formats.md): a reader reads its own
 * format and every older one, and refuses a newer one, saying so, instead
 * of reading a document whose keys may mean what it cannot know.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "number.h"
#include "status_format.h"
#include "ydoc.h"

int status_format_of(const char *value)
{
	long long v;

	if (!value)
		return 1;
	return num_ll(value, 1, INT_MAX, &v) ? (int)v : 0;
}

/* The writer's version as the message may show it (it reaches the terminal and the log), or NULL. */
static const char *shown_version(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 64 ||
	    strspn(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+~_-") != n)
		return NULL;
	return s;
}

bool status_format_refused(yaml_document_t *doc, yaml_node_t *root, char *buf, size_t size)
{
	int f = status_format_of(ydoc_get(doc, root, "format"));
	const char *writer = shown_version(ydoc_get(doc, root, "hpcinit"));

	if (f >= 1 && f <= STATUS_FORMAT_READ)
		return false;
	if (f == 0)
		snprintf(buf, size, "its format is not a number from 1");
	else
		snprintf(buf, size, "status format %d%s%s%s is newer than hpcinit %s reads (formats 1 to %d)", f,
			 writer ? " (written by hpcinit " : "", writer ? writer : "", writer ? ")" : "",
			 PACKAGE_VERSION, STATUS_FORMAT_READ);
	return true;
}
