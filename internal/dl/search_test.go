package dl

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// searchEnv are the variables the searches read; each test sets all of
// them.
var searchEnv = []string{CUDALibDirEnv, CUDADriverDirEnv, NCCLLibDirEnv, PythonSiteEnv, "VIRTUAL_ENV", "CUDA_HOME", "CUDA_PATH"}

// setEnv sets every variable of searchEnv: those of env to their values,
// the others to "".
func setEnv(t *testing.T, env map[string]string) {
	for _, e := range searchEnv {
		t.Setenv(e, env[e])
	}
}

// The candidate list of every library, in order, with every variable set.
func TestSearchCandidates(t *testing.T) {
	venv := t.TempDir()
	for _, py := range []string{"python3.11", "python3.12"} {
		require.NoError(t, os.MkdirAll(filepath.Join(venv, "lib", py, "site-packages"), 0o755))
	}
	site11, site12 := filepath.Join(venv, "lib/python3.11/site-packages"), filepath.Join(venv, "lib/python3.12/site-packages")
	setEnv(t, map[string]string{CUDALibDirEnv: "/lib", CUDADriverDirEnv: "/drv", NCCLLibDirEnv: "/nccl",
		PythonSiteEnv: "/site", "VIRTUAL_ENV": venv, "CUDA_HOME": "/home", "CUDA_PATH": "/path"})
	under := func(dirs []string, names ...string) []string {
		var out []string
		for _, d := range dirs {
			for _, n := range names {
				out = append(out, filepath.Join(d, n))
			}
		}
		return out
	}
	wheels := func(pkgs ...string) []string {
		var out []string
		for _, site := range []string{"/site", site11, site12} {
			for _, p := range pkgs {
				out = append(out, filepath.Join(site, "nvidia", p, "lib"))
			}
		}
		return out
	}
	toolkit := func(pkgs ...string) []string {
		return append([]string{"/lib", "/home/lib64", "/path/lib64"}, wheels(pkgs...)...)
	}
	for _, tc := range []struct {
		name   string
		search Search
		names  []string
		dirs   []string
		last   []string // the fallback directories
	}{
		{"driver", Driver(), []string{"libcuda.so.1", "libcuda.so"}, []string{"/drv", "/lib"}, nil},
		{"nvrtc", NVRTC(), []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0", "libnvrtc.so"},
			toolkit("cu13", "cuda_nvrtc"), []string{"/usr/local/cuda/lib64"}},
		{"cublas", CUBLAS(), []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"},
			toolkit("cu13", "cublas"), []string{"/usr/local/cuda/lib64"}},
		{"cusparse", CUSPARSE(), []string{"libcusparse.so.12", "libcusparse.so.11", "libcusparse.so"},
			toolkit("cu13", "cusparse"), []string{"/usr/local/cuda/lib64"}},
		{"nccl", NCCL(), []string{"libnccl.so.2", "libnccl.so"},
			append([]string{"/nccl"}, toolkit("nccl")...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := under(tc.dirs, tc.names...)
			want = append(want, tc.names...)
			want = append(want, under(tc.last, tc.names...)...)
			require.Equal(t, want, tc.search.Candidates())
		})
	}
}

// Unset variables, and a variable naming the directory another names,
// add no directory.
func TestSearchDirsUnset(t *testing.T) {
	setEnv(t, map[string]string{CUDALibDirEnv: "/cuda", "CUDA_HOME": "/cuda/..", "CUDA_PATH": "/cuda"})
	require.Equal(t, []string{"/cuda", "/lib64", "/cuda/lib64"}, NVRTC().Dirs())
	setEnv(t, nil)
	require.Empty(t, NVRTC().Dirs())
	require.Equal(t, NVRTC().Names, NVRTC().Candidates()[:len(NVRTC().Names)])
}

