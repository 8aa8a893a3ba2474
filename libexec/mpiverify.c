/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-mpiverify: the cluster check "hpcinit verify" runs with mpirun,
 * one rank per node (--map-by node).
 *
 *   1. every rank reports its host name (hello);
 *   2. the ranks pair up by a round-robin schedule (the circle method):
 *      round R of N-1 (N rounded up to even; one rank sits out when N is
 *      odd) pairs every rank with a different partner, so --round 0, 1, ...
 *      N-2 over successive runs measure every pair of nodes once, each run
 *      O(N) work with each rank in one pair.  All pairs of a round run at
 *      once;
 *   3. each pair measures round trips at 8, 64 and 512 bytes (median of
 *      --iters, halved: the latency the Azure documentation quotes for
 *      messages up to 512 B) and 4 MiB ping-pong bandwidth (HPC Pack's
 *      pair test size);
 *   4. rank 0 prints one parseable line per pair and a result line, and
 *      exits 1 naming the worst pair above --max-latency-us or below
 *      --min-bw-mibps.
 *
 * Output (stdout of rank 0), one record a line, key=value fields:
 *   hello rank=0 host=node1
 *   pair ranks=0-3 hosts=node1,node4 latency_us=7.10 lat8_us=6.90 lat64_us=7.00 lat512_us=7.10 bw_MiBps=1180.3
 *   result status=ok nodes=4 pairs=2 round=0 rounds=3 max_latency_us=9.20 slowest=node2,node3
 *          min_bw_MiBps=900.1 narrowest=node1,node4
 * status is ok, slow (above or below a limit) or error (two ranks on one host).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "number.h"

#define HOST_LEN 256
#define BIG (4 * 1024 * 1024)
static const int small_sizes[] = { 8, 64, 512 };
#define N_SMALL 3
#define TAG_PING 1
#define TAG_RESULT 2
#define MAX_ITERS 1000000

struct opts {
	double max_latency_us;  /* 0: no limit */
	double min_bw_mibps;    /* 0: no limit */
	long iters;             /* small-message round trips */
	long bw_iters;          /* 4 MiB round trips */
	long round;             /* the round-robin round (taken modulo the number of rounds) */
};

