/* SPDX-License-Identifier: MIT */
/*
 * The probe side of the rdma helper (libexec/hpcinit-rdma-probe), shared by
 * both ops tables: step announcements, and the memlock limit the probe runs
 * under (the one an MPI rank will get).
 */
#include "config.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rdma-probe.h"

void probe_step(struct probe_io *io, enum probe_step s)
{
	probe_emit_step(io->fd, s);
}

int probe_drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].inheritable &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

/*
 * On a first boot the memlock limit this spec sets is not yet in force for
 * anyone (hpcinit itself was started with the old one).  The probe runs
 * with the limit new sessions and services will get, as an MPI rank will;
 * where raising is not allowed (no CAP_SYS_RESOURCE) the limit in force stays
 * and the ENOMEM message names it.
 */
void probe_raise_memlock(uint64_t bytes)
{
	struct rlimit rl;

	rl.rlim_cur = rl.rlim_max = bytes == UINT64_MAX ? RLIM_INFINITY : (rlim_t)bytes;
	(void)setrlimit(RLIMIT_MEMLOCK, &rl);
}

void probe_read_memlock(struct probe_result *res)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
		res->memlock_cur = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
		res->memlock_max = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_max;
	}
}

