/* SPDX-License-Identifier: MIT */
/*
 * The spec's users as this node resolves them (resolve.h): looked up, and
 * waited for.  A directory (SSSD, nslcd) is often offline for its first
 * minute at boot; a node that says ready before it answers gives jobs
 * "can't get password entry".
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsutil.h"
#include "record.h"
#include "resolve.h"
#include "strbuf.h"
#include "util.h"

char *users_resolved_text(const struct ctx *c, const struct strlist *users)
{
	struct strbuf sb = STRBUF_INIT;
	char item[96];

	for (size_t i = 0; users && i < users->n; i++) {
		uid_t uid;
		gid_t gid;
		int n;

		if (fs_lookup_user(c, users->v[i], &uid, &gid, NULL) < 0)
			continue;
		n = snprintf(item, sizeof(item), "%s%s=%u:%u", sb.len ? "," : "", users->v[i],
			     (unsigned)uid, (unsigned)gid);
		/* a name over 32 bytes or an id of -1 the record would refuse: not said */
		if (n <= 0 || (size_t)n >= sizeof(item) || sb.len + (size_t)n > RECORD_USERS_MAX ||
		    !record_users_valid(item + (sb.len ? 1 : 0), (size_t)n - (sb.len ? 1 : 0)))
			continue;
		sb_appendn(&sb, item, (size_t)n);
	}
	if (!sb.len) {
		sb_free(&sb);
		return NULL;
	}
	return sb_steal(&sb);
}


size_t users_wait(const struct ctx *c, const struct strlist *users, uint64_t wait_ms,
		  uint64_t poll_ms, bool *ret_ok)
{
	uint64_t end = now_ms() + wait_ms;
	size_t missing;

	for (size_t i = 0; i < users->n; i++)
		ret_ok[i] = false;
	for (;;) {
		missing = 0;
		for (size_t i = 0; i < users->n; i++) {
			if (!ret_ok[i])
				ret_ok[i] = fs_lookup_user(c, users->v[i], NULL, NULL, NULL) == 0;
			missing += !ret_ok[i];
		}
		uint64_t now = now_ms();

		if (!missing || now >= end)
			return missing;
		sleep_ms(end - now < poll_ms ? end - now : poll_ms);
	}
}
