/* SPDX-License-Identifier: MIT */
/*
 * runstat N PROG ARGS... [:: PROG ARGS...]...: run each PROG N times (output
 * to /dev/null) and print, per PROG, one line "median_ms p90_ms peak_rss_kib".
 * Several programs are interleaved: round i runs each once, in turn, so a
 * load that comes and goes on a shared machine reaches all of them alike and
 * their ratios hold where their absolute times do not.
 * A small C parent, so the child's peak RSS (ru_maxrss from wait4) is the
 * program's own and not a copy of a big parent.  The median of an even count
 * is the mean of the middle two, the p90 the nearest rank (ceil(0.9 N)), so
 * p90 >= median for any N.  A run that does not exit 0 (or RUNSTAT_OK,
 * another accepted code) is not timed: runstat says so and fails.
 * RUNSTAT_CPU=1 adds a fourth column: the median CPU time (user + system, ms)
 * of a run, its waited-for children (the agent's helpers) included.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXPROG 16

struct prog {
	char **argv;
	double *t, *cpu;
	long maxrss;
};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One timed run of p (the i-th of n); 0, or 1 when it is not a measurement. */
static int run_one(struct prog *p, long i, long n, int ok)
{
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
		execv(p->argv[0], p->argv);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0)
		return 1;
	if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != ok)) {
		fprintf(stderr, "runstat: %s (run %ld of %ld) %s %d: not a measurement\n", p->argv[0], i + 1, n,
			WIFEXITED(status) ? "exited" : "killed by signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	p->t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	p->cpu[i] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
		    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	if (ru.ru_maxrss > p->maxrss)
		p->maxrss = ru.ru_maxrss;
	return 0;
}

int main(int argc, char **argv)
{
	struct prog progs[MAXPROG];
	int np = 0;
	long n;
	char *end;
	const char *okenv = getenv("RUNSTAT_OK");
	int ok = okenv && *okenv ? atoi(okenv) : 0;
	bool want_cpu = getenv("RUNSTAT_CPU") && !strcmp(getenv("RUNSTAT_CPU"), "1");

	if (argc < 3 || (n = strtol(argv[1], &end, 10)) <= 0 || *end) {
		fprintf(stderr, "usage: runstat N PROG ARGS... [:: PROG ARGS...]...\n");
		return 2;
	}
	for (int a = 2, start = 1; a < argc; a++) {
		bool sep = !strcmp(argv[a], "::");

		if (start && (sep || np == MAXPROG)) {
			fprintf(stderr, "runstat: at most %d programs, none empty\n", MAXPROG);
			return 2;
		}
		if (start)
			progs[np++] = (struct prog){ argv + a, calloc((size_t)n, sizeof(double)),
						     calloc((size_t)n, sizeof(double)), 0 };
		if (sep)
			argv[a] = NULL;
		start = sep;
	}
	if (!argv[argc - 1]) {
		fprintf(stderr, "runstat: no program after the last ::\n");
		return 2;
	}
	for (long i = 0; i < n; i++)
		for (int p = 0; p < np; p++)
			if (run_one(&progs[p], i, n, ok))
				return 1;
	for (int p = 0; p < np; p++) {
		double med = median(progs[p].t, n);

		printf("%.3f %.3f %ld", med, progs[p].t[(n * 9 + 9) / 10 - 1], progs[p].maxrss);
		if (want_cpu)
			printf(" %.3f", median(progs[p].cpu, n));
		printf("\n");
		free(progs[p].t);
		free(progs[p].cpu);
	}
	return 0;
}
