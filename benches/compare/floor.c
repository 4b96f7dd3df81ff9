/* The HDF5 library's own cost of listing a dataset's chunks: open the file and the dataset,
 * H5Dchunk_iter with a callback that only counts. Built by benches/compare/run against the
 * static HDF5 that cargo built for vzarr (same version, same build options), so it is the
 * floor of what any scanner on top of that library can do.
 *
 *   h5floor FILE DATASET   -> {"open": s, "iterate": s, "chunks": n, "hdf5": "x.y.z"}
 */
#include <hdf5.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int count(const hsize_t *offset, unsigned filter_mask, haddr_t addr, hsize_t size,
                 void *op_data) {
  (void)offset; (void)filter_mask; (void)addr; (void)size;
  ++*(unsigned long long *)op_data;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: h5floor FILE DATASET\n");
    return 2;
  }
  double t0 = now();
  hid_t f = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return 1;
  hid_t d = H5Dopen2(f, argv[2], H5P_DEFAULT);
  if (d < 0) return 1;
  double t1 = now();
  unsigned long long n = 0;
  if (H5Dchunk_iter(d, H5P_DEFAULT, count, &n) < 0) return 1;
  double t2 = now();
  H5Dclose(d);
  H5Fclose(f);
  unsigned maj, min, rel;
  H5get_libversion(&maj, &min, &rel);
  printf("{\"open\": %.6f, \"iterate\": %.6f, \"chunks\": %llu, \"hdf5\": \"%u.%u.%u\"}\n",
         t1 - t0, t2 - t1, n, maj, min, rel);
  return 0;
}
