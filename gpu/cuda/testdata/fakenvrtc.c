// A fake libnvrtc.so for gnnmpi's tests. nvrtcCompileProgram writes the
// CUDA C source to a temporary file and compiles it as C++ with gcc,
// force-including the shim (GNNMPI_SHIM, set when this library is built)
// that maps the CUDA C subset the kernels use onto plain C++. The objects
// stay in GNNMPI_FAKE_DIR (the tests' temporary directory) after
// nvrtcDestroyProgram, since the images may be loaded later.
//
// Like the real NVRTC, it compiles only for the architectures of its
// version (nvrtcGetSupportedArchs; another is NVRTC_ERROR_INVALID_OPTION)
// and its PTX declares the PTX ISA version of its release, which a driver
// older than the NVRTC refuses. The images name the compiled object:
//   - -arch=compute_XY gives PTX text: ".version <isa>", ".target sm_XY",
//     then a comment "// gnnmpi-fake-object <path>"; no CUBIN (size 0).
//   - -arch=sm_XY gives that PTX and a CUBIN: "\177ELF" then
//     "gnnmpi-fake-cubin sm_XY <path>", which the fake libcuda loads only
//     on a device of the same major and no lower minor capability.
//
// GNNMPI_FAKE_NVRTC (read at each call; default 12.4, or 11.0 when
// built with GNNMPI_FAKE_NVRTC_OLD) picks the version it acts as: 11.0,
// 11.1, 11.8, 12.4 or 12.8. Built with GNNMPI_FAKE_NVRTC_OLD it lacks the
// functions NVRTC 11.0 lacks: nvrtcGetCUBIN(Size) and
// nvrtcGet(Num)SupportedArchs.
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

typedef struct { char *src, *ptx, *cubin, *log; size_t cubin_size; } program;

// release is what an NVRTC version compiles for and the PTX ISA it writes.
typedef struct {
	const char *version;
	int major, minor, isa_major, isa_minor;
	int archs[24]; // ascending, 0-terminated
} release;

static const release releases[] = {
	{"11.0", 11, 0, 7, 0, {35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80}},
	{"11.1", 11, 1, 7, 1, {35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86}},
	{"11.8", 11, 8, 7, 8, {35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}},
	{"12.4", 12, 4, 8, 4, {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}},
	{"12.8", 12, 8, 8, 7, {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120}},
};

#ifdef GNNMPI_FAKE_NVRTC_OLD
#define DEFAULT_VERSION "11.0"
#else
#define DEFAULT_VERSION "12.4"
#endif

static const release *current(void) {
	const char *v = getenv("GNNMPI_FAKE_NVRTC");
	if (v == NULL || *v == 0) v = DEFAULT_VERSION;
	for (size_t i = 0; i < sizeof releases / sizeof releases[0]; i++)
		if (strcmp(releases[i].version, v) == 0) return &releases[i];
	fprintf(stderr, "fake NVRTC: unknown GNNMPI_FAKE_NVRTC=%s\n", v);
	abort();
}

static int supported(int arch) {
	for (const int *a = current()->archs; *a; a++)
		if (*a == arch) return 1;
	return 0;
}

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
nvrtcResult nvrtcVersion(int *major, int *minor) { *major = current()->major; *minor = current()->minor; return OK; }
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
	free((*p)->src); free((*p)->ptx); free((*p)->cubin); free((*p)->log); free(*p);
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
	int arch = 0, real = 0;
	for (int i = 0; i < n; i++) {
		const char *v = NULL;
		if (strncmp(opts[i], "-arch=", 6) == 0) v = opts[i] + 6;
		else if (strncmp(opts[i], "--gpu-architecture=", 19) == 0) v = opts[i] + 19;
		else if (strcmp(opts[i], "-default-device") != 0 && strncmp(opts[i], "--std=", 6) != 0) return INVALID_OPTION;
		if (v == NULL) continue;
		char *end;
		if (strncmp(v, "compute_", 8) == 0) real = 0, v += 8;
		else if (strncmp(v, "sm_", 3) == 0) real = 1, v += 3;
		else return INVALID_OPTION;
		arch = (int)strtol(v, &end, 10);
		if (*end != 0 || !supported(arch)) return INVALID_OPTION; // as the real NVRTC: an architecture it does not know
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
	const release *r = current();
	free(p->ptx);
	free(p->cubin);
	p->cubin = NULL;
	p->cubin_size = 0;
	if (asprintf(&p->ptx, "//\n// Generated by the gnnmpi fake NVRTC %s\n//\n\n.version %d.%d\n.target sm_%d\n.address_size 64\n\n// gnnmpi-fake-object %s\n",
			r->version, r->isa_major, r->isa_minor, arch, so) < 0)
		return OUT_OF_MEMORY;
	if (real) {
		char *c;
		int len = asprintf(&c, "\177ELFgnnmpi-fake-cubin sm_%d %s", arch, so);
		if (len < 0) return OUT_OF_MEMORY;
		p->cubin = c;
		p->cubin_size = (size_t)len + 1;
	}
	return OK;
}
nvrtcResult nvrtcGetPTXSize(program *p, size_t *n) { if (!p || !p->ptx) return INVALID_PROGRAM; *n = strlen(p->ptx) + 1; return OK; }
nvrtcResult nvrtcGetPTX(program *p, char *buf) { if (!p || !p->ptx) return INVALID_PROGRAM; strcpy(buf, p->ptx); return OK; }
nvrtcResult nvrtcGetProgramLogSize(program *p, size_t *n) { if (!p) return INVALID_PROGRAM; *n = strlen(p->log) + 1; return OK; }
nvrtcResult nvrtcGetProgramLog(program *p, char *buf) { if (!p) return INVALID_PROGRAM; strcpy(buf, p->log); return OK; }

#ifndef GNNMPI_FAKE_NVRTC_OLD
nvrtcResult nvrtcGetCUBINSize(program *p, size_t *n) { if (!p || !p->ptx) return INVALID_PROGRAM; *n = p->cubin_size; return OK; }
nvrtcResult nvrtcGetCUBIN(program *p, char *buf) {
	if (!p || !p->ptx) return INVALID_PROGRAM;
	if (p->cubin) memcpy(buf, p->cubin, p->cubin_size);
	return OK;
}
nvrtcResult nvrtcGetNumSupportedArchs(int *n) {
	*n = 0;
	for (const int *a = current()->archs; *a; a++) ++*n;
	return OK;
}
nvrtcResult nvrtcGetSupportedArchs(int *archs) {
	for (const int *a = current()->archs; *a; a++) *archs++ = *a;
	return OK;
}
#endif
