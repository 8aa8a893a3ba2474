/* SPDX-License-Identifier: MIT */
/*
 * runstat N PROG ARGS...: run PROG N times (output to /dev/null), print one line
 * "median_ms p90_ms peak_rss_kib".  A small C parent, so the child's peak RSS
 * (ru_maxrss from wait4) is the program's own and not a copy of a big parent.
 * The median of an even count is the mean of the middle two, the p90 the
 * nearest rank (ceil(0.9 N)), so p90 >= median for any N (with N = 2 it was
 * the faster run against the slower).  A run that does not exit 0 (or
 * RUNSTAT_OK, another accepted code) is not timed: runstat says so and fails.
 * RUNSTAT_CPU=1 adds a fourth column: the median CPU time (user + system, ms)
 * of a run, its waited-for children (the agent's helpers) included.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n, maxrss = 0;
	double *t, *cpu;
	char *end;
	const char *okenv = getenv("RUNSTAT_OK");
	int ok = okenv && *okenv ? atoi(okenv) : 0;

	if (argc < 3 || (n = strtol(argv[1], &end, 10)) <= 0 || *end) {
		fprintf(stderr, "usage: runstat N PROG ARGS...\n");
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	cpu = calloc((size_t)n, sizeof(*cpu));
	for (long i = 0; i < n; i++) {
		struct timespec a, b;
		struct rusage ru;
		int status;
		pid_t pid;

		clock_gettime(CLOCK_MONOTONIC, &a);
		pid = fork();
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 1);
			dup2(fd, 2);
			execv(argv[2], argv + 2);
			_exit(127);
		}
		if (pid < 0 || wait4(pid, &status, 0, &ru) < 0)
			return 1;
		if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != ok)) {
			fprintf(stderr, "runstat: %s (run %ld of %ld) %s %d: not a measurement\n", argv[2], i + 1, n,
				WIFEXITED(status) ? "exited" : "killed by signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		cpu[i] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
		if (ru.ru_maxrss > maxrss)
			maxrss = ru.ru_maxrss;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%.3f %.3f %ld", n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2,
	       t[(n * 9 + 9) / 10 - 1], maxrss);
	if (getenv("RUNSTAT_CPU") && !strcmp(getenv("RUNSTAT_CPU"), "1")) {
		qsort(cpu, (size_t)n, sizeof(*cpu), cmp);
		printf(" %.3f", n % 2 ? cpu[n / 2] : (cpu[n / 2 - 1] + cpu[n / 2]) / 2);
	}
	printf("\n");
	free(t);
	free(cpu);
	return 0;
}
