/*
 * gpulab-vectoradd: the compute image's program (toolchain/node; workplace only).
 *
 * Adds two vectors of 50000 floats on the GPU through the CUDA driver API and checks
 * the sum on the CPU, printing the lines NVIDIA's vectorAdd sample prints (the lab's
 * compute check, gpulab/kube_compute.py, requires its "Test PASSED" line), plus one
 * line per CUDA device the container sees in nvidia-smi -L's form,
 * "GPU <i>: <name> (UUID: GPU-...)", so the check can tell which GPU the kernel ran on.
 *
 * It links against nothing of CUDA: libcuda.so.1 (the driver's library, which the
 * node's runtime injects, here through CDI) is loaded with dlopen, and the kernel is
 * PTX text below, compiled by the driver at load time. So the image holds no CUDA
 * toolkit, and a container the runtime gave no driver library or no /dev/nvidia-uvm
 * fails here, saying which. Errors print "Failed to <step> (error code <name>): <text>!"
 * and exit 1, as the sample does (the compute check quotes them).
 *
 * Build: cc -O2 -o gpulab-vectoradd vectoradd.c -ldl
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult; /* CUDA_SUCCESS == 0 */
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct { char bytes[16]; } CUuuid;

/* cuda.h's ABI names (the _v2 entry points are what cuda.h maps the plain names to). */
static CUresult (*cuInit)(unsigned int);
static CUresult (*cuDriverGetVersion)(int *);
static CUresult (*cuDeviceGetCount)(int *);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDeviceGetName)(char *, int, CUdevice);
static CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice);
static CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuCtxSynchronize)(void);
static CUresult (*cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuModuleUnload)(CUmodule);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, CUstream, void **, void **);
static CUresult (*cuGetErrorName)(CUresult, const char **);
static CUresult (*cuGetErrorString)(CUresult, const char **);

#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

/* c[i] = a[i] + b[i] for i < n: one thread per element. */
static const char kPtx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry vector_add(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)\n"
    "{\n"
    "  .reg .pred %p;\n"
    "  .reg .b32 %r<5>;\n"
    "  .reg .f32 %f<4>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [pa];\n"
    "  ld.param.u64 %rd2, [pb];\n"
    "  ld.param.u64 %rd3, [pc];\n"
    "  ld.param.u32 %r1, [pn];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.u32 %r2, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p, %r2, %r1;\n"
    "  @%p bra done;\n"
    "  mul.wide.u32 %rd4, %r2, 4;\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  cvta.to.global.u64 %rd2, %rd2;\n"
    "  cvta.to.global.u64 %rd3, %rd3;\n"
    "  add.u64 %rd5, %rd1, %rd4;\n"
    "  add.u64 %rd6, %rd2, %rd4;\n"
    "  add.u64 %rd7, %rd3, %rd4;\n"
    "  ld.global.f32 %f1, [%rd5];\n"
    "  ld.global.f32 %f2, [%rd6];\n"
    "  add.f32 %f3, %f1, %f2;\n"
    "  st.global.f32 [%rd7], %f3;\n"
    "done:\n"
    "  ret;\n"
    "}\n";

static int fail(const char *step, CUresult r) {
  const char *name = "?", *text = "?";
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  fprintf(stderr, "Failed to %s (error code %s): %s!\n", step, name, text);
  fflush(stdout);
  exit(EXIT_FAILURE);
}

#define CHECK(step, call)            \
  do {                               \
    CUresult r_ = (call);            \
    if (r_ != 0) return fail(step, r_); \
  } while (0)

static void *sym(void *lib, const char *name, int required) {
  void *p = dlsym(lib, name);
  if (!p && required) {
    fprintf(stderr, "Failed to find %s in libcuda.so.1 (%s): the driver library is too old or not NVIDIA's!\n",
            name, dlerror());
    exit(EXIT_FAILURE);
  }
  return p;
}

