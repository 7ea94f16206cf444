// A fake libnvrtc.so for gnnmpi's tests. nvrtcCompileProgram writes the
// CUDA C source to a temporary file and compiles it as C++ with gcc,
// force-including the shim (GNNMPI_SHIM, set when this library is built)
// that maps the CUDA C subset the kernels use onto plain C++; the "PTX" is
// the path of the resulting shared object, which the fake libcuda dlopens.
// The objects stay in GNNMPI_FAKE_DIR (the tests' temporary directory)
// after nvrtcDestroyProgram, since the PTX may be loaded later.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(GNNMPI_SHIM) || !defined(GNNMPI_FAKE_DIR)
#error GNNMPI_SHIM must name the shim header, GNNMPI_FAKE_DIR the directory for the compiled kernels
#endif

typedef int nvrtcResult;
enum { OK = 0, OUT_OF_MEMORY = 1, INVALID_INPUT = 3, INVALID_PROGRAM = 4, INVALID_OPTION = 5, COMPILATION = 6 };

typedef struct { char *src, *ptx, *log; } program;

const char *nvrtcGetErrorString(nvrtcResult r) {
	switch (r) {
	case OK: return "NVRTC_SUCCESS";
	case OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
	case INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
	case INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
	case INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
	case COMPILATION: return "NVRTC_ERROR_COMPILATION";
	}
	return "NVRTC_ERROR_INTERNAL_ERROR";
}
nvrtcResult nvrtcVersion(int *major, int *minor) { *major = 12; *minor = 4; return OK; }
nvrtcResult nvrtcCreateProgram(program **p, const char *src, const char *name, int nh, const char *const *h, const char *const *hn) {
	(void)name; (void)h; (void)hn;
	if (src == NULL || nh != 0) return INVALID_INPUT;
	*p = calloc(1, sizeof(program));
	(*p)->src = strdup(src);
	(*p)->log = strdup("");
	return OK;
}
nvrtcResult nvrtcDestroyProgram(program **p) {
	if (p == NULL || *p == NULL) return INVALID_PROGRAM;
	free((*p)->src); free((*p)->ptx); free((*p)->log); free(*p);
	*p = NULL;
	return OK;
}

static char *slurp(const char *path) {
	FILE *f = fopen(path, "r");
	if (!f) return strdup("");
	char *buf = NULL; size_t cap = 0, n = 0, r;
	do {
		if (n + 4096 > cap) buf = realloc(buf, cap = 2 * cap + 4096);
		r = fread(buf + n, 1, 4096, f);
		n += r;
	} while (r > 0);
	fclose(f);
	buf[n] = 0;
	return buf;
}

nvrtcResult nvrtcCompileProgram(program *p, int n, const char *const *opts) {
	if (p == NULL) return INVALID_PROGRAM;
	int arch = 0;
	for (int i = 0; i < n; i++) {
		if (strncmp(opts[i], "--gpu-architecture=compute_", 27) == 0) arch = 1;
		else if (strcmp(opts[i], "-default-device") != 0 && strncmp(opts[i], "--std=", 6) != 0) return INVALID_OPTION;
	}
	if (!arch) return INVALID_OPTION; // gnnmpi always names the architecture
	const char *tmp = GNNMPI_FAKE_DIR;
	char dir[4096], cmd[16384];
	snprintf(dir, sizeof dir, "%s/gnnmpi-nvrtc-XXXXXX", tmp);
	if (mkdtemp(dir) == NULL) return OUT_OF_MEMORY;
	snprintf(cmd, sizeof cmd, "%s/kernel.cu", dir);
	FILE *f = fopen(cmd, "w");
	if (!f) return OUT_OF_MEMORY;
	fputs(p->src, f);
	fclose(f);
	char so[4200], log[4200];
	snprintf(so, sizeof so, "%s/kernel.so", dir);
	snprintf(log, sizeof log, "%s/log.txt", dir);
	snprintf(cmd, sizeof cmd, "gcc -x c++ -std=c++17 -shared -fPIC -O2 -Wall -Werror -include '%s' -o '%s' '%s/kernel.cu' -lm > '%s' 2>&1",
		GNNMPI_SHIM, so, dir, log);
	int rc = system(cmd);
	free(p->log);
	p->log = slurp(log);
	snprintf(cmd, sizeof cmd, "%s/kernel.cu", dir);
	unlink(cmd);
	unlink(log);
	if (rc != 0) {
		rmdir(dir);
		return COMPILATION;
	}
	free(p->ptx);
	p->ptx = strdup(so);
	return OK;
}
nvrtcResult nvrtcGetPTXSize(program *p, size_t *n) { if (!p || !p->ptx) return INVALID_PROGRAM; *n = strlen(p->ptx) + 1; return OK; }
nvrtcResult nvrtcGetPTX(program *p, char *buf) { if (!p || !p->ptx) return INVALID_PROGRAM; strcpy(buf, p->ptx); return OK; }
nvrtcResult nvrtcGetProgramLogSize(program *p, size_t *n) { if (!p) return INVALID_PROGRAM; *n = strlen(p->log) + 1; return OK; }
nvrtcResult nvrtcGetProgramLog(program *p, char *buf) { if (!p) return INVALID_PROGRAM; strcpy(buf, p->log); return OK; }
