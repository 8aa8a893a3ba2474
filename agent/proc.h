/* SPDX-License-Identifier: MIT */
/*
 * Run an external tool: argv array (never a shell), a timeout, captured
 * stdout/stderr (capped), a clean environment unless one is given.
 */
#ifndef HPCINIT_PROC_H
#define HPCINIT_PROC_H

#include <stdbool.h>
#include <stddef.h>

#define PROC_MAX_OUTPUT (1024 * 1024)

struct proc_result {
	int exit_code;          /* exit status, or -1 when killed by a signal */
	int term_signal;        /* the signal, 0 when it exited */
	bool timed_out;         /* killed because timeout_ms passed */
	char *out;              /* captured stdout, NUL-terminated, never NULL after run */
	size_t out_len;
	char *err;              /* captured stderr */
	size_t err_len;
};

/*
 * Run argv[0] (a path, or a name searched in a fixed safe PATH) with argv.
 * envp NULL gives PATH=/usr/sbin:/usr/bin:/sbin:/bin and LC_ALL=C.
 * stdin_data may be NULL (stdin is /dev/null).  The child gets its own
 * process group; on timeout the group gets SIGTERM, then SIGKILL after 1 s.
 * Returns 0 when the child ran (see ret->exit_code), -errno when it could
 * not be started (-ENOENT: no such program).
 */
int proc_run(const char *const argv[], const char *const envp[], const char *stdin_data,
	     unsigned timeout_ms, struct proc_result *ret);
void proc_result_free(struct proc_result *r);
/* "a b 'c d'" rendering of argv, for logs and plan output only. malloc'd. */
char *argv_render(const char *const argv[]);
/* Find a program in the fixed safe PATH (under no root). malloc'd or NULL. */
char *proc_which(const char *name);

#endif
