/* SPDX-License-Identifier: MIT */
/*
 * A module for test_proc: the main that proc_start_module enters in a forked
 * child (as libexec/hpcinit-etcd.so's).  It prints what the child is made
 * of: its arguments, its environment, SIGTERM's disposition, its first line
 * of stdin and whether fd 3 is open; it exits 7.
 */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((visibility("default"))) int test_module_main(int argc, char **argv);
__attribute__((visibility("default"))) int test_module_main(int argc, char **argv)
{
	struct sigaction sa;
	char line[128] = "";
	const char *env = getenv("HPCINIT_TEST_ENV");

	sigaction(SIGTERM, NULL, &sa);
	if (!fgets(line, sizeof(line), stdin))
		snprintf(line, sizeof(line), "(none)\n");
	printf("argc %d", argc);
	for (int i = 1; i < argc; i++)
		printf(" [%s]", argv[i]);
	printf(" env %s sigterm %s fd3 %s stdin %s", env ? env : "-",
	       sa.sa_handler == SIG_DFL ? "default" : "caught", fcntl(3, F_GETFD) < 0 ? "closed" : "open", line);
	return 7;
}
