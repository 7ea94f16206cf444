package dl

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The environment variables of the search (see Search).
const (
	// CUDALibDirEnv names a directory holding the CUDA toolkit's libraries
	// (NVRTC, cuBLAS, cuSPARSE), searched first; it is searched for the
	// driver and NCCL too, so one directory of fakes serves the tests.
	CUDALibDirEnv = "GNNMPI_CUDA_LIBDIR"
	// CUDADriverDirEnv names the directory of the driver's libcuda.so.1,
	// searched for the driver before CUDALibDirEnv: the driver comes with
	// the kernel module, the toolkit from elsewhere (a wheel, a module).
	CUDADriverDirEnv = "GNNMPI_CUDA_DRIVER_DIR"
	// NCCLLibDirEnv names the directory of libnccl.so.2, searched for NCCL
	// before CUDALibDirEnv.
	NCCLLibDirEnv = "GNNMPI_NCCL_LIBDIR"
	// PythonSiteEnv names a Python site-packages directory whose NVIDIA
	// wheels (nvidia/<package>/lib) are searched, as those of
	// $VIRTUAL_ENV/lib/python3*/site-packages are.
	PythonSiteEnv = "GNNMPI_PYTHON_SITE"
)

// Search says where one library is looked for and what it needs beside
// it. The directories, in order (Dirs), are those the variables Env
// name; then, when Toolkit is set, $CUDA_HOME/lib64 and $CUDA_PATH/lib64;
// then nvidia/<w>/lib for each w of Wheels under $GNNMPI_PYTHON_SITE and
// under each $VIRTUAL_ENV/lib/python3*/site-packages. In each directory
// every one of Names is tried, newest soname first; after the last
// directory, the bare Names for the loader's own path (LD_LIBRARY_PATH,
// the RUNPATH of the binary, ld.so.cache); last, the Names in each of
// Fallback.
type Search struct {
	Env     []string // variables naming a directory each, searched first, in order
	Toolkit bool     // search the toolkit's $CUDA_HOME/lib64 and $CUDA_PATH/lib64
	Wheels  []string // NVIDIA wheel packages holding it: "cu13" (every CUDA 13 library), "cublas", "cuda_nvrtc", …
	Names   []string // file names, newest soname first (e.g. libcublas.so.13, libcublas.so.12, …)
	// Deps are libraries that the library loads by soname, either as its
	// own dependencies (libcublas needs libcublasLt) or with dlopen at run
	// time (libnvrtc loads libnvrtc-builtins when it compiles). The
	// loader finds them only on its own path, not beside a library opened
	// by its path, so Open loads them from the library's directory first.
	Deps []Dep
	// Fallback are directories tried after the loader's path: the
	// default install (/usr/local/cuda/lib64).
	Fallback []string
}

// Dep is a library that a Search's library loads by soname.
type Dep struct {
	// Pattern is a glob of its file names (filepath.Match), e.g.
	// "libnvrtc-builtins.so.*"; "{major}" in it stands for the major
	// version of the soname the library was found by ("12" for
	// libnvrtc.so.12, "11" for libnvrtc.so.11.2, "*" for libnvrtc.so).
	// Of the matches in a directory, the highest version is loaded.
	Pattern string
	// Wheels are the NVIDIA wheel packages that hold it when the library's
	// own directory does not (libnvJitLink of cuSPARSE's CUDA 12 wheel
	// lies in nvidia/nvjitlink/lib).
	Wheels []string
}

