/* SPDX-License-Identifier: MIT */
/*
 * The memlock limit a job really gets on this node, read the way the
 * programs that set it read their files: pam_limits for a new PAM session
 * (ssh, su, login), systemd's DefaultLimitMEMLOCK for services (slurmd).
 * A library below the steps (lib/limits/): the memlock step reports it,
 * the rdma step registers memory under it; neither reaches the other.
 */
#ifndef HPCINIT_LIMITS_MEMLOCK_JOB_H
#define HPCINIT_LIMITS_MEMLOCK_JOB_H

#include "hpcinit.h"

#define MEMLOCK_UNLIMITED (-1LL)
#define MEMLOCK_UNSET (-2LL)    /* no line sets it: the session keeps what its parent had */

struct memlock_job {
	char user[64];                  /* measured for this user; "" = any non-root user ('*' lines only) */
	long long pam_soft, pam_hard;   /* bytes, MEMLOCK_UNLIMITED or MEMLOCK_UNSET */
	char pam_soft_from[256], pam_hard_from[256];    /* "file:line" of the winning line */
	long long svc_soft, svc_hard;   /* DefaultLimitMEMLOCK= of the system manager */
	char svc_from[256];
};

/*
 * What a Slurm job gets (slurm.conf(5), slurmstepd of Slurm 22.05): the
 * running slurmd's own limits (/proc/PID/limits: slurmstepd inherits them),
 * and with PropagateResourceLimits (default ALL) naming MEMLOCK the
 * submitting shell's soft limit in their place, reduced to slurmd's hard
 * limit when it asks for more ("reducing req to max").
 */
struct memlock_slurm {
	bool present;                   /* a slurm.conf was found */
	char conf[256];                 /* which: /etc/slurm/slurm.conf or a configless cache */
	bool propagates;                /* MEMLOCK comes from the submitting shell */
	char setting[160];              /* "PropagateResourceLimits=ALL (Slurm's default)", ... */
	char from[300];                 /* "file:line" of the setting, "" for the default */
	char problem[700];              /* what could not be read (an Include), both keys set, ... */
	long long slurmd_soft;          /* slurmd's unit's LimitMEMLOCK=, MEMLOCK_UNSET when none */
	char slurmd_from[300];
	char pidfile[256];              /* SlurmdPidFile (default /run/slurmd.pid) */
	long pid;                       /* the running slurmd, 0 when none runs */
	char pid_how[300];              /* how it was found: its pid file, or "a process named slurmd" */
	bool live;                      /* its /proc/PID/limits was read: */
	long long live_soft, live_hard; /* bytes or MEMLOCK_UNLIMITED */
};

/* Read slurm.conf, slurmd's unit and the running slurmd under c's root. */
void memlock_slurm_read(const struct ctx *c, struct memlock_slurm *ret);
/*
 * The memlock soft limit a job started now gets, given the submitting
 * shell's soft limit (submit: bytes, MEMLOCK_UNLIMITED, or MEMLOCK_UNSET
 * when not known); MEMLOCK_UNSET when it cannot be said (no slurmd runs,
 * or it propagates a shell's limit that is not known).
 */
long long memlock_slurm_job(const struct memlock_slurm *sl, long long submit);
/* "Max locked memory" of /proc/PID/limits under c's root: 0, or -errno. */
int memlock_proc_read(const struct ctx *c, long pid, long long *soft, long long *hard);

/* Measure both for user (NULL or "": any user). */
void memlock_job_limit(const struct ctx *c, const char *user, struct memlock_job *ret);
/* The lower soft limit of the two that are set (what a job can count on); MEMLOCK_UNSET when neither is. */
long long memlock_job_min(const struct memlock_job *j);
/* The user whose jobs count: the first of ssh.users that exists, else "" (any user). */
const char *memlock_job_user(const struct ctx *c);
/*
 * a < b for memlock limits (bytes, MEMLOCK_UNLIMITED the largest); a limit
 * not known (MEMLOCK_UNSET) is neither below nor above anything: false.  The
 * one comparison of limits (memlock step and job limits).
 */
bool memlock_lt(long long a, long long b);
/* "64 KiB", "unlimited", "unset". */
void memlock_fmt(long long bytes, char *buf, size_t n);

#endif
