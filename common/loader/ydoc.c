/* SPDX-License-Identifier: MIT */
/* Reading a YAML or JSON document with libyaml's document API (ydoc.h). */
#include "config.h"

#include <string.h>

#include "ydoc.h"

bool ydoc_load(yaml_document_t *doc, const char *text, size_t len)
{
	yaml_parser_t parser;
	bool ok;

	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	ok = yaml_parser_load(&parser, doc);
	yaml_parser_delete(&parser);
	return ok;
}

const char *ydoc_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);

		if (k && v && k->type == YAML_SCALAR_NODE && v->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, key) == 0)
			return (const char *)v->data.scalar.value;
	}
	return NULL;
}

yaml_node_t *ydoc_node(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);

		if (k && k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}
