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
 * set, else 2 minutes.  During apply it retries until then while nodes
 * refuse the login (they may still be setting up); for "hpcinit verify"
 * (c->verify) it tries once.
 * Runs as the first ssh.users account when started as root.
 */
int mpi_verify(struct ctx *c, struct report *r);

#endif