// soMajor and newest read the versions after ".so.".
func TestVersions(t *testing.T) {
	for _, tc := range []struct{ name, major string }{
		{"libnvrtc.so.11.2", "11"}, {"libnvrtc.so.12", "12"}, {"libnvrtc.so", "*"}, {"libcuda.so.1", "1"},
	} {
		require.Equal(t, tc.major, soMajor(tc.name), tc.name)
	}
	dir := t.TempDir()
	for _, f := range []string{"libx.so.11", "libx.so.11.8", "libx.so.11.10.1", "libx.so.9.9"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	require.Equal(t, filepath.Join(dir, "libx.so.11.10.1"), newest(dir, "libx.so.*"))
	require.Equal(t, "", newest(dir, "liby.so.*"))
}

// fakeTree builds empty shared libraries under root, one per entry of
// libs: a path relative to root, its soname (the base name unless given
// after a space) and the libraries (paths relative to root) it needs, as
// DT_NEEDED entries naming their sonames, as the real ones do. It skips t
// without gcc.
func fakeTree(t *testing.T, root string, libs [][]string) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the fake libraries")
	}
	src := filepath.Join(t.TempDir(), "empty.c")
	require.NoError(t, os.WriteFile(src, []byte("int gnnmpi_fake;\n"), 0o644))
	for _, l := range libs {
		path, soname, _ := strings.Cut(l[0], " ")
		if soname == "" {
			soname = filepath.Base(path)
		}
		out := filepath.Join(root, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		args := []string{"-shared", "-fPIC", "-o", out, src, "-Wl,-soname," + soname, "-Wl,--no-as-needed"}
		for _, n := range l[1:] {
			args = append(args, filepath.Join(root, n))
		}
		b, err := exec.Command(gcc, args...).CombinedOutput()
		require.NoError(t, err, "%s", b)
	}
}

