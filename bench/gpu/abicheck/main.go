// Command abicheck checks the C declarations that gnnmpi's dlopen leaves
// (gpu/internal/cudadl, gpu/internal/cublasdl, nccl/internal/nccldl) write
// by hand against NVIDIA's real headers.
//
// # Overview
//
// The leaves include no CUDA header: each declares its C types in its cgo
// preamble and calls every library function through a static trampoline
// that casts a dlsym'ed pointer to a function pointer type, e.g.
//
//	static CUresult t_cuMemAlloc(void *f, CUdeviceptr *p, size_t n) {
//		return ((CUresult (*)(CUdeviceptr *, size_t))f)(p, n);
//	}
//
// abicheck reads those files with go/parser and finds, for every library
// symbol, the function pointer type it is called through: the cast in the
// trampoline, the trampoline's first argument at each call (a struct field
// such as d.memAlloc, or a parameter of the enclosing function, followed to
// its callers), and the symbol names that field was looked up by (a map
// literal "cuMemAlloc_v2": &d.memAlloc, a {&d.f, []string{…}} element, or
// an assignment x.f, _ = lib.Sym("name")). It reads every integer constant
// whose C name it can find: a constant-like identifier in its line comment
// (AttrX = 75 // CU_DEVICE_ATTRIBUTE_X), "Name is C_NAME" in its doc
// comment, a map literal from values to C names (the status tables), or a
// package prefix given with -prefix (nccldl's Sum is ncclSum).
//
// It then writes a C++ file that includes cuda.h, nvrtc.h, cublas_v2.h,
// cusparse.h and nccl_abi.h, declares each preamble's typedefs in a
// namespace of its own, and static_asserts for every symbol that the
// header's declaration and the hand-declared type agree in the ABI (the
// same number of parameters; each parameter and the result of the same
// kind — integer or enum, floating point, pointer, struct — and size;
// pointees likewise, where neither is void or an opaque struct), and for
// every constant that its value equals the header's. The file is compiled
// with g++ -fsyntax-only; abicheck exits non-zero when it fails or when a
// trampoline call or a constant cannot be resolved, so a new declaration
// is either checked or reported.
//
// With -plant, abicheck changes one declaration (a size_t parameter
// becomes int) and one constant (its value plus one) in its model and
// expects the compilation to fail on exactly those: it exits zero when
// both are caught, printing the compiler's messages.
//
// Usage:
//
//	go run ./bench/gpu/abicheck -include /path/to/usr/include -include bench/gpu [-plant] [-keep file.cc]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// strList is a repeatable string flag.
type strList []string

func (s *strList) String() string     { return strings.Join(*s, ",") }
func (s *strList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var includes, dirs, prefixes strList
	flag.Var(&includes, "include", "a directory of headers (repeatable): the CUDA include directory and the one holding nccl_abi.h")
	flag.Var(&dirs, "pkg", "a package directory to check (repeatable; default: the three dlopen leaves)")
	flag.Var(&prefixes, "prefix", "pkg=prefix: C names of that package's otherwise unnamed constants are prefix+GoName (repeatable; default nccldl=nccl)")
	plant := flag.Bool("plant", false, "plant one type and one constant mismatch and expect the check to catch both")
	keep := flag.String("keep", "", "also write the generated C++ to this file")
	cxx := flag.String("cxx", "g++", "the C++ compiler")
	flag.Parse()
	if len(dirs) == 0 {
		dirs = strList{"gpu/internal/cudadl", "gpu/internal/cublasdl", "nccl/internal/nccldl"}
	}
	if len(prefixes) == 0 {
		prefixes = strList{"nccldl=nccl"}
	}
	prefix := map[string]string{}
	for _, p := range prefixes {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			fatalf("abicheck: -prefix %q: want pkg=prefix", p)
		}
		prefix[k] = v
	}

	var pkgs []*Package
	var problems []string
	for _, d := range dirs {
		p, err := Load(d, prefix[filepath.Base(d)])
		if err != nil {
			fatalf("abicheck: %v", err)
		}
		problems = append(problems, p.Problems...)
		pkgs = append(pkgs, p)
	}
	if len(problems) > 0 {
		fatalf("abicheck: cannot check every declaration:\n  %s", strings.Join(problems, "\n  "))
	}
	nfn, nconst := 0, 0
	for _, p := range pkgs {
		nfn += len(p.Funcs)
		nconst += len(p.Consts)
	}

	if !*plant {
		out, err := compile(*cxx, includes, Generate(pkgs), *keep)
		if err != nil {
			fatalf("abicheck: the hand-declared C does not match the headers: %v\n%s", err, out)
		}
		fmt.Printf("abicheck: ok: %d functions and %d constants of %d packages match the headers\n", nfn, nconst, len(pkgs))
		return
	}
	fn, c, err := Plant(pkgs)
	if err != nil {
		fatalf("abicheck: -plant: %v", err)
	}
	out, err := compile(*cxx, includes, Generate(pkgs), *keep)
	if err == nil {
		fatalf("abicheck: -plant: the planted mismatches (%s, %s) compiled: the check cannot see them", fn, c)
	}
	var missed []string
	for _, want := range []string{fn + ":", c + ":"} {
		if !strings.Contains(out, want) {
			missed = append(missed, want)
		}
	}
	fmt.Print(errorLines(out))
	if len(missed) > 0 {
		fatalf("abicheck: -plant: the compiler failed but did not name %s", strings.Join(missed, " and "))
	}
	fmt.Printf("abicheck: ok: the planted mismatches in %s and %s were caught\n", fn, c)
}

// errorLines returns the lines of compiler output that hold an error.
func errorLines(out string) string {
	var b strings.Builder
	for l := range strings.Lines(out) {
		if strings.Contains(l, "error:") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// compile writes src to a temporary file and checks its syntax with cxx;
// it returns the compiler's output.
func compile(cxx string, includes []string, src, keep string) (string, error) {
	if keep != "" {
		if err := os.WriteFile(keep, []byte(src), 0o644); err != nil {
			return "", err
		}
	}
	dir, err := os.MkdirTemp("", "abicheck-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "abicheck.cc")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		return "", err
	}
	args := []string{"-std=c++17", "-fsyntax-only", "-fmax-errors=0"}
	for _, i := range includes {
		args = append(args, "-I", i)
	}
	out, err := exec.Command(cxx, append(args, file)...).CombinedOutput()
	return string(out), err
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(1)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
