/* SPDX-License-Identifier: MIT */
/*
 * The child engine: run something in a child under a deadline.  One core,
 * two ways in: an external program (argv array, never a shell) or a
 * function in a forked child.  Either way the child keeps no inherited
 * descriptor but its own pipes, its output is captured (capped), and at the
 * deadline it gets SIGTERM then SIGKILL.  A child that SIGKILL cannot end
 * (asleep uninterruptibly in the kernel: a hard NFS mount, a wedged driver)
 * is left behind and reported, never waited for.
 */
#ifndef HPCINIT_PROC_H
#define HPCINIT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "strbuf.h"

#define PROC_MAX_OUTPUT (1024 * 1024)

/*
 * A child left behind asleep in the kernel, as the record its run kept
 * (<stuck dir>/<key>: pid, start time, since when, what it waits for).
 */
struct proc_stuck {
	pid_t pid;
	long long since;        /* unix time it was left behind */
	char wchan[64];         /* the kernel function it sleeps in now, "" when unknown */
	char what[384];         /* what it was blocked in when it was left (system call, file) */
};

/* One child.  Zero it, start it with proc_start_argv or proc_start_fn, wait with proc_wait. */
struct proc_child {
	/*
	 * Set before start: at most one child per key may be stuck in the kernel.
	 * While the key's earlier child (this run's or an earlier run's) is still
	 * asleep there, the start returns -EBUSY with it in blocked, and no second
	 * child is started.  An abandoned child with a key is recorded (see
	 * proc_stuck_dir); stuck_what, when set, says what it waits for.
	 */
	const char *stuck_key, *stuck_what;
	struct proc_stuck blocked;
	pid_t pid;
	bool own_group;         /* signals go to its process group (argv children) */
	bool keep_stderr;       /* set before proc_start_fn: the child writes to our stderr (logs) */
	bool cmd_stdin;         /* set before proc_start_fn: the child's stdin is a pipe, its write end
				 * in_fd (words to a child that stays for more: runner.c's announce) */
	int out_fd, err_fd, in_fd;      /* parent's ends; -1 once closed */
	const char *in_data;    /* written to the child's stdin (argv children) */
	size_t in_len, in_off;
	size_t want;            /* fn children: the answer is complete after this many bytes */
	struct strbuf out, err; /* captured output, PROC_MAX_OUTPUT bytes at most each */
	size_t max_out;         /* set before proc_wait: the cap on stdout (0: PROC_MAX_OUTPUT) */
	bool out_cut;           /* stdout passed its cap: what came after was dropped */
	bool eof;               /* the child closed its output (or gave its whole answer) */
	bool timed_out;         /* the deadline passed before it finished */
	bool exited;            /* reaped; status is valid */
	bool abandoned;         /* alive after SIGKILL and the reap grace: stuck in the kernel, left behind */
	int status;             /* waitpid status */
	uint64_t ms;            /* start to eof, or to giving up on the output */
	/* engine state */
	uint64_t t_start, t_term, t_kill;
};

struct proc_limits {
	unsigned timeout_ms;    /* deadline, from proc_wait's call */
	unsigned term_grace_ms; /* SIGTERM at the deadline, SIGKILL this much later; 0: SIGKILL at once */
	unsigned reap_ms;       /* how long a child may take to die (or exit after eof) before it is left */
	bool eof_ends;          /* eof ends the wait: exit is awaited for reap_ms, not until the deadline */
};

/*
 * Start prog with argv (envp NULL: PATH=/usr/sbin:/usr/bin:/sbin:/bin, LC_ALL=C).
 * stdin_data may be NULL (stdin is /dev/null); it must outlive proc_wait.
 * The child gets its own process group.  -errno when it could not be
 * started (-ENOENT etc. from execve are reported here too).
 */
int proc_start_argv(struct proc_child *ch, const char *prog, const char *const argv[],
		    const char *const envp[], const char *stdin_data);
/*
 * As proc_start_argv, but the forked child enters module's entry (its
 * main(argc, argv), dlopen'd: libexec/hpcinit-etcd.so) in place of
 * exec'ing prog: the same program without a process start.  Where module
 * does not load, prog is exec'd as by proc_start_argv.
 */
