/* SPDX-License-Identifier: MIT */
/* The mpi module's entry point for "hpcinit verify". */
#ifndef HPCINIT_MPI_H
#define HPCINIT_MPI_H

struct ctx;
struct report;

/*
 * Run hpcinit-mpiverify with mpirun over <hostfile.dir>/hostfile.openmpi:
 * hello from every node, then latency and bandwidth between neighbour
 * pairs.  Fills r (one detail per pair, the slow pair in the summary) and
 * returns 0, or -errno when it could not run.  Uses c->deadline_ms when
 * set (retrying while peers are not reachable yet), else 2 minutes.
 * Runs as the first ssh.users account when started as root.
 */
int mpi_verify(struct ctx *c, struct report *r);

#endif
