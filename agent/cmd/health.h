/* SPDX-License-Identifier: MIT */
/* hpcinit health: the Azure Application Health answer, one connection on stdin/stdout. */
#ifndef HPCINIT_HEALTH_H
#define HPCINIT_HEALTH_H

struct ctx;

/* Read one HTTP request from in_fd, answer on out_fd.  Returns the exit code. */
int health_main(const struct ctx *c, int in_fd, int out_fd);

#endif