// Dirs returns the directories s searches, in order, without repeats;
// unset variables and unmatched globs give none.
func (s Search) Dirs() []string {
	var out []string
	add := func(d string) {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, e := range s.Env {
		add(os.Getenv(e))
	}
	if s.Toolkit {
		for _, e := range []string{"CUDA_HOME", "CUDA_PATH"} {
			if h := os.Getenv(e); h != "" {
				add(filepath.Join(h, "lib64"))
			}
		}
	}
	for _, d := range wheelDirs(s.Wheels) {
		add(d)
	}
	return out
}

// wheelDirs returns nvidia/<w>/lib for each of wheels under each Python
// site-packages directory of the environment: $GNNMPI_PYTHON_SITE, then
// those of $VIRTUAL_ENV (newest Python last, as Glob sorts).
func wheelDirs(wheels []string) []string {
	if len(wheels) == 0 {
		return nil
	}
	var sites []string
	if s := os.Getenv(PythonSiteEnv); s != "" {
		sites = append(sites, s)
	}
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		m, _ := filepath.Glob(filepath.Join(v, "lib", "python3*", "site-packages"))
		sites = append(sites, m...)
	}
	var out []string
	for _, site := range sites {
		for _, w := range wheels {
			out = append(out, filepath.Join(site, "nvidia", w, "lib"))
		}
	}
	return out
}

// Candidates returns the file names Open tries, in order: each of
// s.Names under each of s.Dirs, then each of s.Names bare, then each
// under each of s.Fallback.
func (s Search) Candidates() []string {
	var out []string
	under := func(dirs []string) {
		for _, d := range dirs {
			for _, n := range s.Names {
				out = append(out, filepath.Join(d, n))
			}
		}
	}
	under(s.Dirs())
	out = append(out, s.Names...)
	under(s.Fallback)
	return out
}

// Open loads the first of s.Candidates that dlopen finds, as the
// package-level Open does. A candidate that is a path to an existing file
// gets its s.Deps loaded first (RTLD_LOCAL: the loader then resolves
// their sonames to them, for the library's own dependencies and for its
// dlopen calls), each from the library's directory or else from the
// wheel directories of the Dep; a Dep found in neither is left to the
// loader. The Lib's Deps names what was loaded; Close unloads them too.
func (s Search) Open() (*Lib, error) {
	cands := s.Candidates()
	for _, c := range cands {
		if !strings.ContainsRune(c, '/') {
			// A bare name: the loader's own path, which finds the deps.
			if l, err := Open(c); err == nil {
				return l, nil
			}
			continue
		}
		if fi, err := os.Stat(c); err != nil || fi.IsDir() {
			continue
		}
		deps := s.preload(c)
		if l, err := Open(c); err == nil {
			l.deps = deps
			return l, nil
		}
		closeAll(deps)
	}
	return Open(cands...) // fails again, naming every candidate
}

// preload loads the Deps of s for the library at path and returns them.
func (s Search) preload(path string) []*Lib {
	dir := filepath.Dir(path)
	major := soMajor(filepath.Base(path))
	var out []*Lib
	for _, d := range s.Deps {
		pat := strings.ReplaceAll(d.Pattern, "{major}", major)
		for _, dd := range append([]string{dir}, wheelDirs(d.Wheels)...) {
			f := newest(dd, pat)
			if f == "" {
				continue
			}
			if l, err := Open(f); err == nil {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// soMajor returns the major version of a soname ("12" of libx.so.12.4),
// or "*" for an unversioned name.
func soMajor(name string) string {
	_, v, ok := strings.Cut(name, ".so.")
	if !ok || v == "" {
		return "*"
	}
	major, _, _ := strings.Cut(v, ".")
	return major
}

// newest returns the file in dir matching pattern with the highest
// version after ".so.", or "" when none matches.
func newest(dir, pattern string) string {
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(m) == 0 {
		return ""
	}
	return slices.MaxFunc(m, func(a, b string) int { return slices.Compare(soVersion(a), soVersion(b)) })
}

// soVersion returns the numbers after ".so." in name: [12 4 127] for
// libx.so.12.4.127.
func soVersion(name string) []int {
	_, v, _ := strings.Cut(filepath.Base(name), ".so.")
	var out []int
	for _, f := range strings.Split(v, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

func closeAll(libs []*Lib) {
	for _, l := range libs {
		l.Close()
	}
}
