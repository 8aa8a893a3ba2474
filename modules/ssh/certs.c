/* SPDX-License-Identifier: MIT */
/*
 * The certs collection read with its refusals reported: what the CA's node
 * side (ca.c) and the head (ca_head.c) both read, in a file below both.
 */
#include "config.h"

#include <errno.h>

#include "rendezvous/rendezvous.h"
#include "ssh.h"

/*
 * Read name from certs/: 0 and the value, -ENOENT when absent.  An entry
 * the rendezvous refuses (a link, a FIFO or device, another owner,
 * writable by others, too large) is never read: a failed finding names it
 * and why, and the caller changes nothing that depends on it.
 */
int ca_certs_get(struct rendezvous *st, struct report *r, const char *name, char **ret,
		 size_t *ret_len)
{
	struct rv_entry e;
	int w = rv_get_entry(st, name, &e, ret);

	if (ret_len)
		*ret_len = w == 0 ? e.len : 0;
	if (w < 0 && e.refused && r)
		report_finding(r, ST_FAILED, "ssh.ca.refused", "%s%s: %s; refused, not read",
			       st->where, name, e.why);
	return w;
}

int ca_certs_read(struct rendezvous *st, struct report *r, const char *name, char **ret,
		  size_t *ret_len)
{
	struct rv_entry e;
	int w;

	*ret = NULL;
	if (ret_len)
		*ret_len = 0;
	if (!st->ops)
		return -ENOENT;         /* certs/ not made yet: the head makes it with the first certificate */
	w = rv_get_entry(st, name, &e, ret);
	if (ret_len)
		*ret_len = w == 0 ? e.len : 0;
	if (w < 0 && e.refused) {
		report_cluster(r, "ssh.ca.refused", "%s%s: %s; refused, not read (what this node "
			       "installed from it before stays)", st->where, name, e.why);
		return -EKEYREJECTED;
	}
	return w;
}
