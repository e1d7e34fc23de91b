// SMPI reference for bench/allreduce_scale_bench: one MPI_Allreduce of BYTES over shared (folded) buffers with a
// no-op reduction, so that SMPI simulates the network and nothing else. Built with smpicc when SimGrid ships it.
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
static void noop(void* in, void* inout, int* len, MPI_Datatype* t) { (void)in; (void)inout; (void)len; (void)t; }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long bytes = atol(argv[1]);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char* a = SMPI_SHARED_MALLOC(bytes); char* b = SMPI_SHARED_MALLOC(bytes);
  MPI_Op op; MPI_Op_create(noop, 1, &op);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  MPI_Allreduce(a, b, (int)(bytes / 4), MPI_FLOAT, op, MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  if (rank == 0) printf("smpi_allreduce_seconds %.9f\n", t1 - t0);
  SMPI_SHARED_FREE(a); SMPI_SHARED_FREE(b);
  MPI_Finalize();
  return 0;
}
