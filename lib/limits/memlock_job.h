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
 * What a Slurm job gets (slurm.conf(5), Slurm 22.05): with
 * PropagateResourceLimits (default ALL) naming MEMLOCK, slurmd applies the
 * submitting shell's soft limit to the job, not its own.
 */
struct memlock_slurm {
	bool present;                   /* a slurm.conf was found */
	char conf[256];                 /* which: /etc/slurm/slurm.conf or a configless cache */
	bool propagates;                /* MEMLOCK comes from the submitting shell */
	char setting[160];              /* "PropagateResourceLimits=ALL (Slurm's default)", ... */
	char from[300];                 /* "file:line" of the setting, "" for the default */
	char problem[700];              /* what could not be read (an Include), both keys set, ... */
	long long slurmd_soft;          /* slurmd.service's LimitMEMLOCK=, MEMLOCK_UNSET when none */
	char slurmd_from[300];
};

/* Read slurm.conf (and slurmd.service) under c's root. */
void memlock_slurm_read(const struct ctx *c, struct memlock_slurm *ret);

/* Measure both for user (NULL or "": any user). */
void memlock_job_limit(const struct ctx *c, const char *user, struct memlock_job *ret);
/* The lower soft limit of the two that are set (what a job can count on); MEMLOCK_UNSET when neither is. */
long long memlock_job_min(const struct memlock_job *j);
/* The user whose jobs count: the first of ssh.users that exists, else "" (any user). */
const char *memlock_job_user(const struct ctx *c);
/* "64 KiB", "unlimited", "unset". */
void memlock_fmt(long long bytes, char *buf, size_t n);

#endif