int proc_start_module(struct proc_child *ch, const char *module, const char *entry, const char *prog,
		      const char *const argv[], const char *const envp[], const char *stdin_data);
/*
 * Fork and run fn(arg, fd) in the child, then _exit(0); fd is its only open
 * descriptor besides /dev/null on 0-2 (with cmd_stdin, stdin is the parent's
 * in_fd, which the caller closes before proc_wait), and is read into ch->out.  The child
 * dies with its parent (PR_SET_PDEATHSIG).  want: see struct proc_child.
 */
int proc_start_fn(struct proc_child *ch, void (*fn)(void *arg, int fd), void *arg, size_t want);
/*
 * Wait for n started children together under one deadline (see struct
 * proc_limits).  timeout_ms 0 stops running children now: SIGTERM, SIGKILL
 * after term_grace_ms, and a child that still does not die is left, not
 * waited for (use this rather than kill + waitpid).
 */
void proc_wait(struct proc_child *ch, size_t n, const struct proc_limits *lim);
void proc_child_free(struct proc_child *ch);

struct proc_result {
	int exit_code;          /* exit status, or -1 when killed by a signal */
	int term_signal;        /* the signal, 0 when it exited */
	bool timed_out;         /* killed because timeout_ms passed */
	bool abandoned;         /* would not die: left behind (exit_code -1, term_signal SIGKILL) */
	char *out;              /* captured stdout, NUL-terminated, never NULL after run */
	size_t out_len;
	bool out_cut;           /* stdout passed its cap: out holds only its start */
	char *err;              /* captured stderr */
	size_t err_len;
};

/*
 * Run argv[0] (a path, or a name searched in a fixed safe PATH) with argv,
 * through the engine: on timeout the group gets SIGTERM, then SIGKILL after 1 s.
 * Returns 0 when the child ran (see ret->exit_code), -errno when it could
 * not be started (-ENOENT: no such program).
 */
int proc_run(const char *const argv[], const char *const envp[], const char *stdin_data,
	     unsigned timeout_ms, struct proc_result *ret);
/* proc_run with another cap on stdout than PROC_MAX_OUTPUT (0: that one). */
int proc_run_max(const char *const argv[], const char *const envp[], const char *stdin_data,
		 unsigned timeout_ms, size_t max_out, struct proc_result *ret);
void proc_result_free(struct proc_result *r);
/* "a b 'c d'" rendering of argv, for logs and plan output only. malloc'd. */
char *argv_render(const char *const argv[]);
/*
 * Path of one of hpcinit's own helper programs (hpcinit-rdma-probe, ...),
 * the first of:
 *   1. $HPCINIT_LIBEXEC_DIR when that is set to an absolute path (an override);
 *   2. the running binary's own directory (/proc/self/exe) when that is its
 *      build tree (proc_build_dir): `make` builds the helpers beside it;
 *   3. LIBEXECDIR/hpcinit, the configured directory: an installed binary.
 * malloc'd.
 */
char *proc_helper_path(const char *name);
/*
 * The running binary's directory when it is hpcinit's build tree, else NULL:
 * it holds configure's config.status, and the marker, the binary, the
 * directory and every directory above it up to / are owned by root or by
 * this process's user and not writable by group or others (a root-owned
 * sticky directory such as /tmp excepted): root started from a build in a
 * user's home never runs that user's helpers.  A marker that fails these
 * checks is logged once, naming what failed.  An installed binary (/usr/sbin)
 * has no config.status beside it.  Decided once per process.
 */
const char *proc_build_dir(void);
/*
 * Children stuck in the kernel: where their records are kept (a run sets
 * <root>/run/hpcinit/stuck; NULL, the default: none are kept, keys are not
 * checked).
 */
void proc_stuck_dir(const char *dir);
/*
 * 1 when key's recorded child is still stuck: the same process (pid and
 * /proc/PID/stat start time) still asleep in the kernel (state D); st is
 * filled.  0 otherwise; a record of a child that ended is removed.
 */
int proc_stuck_find(const char *key, struct proc_stuck *st);
/* "still blocked since TIME (pid N, waiting in WCHAN): WHAT" */
void proc_stuck_text(const struct proc_stuck *st, struct strbuf *sb);
/* Find a program in the fixed safe PATH (under no root). malloc'd or NULL. */
char *proc_which(const char *name);

#endif
