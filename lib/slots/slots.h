/* SPDX-License-Identifier: MIT */
/*
 * The ranks a node takes (lib/slots/): one per GPU where sysfs shows GPUs
 * and the spec asks for it (mpi.slots_per_gpu), else mpi.slots, else the
 * usable cores.  A library below the steps: discovery publishes it in the
 * node's record, from which hostfile and mpi read it.
 */
#ifndef HPCINIT_SLOTS_H
#define HPCINIT_SLOTS_H

#include "hpcinit.h"

/*
 * The slots this node publishes (its record, then every hostfile): one per
 * GPU with mpi.slots_per_gpu -- the usable GPUs the gpu step found
 * (c->out->gpu, OUT_GPU), or read again with a gpu section where this call
 * has no hand-off (the announce hook), else the GPUs sysfs shows -- else
 * mpi.slots when set, else cores (the usable CPU count).  Says in r which and why.
 */
unsigned slots_node(const struct ctx *c, struct report *r, unsigned cores);
/* NVIDIA and AMD GPUs under <root>/sys/bus/pci/devices (3D and display-other controllers). */
unsigned slots_count_gpus(const struct ctx *c);

#endif