// Each library is found in trees laid out like a CUDA 11.8 install
// (CUDA_HOME), a CUDA 12 install (CUDA_PATH), a venv of CUDA 12 wheels
// (each library its own package), a venv of CUDA 13 wheels (nvidia/cu13/lib)
// and a driver directory; what each needs by soname is loaded from its
// directory (or its wheel), without which dlopen fails (DT_NEEDED) or
// NVRTC cannot load its builtins (by soname, as the real one does).
func TestSearchTrees(t *testing.T) {
	root := t.TempDir()
	const (
		k118  = "cuda-11.8/lib64/"
		k12   = "cuda-12.4/lib64/"
		w12   = "venv12/lib/python3.10/site-packages/nvidia/"
		w13   = "venv13/lib/python3.12/site-packages/nvidia/"
		drv   = "driver/"
		tools = "tools/"
	)
	fakeTree(t, root, [][]string{
		{k118 + "libnvrtc-builtins.so.11.8.89 libnvrtc-builtins.so.11.8"}, {k118 + "libnvrtc.so.11.2"},
		{k118 + "libcublasLt.so.11"}, {k118 + "libcublas.so.11", k118 + "libcublasLt.so.11"}, {k118 + "libcusparse.so.11"},
		{k12 + "libnvrtc-builtins.so.12.4"}, {k12 + "libnvrtc.so.12"},
		{k12 + "libcublasLt.so.12"}, {k12 + "libcublas.so.12", k12 + "libcublasLt.so.12"},
		{k12 + "libnvJitLink.so.12"}, {k12 + "libcusparse.so.12", k12 + "libnvJitLink.so.12"}, {k12 + "libnccl.so.2"},
		{w12 + "cuda_nvrtc/lib/libnvrtc-builtins.so.12.8"}, {w12 + "cuda_nvrtc/lib/libnvrtc.so.12"},
		{w12 + "cublas/lib/libcublasLt.so.12"}, {w12 + "cublas/lib/libcublas.so.12", w12 + "cublas/lib/libcublasLt.so.12"},
		{w12 + "nvjitlink/lib/libnvJitLink.so.12"}, {w12 + "cusparse/lib/libcusparse.so.12", w12 + "nvjitlink/lib/libnvJitLink.so.12"},
		{w12 + "nccl/lib/libnccl.so.2"},
		{w13 + "cu13/lib/libnvrtc-builtins.so.13.0"}, {w13 + "cu13/lib/libnvrtc.so.13"},
		{w13 + "cu13/lib/libcublasLt.so.13"}, {w13 + "cu13/lib/libcublas.so.13", w13 + "cu13/lib/libcublasLt.so.13"},
		{w13 + "cu13/lib/libnvJitLink.so.13"}, {w13 + "cu13/lib/libcusparse.so.12", w13 + "cu13/lib/libnvJitLink.so.13"},
		{w13 + "nccl/lib/libnccl.so.2"},
		{drv + "libcuda.so.1"}, {tools + "libcuda.so.1"},
	})
	type found struct{ path, deps string } // relative to root; deps joined by spaces
	for _, tc := range []struct {
		name     string
		env      map[string]string
		want     map[string]found // by library
		builtins string           // NVRTC's builtins' soname
	}{
		{"cuda 11.8 at CUDA_HOME", map[string]string{"CUDA_HOME": "cuda-11.8"}, map[string]found{
			"nvrtc":    {k118 + "libnvrtc.so.11.2", k118 + "libnvrtc-builtins.so.11.8.89"},
			"cublas":   {k118 + "libcublas.so.11", k118 + "libcublasLt.so.11"},
			"cusparse": {k118 + "libcusparse.so.11", ""},
		}, "libnvrtc-builtins.so.11.8"},
		{"cuda 12 at CUDA_PATH", map[string]string{"CUDA_PATH": "cuda-12.4"}, map[string]found{
			"nvrtc":    {k12 + "libnvrtc.so.12", k12 + "libnvrtc-builtins.so.12.4"},
			"cublas":   {k12 + "libcublas.so.12", k12 + "libcublasLt.so.12"},
			"cusparse": {k12 + "libcusparse.so.12", k12 + "libnvJitLink.so.12"},
			"nccl":     {k12 + "libnccl.so.2", ""},
		}, "libnvrtc-builtins.so.12.4"},
		{"cuda 12 wheels at GNNMPI_PYTHON_SITE", map[string]string{PythonSiteEnv: "venv12/lib/python3.10/site-packages"}, map[string]found{
			"nvrtc":    {w12 + "cuda_nvrtc/lib/libnvrtc.so.12", w12 + "cuda_nvrtc/lib/libnvrtc-builtins.so.12.8"},
			"cublas":   {w12 + "cublas/lib/libcublas.so.12", w12 + "cublas/lib/libcublasLt.so.12"},
			"cusparse": {w12 + "cusparse/lib/libcusparse.so.12", w12 + "nvjitlink/lib/libnvJitLink.so.12"},
			"nccl":     {w12 + "nccl/lib/libnccl.so.2", ""},
		}, "libnvrtc-builtins.so.12.8"},
		{"cuda 13 wheels in VIRTUAL_ENV, driver dir", map[string]string{"VIRTUAL_ENV": "venv13", CUDADriverDirEnv: "driver", CUDALibDirEnv: "tools"}, map[string]found{
			"driver":   {drv + "libcuda.so.1", ""},
			"nvrtc":    {w13 + "cu13/lib/libnvrtc.so.13", w13 + "cu13/lib/libnvrtc-builtins.so.13.0"},
			"cublas":   {w13 + "cu13/lib/libcublas.so.13", w13 + "cu13/lib/libcublasLt.so.13"},
			"cusparse": {w13 + "cu13/lib/libcusparse.so.12", w13 + "cu13/lib/libnvJitLink.so.13"},
			"nccl":     {w13 + "nccl/lib/libnccl.so.2", ""},
		}, "libnvrtc-builtins.so.13.0"},
		{"GNNMPI_CUDA_LIBDIR names the driver too", map[string]string{CUDALibDirEnv: "tools", "CUDA_HOME": "cuda-12.4"}, map[string]found{
			"driver": {tools + "libcuda.so.1", ""},
			"nvrtc":  {k12 + "libnvrtc.so.12", k12 + "libnvrtc-builtins.so.12.4"},
		}, "libnvrtc-builtins.so.12.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = filepath.Join(root, v)
			}
			setEnv(t, env)
			searches := map[string]Search{"driver": Driver(), "nvrtc": NVRTC(), "cublas": CUBLAS(), "cusparse": CUSPARSE(), "nccl": NCCL()}
			for _, name := range slices.Sorted(maps.Keys(tc.want)) {
				want := tc.want[name]
				l, err := searches[name].Open()
				require.NoError(t, err, name)
				var deps []string
				for _, d := range l.Deps() {
					deps = append(deps, strings.TrimPrefix(d, root+"/"))
				}
				require.Equal(t, found{want.path, want.deps}, found{strings.TrimPrefix(l.Name, root+"/"), strings.Join(deps, " ")}, name)
				if name == "nvrtc" {
					// NVRTC's dlopen of its builtins by soname finds them.
					bl, err := Open(tc.builtins)
					require.NoError(t, err, "the builtins by soname")
					require.NoError(t, bl.Close())
				}
				require.NoError(t, l.Close(), name)
			}
		})
	}
}