/* What a pair measured: latency per small size, the worst of them, bandwidth. */
#define N_RES (N_SMALL + 2)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	o->max_latency_us = 0;
	o->min_bw_mibps = 0;
	o->iters = 1000;
	o->bw_iters = 20;
	o->round = 0;
	for (int i = 1; i < argc; i++) {
		long long n;

		if (i + 1 >= argc)
			return -EINVAL;
		if (strcmp(argv[i], "--max-latency-us") == 0 || strcmp(argv[i], "--min-bw-mibps") == 0) {
			double *dst = argv[i][3] == 'a' ? &o->max_latency_us : &o->min_bw_mibps;

			if (!num_double(argv[++i], 0, 1e12, dst))
				return -EINVAL;
		} else if (strcmp(argv[i], "--round") == 0) {
			if (!num_ll(argv[++i], 0, LONG_MAX, &n))
				return -EINVAL;
			o->round = (long)n;
		} else if (strcmp(argv[i], "--iters") == 0 || strcmp(argv[i], "--bw-iters") == 0) {
			long *dst = argv[i][2] == 'i' ? &o->iters : &o->bw_iters;

			if (!num_ll(argv[++i], 1, MAX_ITERS, &n))
				return -EINVAL;
			*dst = (long)n;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The round-robin schedule: n ranks (even; an odd count gets a phantom rank
 * n-1 that sits out), n-1 rounds.  Rank n-1 stays put, the others turn
 * around it: in round r, rank r%(n-1) meets rank n-1 and the ranks at equal
 * distance on either side of it meet each other.  -1: no partner this round.
 */
static int partner_of(int rank, int size, long round)
{
	int n = size + (size & 1), m = n - 1, r = (int)(round % m), p;

	if (size < 2)
		return -1;
	if (rank == n - 1)
		p = r;
	else if (rank == r)
		p = n - 1;
	else
		p = ((2 * r - rank) % m + m) % m;
	return p < size ? p : -1;
}

/* The initiator of a pair (the lower rank) measures; the responder echoes. */
static void pingpong(int partner, int initiator, const struct opts *o, char *buf, double *res)
{
	double *dt = NULL, t0;
	long warm = o->iters / 10 + 1;

	if (initiator)
		dt = calloc((size_t)o->iters, sizeof(*dt));
	for (int s = 0; s < N_SMALL; s++) {
		int len = small_sizes[s];

		for (long i = 0; i < warm + o->iters; i++) {
			if (initiator) {
				t0 = MPI_Wtime();
				MPI_Send(buf, len, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD);
				MPI_Recv(buf, len, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				if (i >= warm && dt)
					dt[i - warm] = MPI_Wtime() - t0;
			} else {
				MPI_Recv(buf, len, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				MPI_Send(buf, len, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD);
			}
		}
		if (initiator) {
			if (dt) {
				qsort(dt, (size_t)o->iters, sizeof(*dt), cmp_double);
				res[s] = dt[o->iters / 2] / 2 * 1e6;
			} else {
				res[s] = -1;
			}
		}
	}
	t0 = 0;
	for (long i = -2; i < o->bw_iters; i++) {
		if (i == 0)
			t0 = MPI_Wtime();
		if (initiator) {
			MPI_Send(buf, BIG, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD);
			MPI_Recv(buf, BIG, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, BIG, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, BIG, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD);
		}
	}
	if (initiator) {
		double el = MPI_Wtime() - t0, worst = -1;

		for (int s = 0; s < N_SMALL; s++)
			if (res[s] > worst)
				worst = res[s];
		res[N_SMALL] = worst;
		res[N_SMALL + 1] = el > 0 ? 2.0 * BIG * (double)o->bw_iters / el / (1024.0 * 1024.0) : 0;
	}
	free(dt);
}

/*
 * Rank 0: collect each pair's measurement (its own in mine), print a line a
 * pair and the result line, and judge: 1 when two ranks share a host or a
 * pair is over a limit, else 0.
 */
static int judge(const struct opts *o, int size, const char *hosts, const double *mine)
{
	double max_lat = 0, min_bw = 0;
	int slow = -1, narrow = -1, same = -1, pairs = 0, rounds = size < 2 ? 0 : size + (size & 1) - 1;
	int *with = calloc((size_t)size, sizeof(int)), status = 0;

	for (int i = 0; i < size; i++) {
		double res[N_RES];
		int j = partner_of(i, size, o->round);
		const char *a = hosts + (size_t)i * HOST_LEN, *b;

		if (j <= i)
			continue;
		b = hosts + (size_t)j * HOST_LEN;
		with[i] = j;
		if (i == 0)
			memcpy(res, mine, sizeof(res));
		else
			MPI_Recv(res, N_RES, MPI_DOUBLE, i, TAG_RESULT, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		printf("pair ranks=%d-%d hosts=%s,%s latency_us=%.2f lat8_us=%.2f lat64_us=%.2f "
		       "lat512_us=%.2f bw_MiBps=%.1f\n", i, j, a, b, res[N_SMALL], res[0], res[1], res[2],
		       res[N_SMALL + 1]);
		if (strcmp(a, b) == 0 && same < 0)
			same = i;
		if (slow < 0 || res[N_SMALL] > max_lat) {
			max_lat = res[N_SMALL];
			slow = i;
		}
		if (narrow < 0 || res[N_SMALL + 1] < min_bw) {
			min_bw = res[N_SMALL + 1];
			narrow = i;
		}
		pairs++;
	}
	if (same >= 0) {
		const char *a = hosts + (size_t)same * HOST_LEN;

		printf("result status=error nodes=%d pairs=%d reason=same-host host=%s\n",
		       size, pairs, a);
		fprintf(stderr, "hpcinit-mpiverify: ranks %d and %d run on the same host %s: "
			"the hostfile lists it twice or mpirun did not map by node\n",
			same, with[same], a);
		status = 1;
	} else if (slow < 0) {
		printf("result status=ok nodes=%d pairs=0\n", size);
	} else {
		const char *a = hosts + (size_t)slow * HOST_LEN, *b = hosts + (size_t)with[slow] * HOST_LEN;
		const char *na = hosts + (size_t)narrow * HOST_LEN, *nb = hosts + (size_t)with[narrow] * HOST_LEN;
		int over = o->max_latency_us > 0 && max_lat > o->max_latency_us;
		int under = o->min_bw_mibps > 0 && min_bw < o->min_bw_mibps;

		printf("result status=%s nodes=%d pairs=%d round=%ld rounds=%d max_latency_us=%.2f "
		       "slowest=%s,%s min_bw_MiBps=%.1f narrowest=%s,%s", over || under ? "slow" : "ok",
		       size, pairs, o->round % rounds, rounds, max_lat, a, b, min_bw, na, nb);
		if (o->max_latency_us > 0)
			printf(" limit_us=%g", o->max_latency_us);
		if (o->min_bw_mibps > 0)
			printf(" limit_MiBps=%g", o->min_bw_mibps);
		printf("\n");
		if (over) {
			fprintf(stderr, "hpcinit-mpiverify: pair %s <-> %s: latency %.2f us is "
				"above %g us\n", a, b, max_lat, o->max_latency_us);
			status = 1;
		}
		if (under) {
			fprintf(stderr, "hpcinit-mpiverify: pair %s <-> %s: bandwidth %.1f MiB/s is "
				"below %g MiB/s\n", na, nb, min_bw, o->min_bw_mibps);
			status = 1;
		}
	}
	fflush(stdout);
	free(with);
	return status;
}

int main(int argc, char **argv)
{
	struct opts o;
	char host[HOST_LEN] = "";
	char *hosts = NULL, *buf;
	double mine[N_RES] = { -1, -1, -1, -1, 0 };
	int rank, size, status = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (parse_opts(argc, argv, &o) < 0) {
		if (rank == 0)
			fprintf(stderr, "usage: hpcinit-mpiverify [--max-latency-us N] [--min-bw-mibps N] "
				"[--iters N] [--bw-iters N] [--round R]\n");
		MPI_Finalize();
		return 2;
	}
	{
		/* MPI's own name for the host this rank runs on (the node's host name in both MPIs) */
		char pname[MPI_MAX_PROCESSOR_NAME + 1] = "";
		int plen = 0;

		if (MPI_Get_processor_name(pname, &plen) != MPI_SUCCESS || plen <= 0)
			snprintf(host, sizeof(host), "rank%d", rank);
		else
			snprintf(host, sizeof(host), "%.*s", plen, pname);
	}
	if (rank == 0)
		hosts = calloc((size_t)size, HOST_LEN);
	MPI_Gather(host, HOST_LEN, MPI_CHAR, hosts, HOST_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (int i = 0; i < size; i++)
			printf("hello rank=%d host=%s\n", i, hosts + (size_t)i * HOST_LEN);
		fflush(stdout);
	}

	buf = calloc(1, BIG);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 3);
	{
		int partner = partner_of(rank, size, o.round);

		MPI_Barrier(MPI_COMM_WORLD);
		if (partner > rank)
			pingpong(partner, 1, &o, buf, mine);
		else if (partner >= 0)
			pingpong(partner, 0, &o, buf, NULL);
	}
	free(buf);

	/* A pair's initiator is its lower rank; rank 0 collects and judges. */
	if (rank != 0 && partner_of(rank, size, o.round) > rank)
		MPI_Send(mine, N_RES, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD);
	if (rank == 0) {
		status = judge(&o, size, hosts, mine);
		free(hosts);
	}
	/*
	 * Every rank exits with the verdict: when only rank 0 fails, mpirun
	 * aborts the others and its teardown takes seconds.
	 */
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return status;
}
