// graphblas.c: SpGEMM baseline with SuiteSparse:GraphBLAS.
//
// Reads a Matrix Market coordinate file (real, integer or pattern; general,
// symmetric or skew-symmetric; pattern entries are 1.0, symmetric files are
// expanded to both triangles, duplicates are summed), builds a GrB_FP64
// matrix A and times C = A*A over GrB_PLUS_TIMES_SEMIRING_FP64 with GrB_mxm.
// Only the product is timed (GrB_mxm + GrB_Matrix_wait(MATERIALIZE) +
// GrB_Matrix_nvals); the reported seconds are the median of --reps runs.
//
// usage: graphblas [--threads T] [--reps R] FILE.mtx
// stdout: one line of JSON; everything else goes to stderr.
#include <GraphBLAS.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    GrB_Info info_ = (call);                                                 \
    if (info_ != GrB_SUCCESS) {                                              \
      fprintf(stderr, "graphblas: %s failed at %s:%d: info %d\n", #call,     \
              __FILE__, __LINE__, (int)info_);                               \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "graphblas: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(2);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Matrix Market coordinate reader. Fills 0-based I, J and X (expanded for
// symmetric / skew-symmetric files).
typedef struct {
  uint64_t nrows, ncols, nnz_file, nnz;  // nnz: tuples after expansion
  GrB_Index *I, *J;
  double *X;
  int pattern;
  const char *symmetry;
} mm_t;

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) die("cannot open %s", path);
  if (fseek(f, 0, SEEK_END) != 0) die("cannot seek %s", path);
  long sz = ftell(f);
  if (sz < 0) die("cannot size %s", path);
  rewind(f);
  char *buf = malloc((size_t)sz + 1);
  if (!buf) die("out of memory reading %s", path);
  if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) die("short read on %s", path);
  fclose(f);
  buf[sz] = '\0';
  *len = (size_t)sz;
  return buf;
}

static char *next_line(char *p) {
  while (*p && *p != '\n') p++;
  return *p ? p + 1 : p;
}

static void mm_read(const char *path, mm_t *m) {
  size_t len;
  char *buf = read_all(path, &len);
  char *p = buf;
  char banner[64], object[64], format[64], field[64], symmetry[64];
  if (sscanf(p, "%63s %63s %63s %63s %63s", banner, object, format, field,
             symmetry) != 5 ||
      strcasecmp(banner, "%%MatrixMarket") != 0)
    die("%s: missing %%%%MatrixMarket header", path);
  if (strcasecmp(object, "matrix") != 0 ||
      strcasecmp(format, "coordinate") != 0)
    die("%s: only 'matrix coordinate' files are supported", path);
  int skew = 0, sym = 0;
  if (strcasecmp(field, "pattern") == 0)
    m->pattern = 1;
  else if (strcasecmp(field, "real") == 0 || strcasecmp(field, "integer") == 0 ||
           strcasecmp(field, "double") == 0)
    m->pattern = 0;
  else
    die("%s: unsupported field (complex?)", path);
  if (strcasecmp(symmetry, "general") == 0)
    m->symmetry = "general";
  else if (strcasecmp(symmetry, "symmetric") == 0 ||
           strcasecmp(symmetry, "hermitian") == 0)
    sym = 1, m->symmetry = "symmetric";
  else if (strcasecmp(symmetry, "skew-symmetric") == 0)
    skew = 1, m->symmetry = "skew-symmetric";
  else
    die("%s: unknown symmetry", path);

  p = next_line(p);
  while (*p == '%' || *p == '\n' || *p == '\r') p = next_line(p);
  unsigned long long nr, nc, nz;
  if (sscanf(p, "%llu %llu %llu", &nr, &nc, &nz) != 3)
    die("%s: bad size line", path);
  p = next_line(p);
  m->nrows = nr, m->ncols = nc, m->nnz_file = nz;
  uint64_t cap = (sym || skew) ? 2 * nz : nz;
  m->I = malloc(cap * sizeof(GrB_Index));
  m->J = malloc(cap * sizeof(GrB_Index));
  m->X = malloc(cap * sizeof(double));
  if (!m->I || !m->J || !m->X) die("out of memory for %s", path);

  uint64_t k = 0, read = 0;
  while (*p && read < nz) {
    if (*p == '%' || *p == '\n' || *p == '\r') {
      p = next_line(p);
      continue;
    }
    char *e;
    errno = 0;
    unsigned long long i = strtoull(p, &e, 10);
    if (e == p) die("%s: bad entry line", path);
    p = e;
    unsigned long long j = strtoull(p, &e, 10);
    if (e == p) die("%s: bad entry line", path);
    p = e;
    double v = 1.0;
    if (!m->pattern) {
      v = strtod(p, &e);
      if (e == p) die("%s: missing value", path);
      p = e;
    }
    if (i < 1 || i > nr || j < 1 || j > nc) die("%s: index out of range", path);
    m->I[k] = i - 1, m->J[k] = j - 1, m->X[k] = v, k++;
    if ((sym || skew) && i != j)
      m->I[k] = j - 1, m->J[k] = i - 1, m->X[k] = skew ? -v : v, k++;
    read++;
    p = next_line(p);
  }
  if (read != nz) die("%s: fewer entries than the size line says", path);
  m->nnz = k;
  free(buf);
}

