/* SPDX-License-Identifier: MIT */
/*
 * Reading a YAML (or JSON: with our escaping it is YAML) document with
 * libyaml's document API: status.json and its parts, boot.json,
 * cloud-init's status (ydoc.c).
 */
#ifndef HPCINIT_YDOC_H
#define HPCINIT_YDOC_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

/* len bytes of text as one document into *doc: false when it is not one. */
bool ydoc_load(yaml_document_t *doc, const char *text, size_t len);
/* The scalar under key in the mapping map, or NULL (map NULL or no mapping too). */
const char *ydoc_get(yaml_document_t *doc, yaml_node_t *map, const char *key);
/* The node under key in the mapping map, or NULL. */
yaml_node_t *ydoc_node(yaml_document_t *doc, yaml_node_t *map, const char *key);

#endif
