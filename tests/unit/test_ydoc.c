/* SPDX-License-Identifier: MIT */
/*
 * common/loader/ydoc.c: one YAML or JSON document and the lookups status,
 * boot and cloud-init's status use: scalars by key, nodes by key, and NULL
 * for what is not there or not of the right kind.
 */
#include "config.h"

#include "../../common/loader/ydoc.c"
#include "test.h"

static bool load(yaml_document_t *doc, const char *text)
{
	return ydoc_load(doc, text, strlen(text));
}

int main(void)
{
	yaml_document_t doc;
	yaml_node_t *root, *n;

	/* JSON as status.json writes it */
	TEST_CHECK(load(&doc, "{\"state\": \"ready\", \"code\": 0, \"steps\": {\"nfs\": {\"status\": \"ok\"}},"
			      " \"list\": [1, 2], \"esc\": \"a\\u0009b\\\"c\"}"));
	root = yaml_document_get_root_node(&doc);
	TEST_CHECK(root != NULL && root->type == YAML_MAPPING_NODE);
	TEST_STREQ(ydoc_get(&doc, root, "state"), "ready");
	TEST_STREQ(ydoc_get(&doc, root, "code"), "0");
	TEST_STREQ(ydoc_get(&doc, root, "esc"), "a\tb\"c");
	/* a key whose value is not a scalar: no scalar for it, but its node */
	TEST_CHECK(ydoc_get(&doc, root, "steps") == NULL);
	n = ydoc_node(&doc, root, "steps");
	TEST_CHECK(n != NULL && n->type == YAML_MAPPING_NODE);
	TEST_STREQ(ydoc_get(&doc, ydoc_node(&doc, n, "nfs"), "status"), "ok");
	n = ydoc_node(&doc, root, "list");
	TEST_CHECK(n != NULL && n->type == YAML_SEQUENCE_NODE);
	/* a sequence is no mapping: nothing in it by key */
	TEST_CHECK(ydoc_get(&doc, n, "0") == NULL);
	TEST_CHECK(ydoc_node(&doc, n, "0") == NULL);
	/* missing keys, a prefix of a key, a NULL map */
	TEST_CHECK(ydoc_get(&doc, root, "missing") == NULL);
	TEST_CHECK(ydoc_get(&doc, root, "stat") == NULL);
	TEST_CHECK(ydoc_node(&doc, root, "missing") == NULL);
	TEST_CHECK(ydoc_get(&doc, NULL, "state") == NULL);
	TEST_CHECK(ydoc_node(&doc, NULL, "state") == NULL);
	/* a chain through a missing key ends in NULL, not a crash */
	TEST_CHECK(ydoc_get(&doc, ydoc_node(&doc, root, "nope"), "status") == NULL);
	yaml_document_delete(&doc);

	/* YAML as cloud-init's status: block style, the first of a repeated key */
	TEST_CHECK(load(&doc, "status: done\nextended_status: degraded done\nerrors: []\n"));
	root = yaml_document_get_root_node(&doc);
	TEST_STREQ(ydoc_get(&doc, root, "status"), "done");
	TEST_STREQ(ydoc_get(&doc, root, "extended_status"), "degraded done");
	n = ydoc_node(&doc, root, "errors");
	TEST_CHECK(n != NULL && n->type == YAML_SEQUENCE_NODE);
	yaml_document_delete(&doc);

	/* a scalar document: no mapping to look in */
	TEST_CHECK(load(&doc, "just text\n"));
	root = yaml_document_get_root_node(&doc);
	TEST_CHECK(root != NULL && root->type == YAML_SCALAR_NODE);
	TEST_CHECK(ydoc_get(&doc, root, "just") == NULL);
	yaml_document_delete(&doc);

	/* the length bounds the text: what follows is not read */
	TEST_CHECK(ydoc_load(&doc, "a: 1\nb: 2\n", 5));
	root = yaml_document_get_root_node(&doc);
	TEST_STREQ(ydoc_get(&doc, root, "a"), "1");
	TEST_CHECK(ydoc_get(&doc, root, "b") == NULL);
	yaml_document_delete(&doc);

	/* not a document: false (cut JSON, bad indentation) */
	TEST_CHECK(!load(&doc, "{\"state\": \"ready\""));
	TEST_CHECK(!load(&doc, "a: 1\n  b: 2\n c: 3\n"));
	TEST_CHECK(!load(&doc, "[1, 2"));

	/* empty text: a document with no root node */
	TEST_CHECK(load(&doc, ""));
	TEST_CHECK(yaml_document_get_root_node(&doc) == NULL);
	TEST_CHECK(ydoc_get(&doc, yaml_document_get_root_node(&doc), "x") == NULL);
	yaml_document_delete(&doc);
	TEST_EXIT();
}
