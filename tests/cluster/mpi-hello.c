/* SPDX-License-Identifier: MIT */
/* MPI hello for the simulated cluster: every rank reports its host, and rank 0 checks the count. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char host[256] = "";
	int rank = 0, size = 0, one = 1, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	gethostname(host, sizeof(host) - 1);
	printf("hello from rank %d of %d on %s\n", rank, size, host);
	fflush(stdout);
	/* A collective across every rank: proves they talk, not just that they started. */
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("allreduce: %d of %d ranks\n", sum, size);
	MPI_Finalize();
	return sum == size ? 0 : 1;
}