static void uuid_text(const CUuuid *u, char out[41]) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  snprintf(out, 41, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
           b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int main(void) {
  const unsigned n = 50000, threads = 256, blocks = (n + threads - 1) / threads;
  const size_t bytes = n * sizeof(float);
  printf("[Vector addition of %u elements]\n", n);
  fflush(stdout);

  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr,
            "Failed to load libcuda.so.1 (%s): the container has no CUDA driver library; the node's runtime "
            "did not inject the driver (CDI spec, NVIDIA runtime)!\n",
            dlerror());
    return EXIT_FAILURE;
  }
  cuGetErrorName = sym(lib, "cuGetErrorName", 0);
  cuGetErrorString = sym(lib, "cuGetErrorString", 0);
  cuInit = sym(lib, "cuInit", 1);
  cuDriverGetVersion = sym(lib, "cuDriverGetVersion", 1);
  cuDeviceGetCount = sym(lib, "cuDeviceGetCount", 1);
  cuDeviceGet = sym(lib, "cuDeviceGet", 1);
  cuDeviceGetName = sym(lib, "cuDeviceGetName", 1);
  cuDeviceGetUuid = sym(lib, "cuDeviceGetUuid_v2", 0);
  if (!cuDeviceGetUuid) cuDeviceGetUuid = sym(lib, "cuDeviceGetUuid", 1);
  cuDeviceGetAttribute = sym(lib, "cuDeviceGetAttribute", 1);
  cuDevicePrimaryCtxRetain = sym(lib, "cuDevicePrimaryCtxRetain", 1);
  cuDevicePrimaryCtxRelease = sym(lib, "cuDevicePrimaryCtxRelease_v2", 0);
  if (!cuDevicePrimaryCtxRelease) cuDevicePrimaryCtxRelease = sym(lib, "cuDevicePrimaryCtxRelease", 1);
  cuCtxSetCurrent = sym(lib, "cuCtxSetCurrent", 1);
  cuCtxSynchronize = sym(lib, "cuCtxSynchronize", 1);
  cuModuleLoadData = sym(lib, "cuModuleLoadData", 1);
  cuModuleGetFunction = sym(lib, "cuModuleGetFunction", 1);
  cuModuleUnload = sym(lib, "cuModuleUnload", 1);
  cuMemAlloc = sym(lib, "cuMemAlloc_v2", 1);
  cuMemFree = sym(lib, "cuMemFree_v2", 1);
  cuMemcpyHtoD = sym(lib, "cuMemcpyHtoD_v2", 1);
  cuMemcpyDtoH = sym(lib, "cuMemcpyDtoH_v2", 1);
  cuLaunchKernel = sym(lib, "cuLaunchKernel", 1);

  CHECK("initialize the CUDA driver", cuInit(0));
  int version = 0, count = 0;
  CHECK("read the CUDA driver version", cuDriverGetVersion(&version));
  CHECK("count the CUDA devices", cuDeviceGetCount(&count));
  printf("CUDA driver API %d.%d (libcuda.so.1), %d device(s) visible\n", version / 1000, version % 1000 / 10, count);
  if (count < 1) return fail("find a CUDA device", 100); /* CUDA_ERROR_NO_DEVICE */
  for (int i = 0; i < count; i++) {
    CUdevice d;
    char name[256] = "", uuid[41];
    CUuuid u;
    int major = 0, minor = 0;
    CHECK("get a CUDA device", cuDeviceGet(&d, i));
    CHECK("read the device name", cuDeviceGetName(name, sizeof name, d));
    CHECK("read the device UUID", cuDeviceGetUuid(&u, d));
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
    uuid_text(&u, uuid);
    printf("GPU %d: %s (UUID: %s)\n", i, name, uuid);
    printf("  compute capability %d.%d\n", major, minor);
  }

  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CHECK("get CUDA device 0", cuDeviceGet(&dev, 0));
  CHECK("retain the primary context", cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK("make the context current", cuCtxSetCurrent(ctx));
  CHECK("load the vector_add PTX (driver JIT)", cuModuleLoadData(&mod, kPtx));
  CHECK("find the vector_add kernel", cuModuleGetFunction(&fn, mod, "vector_add"));

  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  if (!a || !b || !c) {
    fprintf(stderr, "Failed to allocate host vectors!\n");
    return EXIT_FAILURE;
  }
  srand(2026);
  for (unsigned i = 0; i < n; i++) {
    a[i] = rand() / (float)RAND_MAX;
    b[i] = rand() / (float)RAND_MAX;
    c[i] = -1.0f;
  }
  CUdeviceptr da, db, dc;
  CHECK("allocate device vector A", cuMemAlloc(&da, bytes));
  CHECK("allocate device vector B", cuMemAlloc(&db, bytes));
  CHECK("allocate device vector C", cuMemAlloc(&dc, bytes));
  printf("Copy input data from the host memory to the CUDA device\n");
  CHECK("copy vector A from host to device", cuMemcpyHtoD(da, a, bytes));
  CHECK("copy vector B from host to device", cuMemcpyHtoD(db, b, bytes));
  printf("CUDA kernel launch with %u blocks of %u threads\n", blocks, threads);
  unsigned nn = n;
  void *args[] = {&da, &db, &dc, &nn};
  CHECK("launch vector_add kernel", cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, NULL, args, NULL));
  CHECK("synchronize after the kernel", cuCtxSynchronize());
  printf("Copy output data from the CUDA device to the host memory\n");
  CHECK("copy vector C from device to host", cuMemcpyDtoH(c, dc, bytes));
  for (unsigned i = 0; i < n; i++) {
    if (fabsf(a[i] + b[i] - c[i]) > 1e-5f) {
      fprintf(stderr, "Result verification failed at element %u (%f + %f != %f)!\n", i, a[i], b[i], c[i]);
      return EXIT_FAILURE;
    }
  }
  printf("Test PASSED\n");
  cuMemFree(da);
  cuMemFree(db);
  cuMemFree(dc);
  cuModuleUnload(mod);
  cuDevicePrimaryCtxRelease(dev);
  free(a);
  free(b);
  free(c);
  printf("Done\n");
  return 0;
}
