/* SPDX-License-Identifier: MIT */
/*
 * The status document's format (status_format.c; docs/formats.md): the
 * "format" key of status.json, the part files, last-run.json and a run's
 * --json report, after "hpcinit" (the writer's version).
 */
#ifndef HPCINIT_STATUS_FORMAT_H
#define HPCINIT_STATUS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

/*
 * Written as STATUS_FORMAT; read from 1 to STATUS_FORMAT_READ (a document
 * without the key, as release 0.1.0 wrote it, is format 1).  A key added is
 * not a new format; a new number means an older reader would misread it.
 */
#define STATUS_FORMAT 1
#define STATUS_FORMAT_READ 1

/* The format a "format" value says (NULL: 1), or 0 when it is not a number from 1. */
int status_format_of(const char *value);
/*
 * Whether a reader leaves the document whose root is root unread: its format
 * is newer than STATUS_FORMAT_READ, or no number.  Then buf says why (the
 * format, the writer's version when it reads as one, the formats read).
 */
bool status_format_refused(yaml_document_t *doc, yaml_node_t *root, char *buf, size_t size);

#endif
