// combblas.cpp: SpGEMM baseline with CombBLAS 2D SUMMA (Mult_AnXBn_Synch).
//
// Reads a Matrix Market coordinate file with SpParMat::ParallelReadMM
// (real, integer or pattern; general or symmetric, symmetric files expanded,
// skew-symmetric and complex files refused,
// pattern entries 1.0, duplicates summed) into
// SpParMat<int64_t, double, SpDCCols<int64_t, double>> on a square
// sqrt(np) x sqrt(np) process grid, copies it to B (the SUMMA routine wants
// non-aliased operands) and times C = A*B over PlusTimesSRing<double,double>.
// Each rep: MPI_Barrier, MPI_Wtime around Mult_AnXBn_Synch, max over ranks;
// the reported seconds are the median of --reps such maxima (rank 0 prints).
//
// usage: mpirun -np P combblas [--reps R] FILE.mtx     (P a perfect square)
// stdout: one line of JSON from rank 0; everything else (including
// CombBLAS's own chatter) is redirected to stderr.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "CombBLAS/CombBLAS.h"

using namespace combblas;
typedef SpDCCols<int64_t, double> DCCols;
typedef SpParMat<int64_t, double, DCCols> PSpMat;
typedef PlusTimesSRing<double, double> SR;

int main(int argc, char **argv) {
  // CombBLAS prints progress to std::cout; keep stdout for the JSON line only.
  fflush(stdout);
  int json_fd = dup(1);
  dup2(2, 1);

  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);

  int reps = 3;
  std::string path;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--reps") && a + 1 < argc)
      reps = atoi(argv[++a]);
    else if (argv[a][0] == '-')
      path.clear(), reps = -1;
    else
      path = argv[a];
  }
  if (path.empty() || reps < 1) {
    if (rank == 0)
      fprintf(stderr, "usage: mpirun -np P combblas [--reps R] FILE.mtx\n");
    MPI_Finalize();
    return 2;
  }
  int q = (int)std::lround(std::sqrt((double)np));
  if (q * q != np) {
    if (rank == 0)
      fprintf(stderr, "combblas: np=%d is not a perfect square (2D grid)\n", np);
    MPI_Finalize();
    return 2;
  }
  // ParallelReadMM expands symmetric/hermitian files but reads
  // skew-symmetric ones as general and cannot read complex ones: refuse those.
  int bad = 0;
  if (rank == 0) {
    FILE *f = fopen(path.c_str(), "r");
    char banner[256] = "";
    if (!f || !fgets(banner, sizeof banner, f)) {
      fprintf(stderr, "combblas: cannot read %s\n", path.c_str());
      bad = 1;
    } else {
      for (char *c = banner; *c; c++) *c = (char)tolower((unsigned char)*c);
      if (strncmp(banner, "%%matrixmarket matrix coordinate", 32) != 0 ||
          strstr(banner, "skew-symmetric") || strstr(banner, "complex")) {
        fprintf(stderr, "combblas: %s: unsupported Matrix Market type: %s",
                path.c_str(), banner);
        bad = 1;
      }
    }
    if (f) fclose(f);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (bad) {
    MPI_Finalize();
    return 2;
  }
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif

  {
    std::shared_ptr<CommGrid> grid(new CommGrid(MPI_COMM_WORLD, q, q));
    double t0 = MPI_Wtime();
    PSpMat A(grid);
    A.ParallelReadMM(path, true, std::plus<double>());
    int64_t n = A.getnrow(), ncol = A.getncol();
    int64_t nnz_a = A.getnnz();
    if (rank == 0)
      fprintf(stderr,
              "combblas: %s: %lld x %lld, nnz(A) = %lld, read in %.2fs, "
              "grid %dx%d, %d OpenMP thread(s) per rank\n",
              path.c_str(), (long long)n, (long long)ncol, (long long)nnz_a,
              MPI_Wtime() - t0, q, q, threads);
    if (n != ncol) {
      if (rank == 0) fprintf(stderr, "combblas: A*A needs a square matrix\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    PSpMat B(A);

    std::vector<double> secs;
    int64_t nnz_c = 0;
    double sum_c = 0;
    for (int r = 0; r < reps; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double s = MPI_Wtime();
      PSpMat C = Mult_AnXBn_Synch<SR, double, DCCols>(A, B);
      double local = MPI_Wtime() - s, maxt;
      MPI_Allreduce(&local, &maxt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      secs.push_back(maxt);
      nnz_c = C.getnnz();
      if (r == reps - 1) {
        FullyDistVec<int64_t, double> colsum =
            C.Reduce(Column, std::plus<double>(), 0.0);
        sum_c = colsum.Reduce(std::plus<double>(), 0.0);
      }
      if (rank == 0)
        fprintf(stderr, "combblas: rep %d: %.4fs, nnz(C) = %lld\n", r, maxt,
                (long long)nnz_c);
    }
    std::sort(secs.begin(), secs.end());
    double med = reps % 2 ? secs[reps / 2]
                          : 0.5 * (secs[reps / 2 - 1] + secs[reps / 2]);
    if (rank == 0) {
      char line[512];
      int len = snprintf(
          line, sizeof line,
          "{\"tool\":\"combblas\",\"version\":\"1.6.2\",\"np\":%d,"
          "\"threads\":%d,\"n\":%lld,\"nnz_a\":%lld,\"nnz_c\":%lld,"
          "\"sum_c\":%.17g,\"seconds\":%.6f,\"min_seconds\":%.6f,"
          "\"stat\":\"median\",\"reps\":%d}\n",
          np, threads, (long long)n, (long long)nnz_a, (long long)nnz_c,
          sum_c, med, secs[0], reps);
      if (write(json_fd, line, len) != len) perror("combblas: write");
    }
  }
  MPI_Finalize();
  return 0;
}
