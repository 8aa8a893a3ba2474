/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-mpiverify: the cluster check "hpcinit verify" runs with mpirun,
 * one rank per node (--map-by node).
 *
 *   1. every rank reports its host name (hello);
 *   2. neighbour pairs (rank i <-> i+1) measure 8-byte round trips (median
 *      of --iters, halved) and 1 MiB ping-pong bandwidth; even pairs run
 *      first, odd pairs next, so each rank is in one pair at a time and the
 *      work is O(N), not N^2;
 *   3. rank 0 prints one parseable line per pair and a result line, and
 *      exits 1 naming the slowest pair above --max-latency-us.
 *
 * Output (stdout of rank 0), one record a line, key=value fields:
 *   hello rank=0 host=node1
 *   pair ranks=0-1 hosts=node1,node2 latency_us=7.10 bw_MiBps=1180.3
 *   result status=ok nodes=4 pairs=3 max_latency_us=9.20 slowest=node2,node3 min_bw_MiBps=900.1
 * status is ok, slow (above the limit) or error (two ranks on one host).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#define HOST_LEN 256
#define SMALL 8
#define BIG (1024 * 1024)
#define TAG_PING 1
#define TAG_RESULT 2
#define MAX_ITERS 1000000

struct opts {
	double max_latency_us;  /* 0: no limit */
	long iters;             /* small-message round trips */
	long bw_iters;          /* 1 MiB round trips */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	o->max_latency_us = 0;
	o->iters = 1000;
	o->bw_iters = 20;
	for (int i = 1; i < argc; i++) {
		char *end;

		if (i + 1 >= argc)
			return -EINVAL;
		errno = 0;
		if (strcmp(argv[i], "--max-latency-us") == 0) {
			o->max_latency_us = strtod(argv[++i], &end);
			if (errno || *end || end == argv[i] || o->max_latency_us < 0)
				return -EINVAL;
		} else if (strcmp(argv[i], "--iters") == 0 || strcmp(argv[i], "--bw-iters") == 0) {
			long *dst = argv[i][2] == 'i' ? &o->iters : &o->bw_iters;

			*dst = strtol(argv[++i], &end, 10);
			if (errno || *end || end == argv[i] || *dst < 1 || *dst > MAX_ITERS)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

/* The initiator of a pair measures; the responder echoes. */
static void pingpong(int partner, int initiator, const struct opts *o, char *buf,
		     double *ret_lat_us, double *ret_bw)
{
	double *dt = NULL, t0;
	long warm = o->iters / 10 + 1;

	if (initiator)
		dt = calloc((size_t)o->iters, sizeof(*dt));
	for (long i = 0; i < warm + o->iters; i++) {
		if (initiator) {
			t0 = MPI_Wtime();
			MPI_Send(buf, SMALL, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD);
			MPI_Recv(buf, SMALL, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			if (i >= warm && dt)
				dt[i - warm] = MPI_Wtime() - t0;
		} else {
			MPI_Recv(buf, SMALL, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, SMALL, MPI_BYTE, partner, TAG_PING, MPI_COMM_WORLD);
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
		double el = MPI_Wtime() - t0;

		if (dt) {
			qsort(dt, (size_t)o->iters, sizeof(*dt), cmp_double);
			*ret_lat_us = dt[o->iters / 2] / 2 * 1e6;
		} else {
			*ret_lat_us = -1;
		}
		*ret_bw = el > 0 ? 2.0 * BIG * (double)o->bw_iters / el / (1024.0 * 1024.0) : 0;
	}
	free(dt);
}

int main(int argc, char **argv)
{
	struct opts o;
	char host[HOST_LEN] = "";
	char *hosts = NULL, *buf;
	double mine[2] = { -1, 0 };
	int rank, size, status = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (parse_opts(argc, argv, &o) < 0) {
		if (rank == 0)
			fprintf(stderr, "usage: hpcinit-mpiverify [--max-latency-us N] [--iters N] "
				"[--bw-iters N]\n");
		MPI_Finalize();
		return 2;
	}
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "rank%d", rank);
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
	for (int phase = 0; phase < 2; phase++) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank % 2 == phase && rank + 1 < size)
			pingpong(rank + 1, 1, &o, buf, &mine[0], &mine[1]);
		else if (rank >= 1 && (rank - 1) % 2 == phase)
			pingpong(rank - 1, 0, &o, buf, NULL, NULL);
	}
	free(buf);

	/* Pair i's initiator is rank i; rank 0 collects and judges. */
	if (rank != 0 && rank + 1 < size)
		MPI_Send(mine, 2, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD);
	if (rank == 0) {
		double max_lat = 0, min_bw = 0;
		int slow = -1, same = -1;

		for (int i = 0; i + 1 < size; i++) {
			double res[2];
			const char *a = hosts + (size_t)i * HOST_LEN, *b = a + HOST_LEN;

			if (i == 0)
				memcpy(res, mine, sizeof(res));
			else
				MPI_Recv(res, 2, MPI_DOUBLE, i, TAG_RESULT, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			printf("pair ranks=%d-%d hosts=%s,%s latency_us=%.2f bw_MiBps=%.1f\n",
			       i, i + 1, a, b, res[0], res[1]);
			if (strcmp(a, b) == 0 && same < 0)
				same = i;
			if (slow < 0 || res[0] > max_lat) {
				max_lat = res[0];
				slow = i;
			}
			if (i == 0 || res[1] < min_bw)
				min_bw = res[1];
		}
		if (same >= 0) {
			const char *a = hosts + (size_t)same * HOST_LEN;

			printf("result status=error nodes=%d pairs=%d reason=same-host host=%s\n",
			       size, size - 1, a);
			fprintf(stderr, "hpcinit-mpiverify: ranks %d and %d run on the same host %s: "
				"the hostfile lists it twice or mpirun did not map by node\n",
				same, same + 1, a);
			status = 1;
		} else if (slow < 0) {
			printf("result status=ok nodes=%d pairs=0\n", size);
		} else {
			const char *a = hosts + (size_t)slow * HOST_LEN, *b = a + HOST_LEN;
			int over = o.max_latency_us > 0 && max_lat > o.max_latency_us;

			printf("result status=%s nodes=%d pairs=%d max_latency_us=%.2f slowest=%s,%s "
			       "min_bw_MiBps=%.1f", over ? "slow" : "ok", size, size - 1, max_lat, a, b,
			       min_bw);
			if (o.max_latency_us > 0)
				printf(" limit_us=%g", o.max_latency_us);
			printf("\n");
			if (over) {
				fprintf(stderr, "hpcinit-mpiverify: pair %s <-> %s: latency %.2f us is "
					"above %g us\n", a, b, max_lat, o.max_latency_us);
				status = 1;
			}
		}
		fflush(stdout);
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