int main(int argc, char **argv) {
  int threads = 0, reps = 3;
  const char *path = NULL;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--threads") == 0 && a + 1 < argc)
      threads = atoi(argv[++a]);
    else if (strcmp(argv[a], "--reps") == 0 && a + 1 < argc)
      reps = atoi(argv[++a]);
    else if (argv[a][0] == '-') {
      fprintf(stderr, "usage: graphblas [--threads T] [--reps R] FILE.mtx\n");
      return 2;
    } else
      path = argv[a];
  }
  if (!path || reps < 1) {
    fprintf(stderr, "usage: graphblas [--threads T] [--reps R] FILE.mtx\n");
    return 2;
  }

  CHECK(GrB_init(GrB_NONBLOCKING));
  if (threads > 0) CHECK(GxB_set(GxB_NTHREADS, threads));
  int nthreads = 0;
  CHECK(GxB_get(GxB_NTHREADS, &nthreads));

  double t0 = now();
  mm_t m = {0};
  mm_read(path, &m);
  GrB_Matrix A;
  CHECK(GrB_Matrix_new(&A, GrB_FP64, m.nrows, m.ncols));
  CHECK(GrB_Matrix_build_FP64(A, m.I, m.J, m.X, m.nnz, GrB_PLUS_FP64));
  CHECK(GrB_Matrix_wait(A, GrB_MATERIALIZE));
  free(m.I), free(m.J), free(m.X);
  GrB_Index nnz_a;
  CHECK(GrB_Matrix_nvals(&nnz_a, A));
  fprintf(stderr,
          "graphblas: %s: %llu x %llu, %s %s, nnz(A) = %llu, read in %.2fs, "
          "threads %d, GraphBLAS %d.%d.%d\n",
          path, (unsigned long long)m.nrows, (unsigned long long)m.ncols,
          m.pattern ? "pattern" : "real", m.symmetry,
          (unsigned long long)nnz_a, now() - t0, nthreads,
          GxB_IMPLEMENTATION_MAJOR, GxB_IMPLEMENTATION_MINOR,
          GxB_IMPLEMENTATION_SUB);
  if (m.ncols != m.nrows) die("%s: A*A needs a square matrix", path);

  double *secs = malloc(reps * sizeof(double));
  GrB_Index nnz_c = 0;
  GrB_Matrix C = NULL;
  for (int r = 0; r < reps; r++) {
    if (C) GrB_Matrix_free(&C);
    CHECK(GrB_Matrix_new(&C, GrB_FP64, m.nrows, m.ncols));
    double s = now();
    CHECK(GrB_mxm(C, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP64, A, A, NULL));
    CHECK(GrB_Matrix_wait(C, GrB_MATERIALIZE));
    CHECK(GrB_Matrix_nvals(&nnz_c, C));
    secs[r] = now() - s;
    fprintf(stderr, "graphblas: rep %d: %.4fs, nnz(C) = %llu\n", r, secs[r],
            (unsigned long long)nnz_c);
  }
  double sum_c = 0;
  CHECK(GrB_Matrix_reduce_FP64(&sum_c, NULL, GrB_PLUS_MONOID_FP64, C, NULL));
  qsort(secs, reps, sizeof(double), cmp_double);
  double med = reps % 2 ? secs[reps / 2]
                        : 0.5 * (secs[reps / 2 - 1] + secs[reps / 2]);
  printf("{\"tool\":\"graphblas\",\"version\":\"%d.%d.%d\",\"threads\":%d,"
         "\"n\":%llu,\"nnz_a\":%llu,\"nnz_c\":%llu,\"sum_c\":%.17g,"
         "\"seconds\":%.6f,\"min_seconds\":%.6f,\"stat\":\"median\","
         "\"reps\":%d}\n",
         GxB_IMPLEMENTATION_MAJOR, GxB_IMPLEMENTATION_MINOR,
         GxB_IMPLEMENTATION_SUB, nthreads, (unsigned long long)m.nrows,
         (unsigned long long)nnz_a, (unsigned long long)nnz_c, sum_c, med,
         secs[0], reps);
  GrB_Matrix_free(&C);
  GrB_Matrix_free(&A);
  free(secs);
  GrB_finalize();
  return 0;
}
