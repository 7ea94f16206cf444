package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Package is what abicheck reads from one dlopen leaf.
type Package struct {
	Name     string              // the package name, e.g. cudadl
	Typedefs []string            // the preamble's typedef statements, in order
	Funcs    map[string][]string // by C symbol: the function pointer types it is called through
	Consts   []Const
	Problems []string // what could not be resolved
}

// Const is an integer constant with the C name it mirrors.
type Const struct {
	Go, C string
	Value int64
}

var (
	// trampolineRE matches the head of a static C function whose first
	// parameter is the dlsym'ed pointer f.
	trampolineRE = regexp.MustCompile(`static\s+[\w\s\*]*?\b(\w+)\s*\(\s*void\s*\*\s*f\s*[,)]`)
	// castRE matches ((TYPE)f)( in a trampoline's body; TYPE nests
	// parentheses two deep at most.
	castRE = regexp.MustCompile(`\(\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)\s*f\s*\)\s*\(`)
	// cNameRE matches the C constant names abicheck recognizes in
	// comments: CU_X_Y, nvrtcX-like prefixes are not constants.
	cNameRE = regexp.MustCompile(`\b([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]|nccl[A-Z]\w*)\b`)
	// isRE matches a doc comment "Name is C_NAME".
	isRE = regexp.MustCompile(`^(\w+) is ([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]|nccl[A-Z]\w*)\b`)
)

// Load reads the non-test Go files of dir.
func Load(dir, prefix string) (*Package, error) {
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", dir)
	}
	p := &Package{Name: files[0].Name.Name, Funcs: map[string][]string{}}
	casts := map[string]string{} // by trampoline
	for _, f := range files {
		pre := preamble(f)
		if pre == "" {
			continue
		}
		p.Typedefs = append(p.Typedefs, typedefs(pre)...)
		for tr, c := range trampolines(pre) {
			casts[tr] = c
		}
	}
	if len(casts) == 0 {
		return nil, fmt.Errorf("%s: no trampolines in the cgo preamble", dir)
	}
	r := newResolver(files)
	seen := map[string]bool{}
	for _, fn := range r.funcs {
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			tr := cName(call.Fun)
			cast, ok := casts[tr]
			if !ok {
				return true
			}
			syms := r.symbols(fn, call.Args[0], 0)
			if len(syms) == 0 {
				p.Problems = append(p.Problems, fmt.Sprintf("%s: %s: cannot tell which symbol the call of %s at %s uses",
					p.Name, fn.Name.Name, tr, fset.Position(call.Pos())))
			}
			for _, s := range syms {
				if k := s + "\x00" + cast; !seen[k] {
					seen[k] = true
					p.Funcs[s] = append(p.Funcs[s], cast)
				}
			}
			return true
		})
	}
	p.Consts, p.Problems = consts(files, prefix, p.Name, p.Problems)
	return p, nil
}

// preamble returns the cgo preamble of f: the comment above import "C".
func preamble(f *ast.File) string {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		for _, s := range g.Specs {
			if is := s.(*ast.ImportSpec); is.Path.Value == `"C"` {
				doc := is.Doc
				if doc == nil {
					doc = g.Doc
				}
				if doc != nil {
					return doc.Text()
				}
			}
		}
	}
	return ""
}

// stripComments removes C comments from src.
func stripComments(src string) string {
	src = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(src, " ")
	return regexp.MustCompile(`//[^\n]*`).ReplaceAllString(src, "")
}

// typedefs returns the typedef statements of the C source src.
func typedefs(src string) []string {
	src = stripComments(src)
	var out []string
	for i := 0; ; {
		j := strings.Index(src[i:], "typedef")
		if j < 0 {
			return out
		}
		j += i
		depth, k := 0, j
		for ; k < len(src); k++ {
			switch src[k] {
			case '{', '(':
				depth++
			case '}', ')':
				depth--
			}
			if src[k] == ';' && depth == 0 {
				break
			}
		}
		out = append(out, strings.Join(strings.Fields(src[j:k+1]), " "))
		i = k + 1
	}
}

// trampolines returns, by name, the function pointer type each trampoline
// of src casts f to.
func trampolines(src string) map[string]string {
	src = stripComments(src)
	out := map[string]string{}
	heads := trampolineRE.FindAllStringSubmatchIndex(src, -1)
	for i, h := range heads {
		end := len(src)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		if m := castRE.FindStringSubmatch(src[h[1]:end]); m != nil {
			out[src[h[2]:h[3]]] = strings.Join(strings.Fields(m[1]), " ")
		}
	}
	return out
}

// cName returns NAME when e is C.NAME, else "".
func cName(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := s.X.(*ast.Ident); ok && x.Name == "C" {
			return s.Sel.Name
		}
	}
	return ""
}

// resolver follows the first argument of a trampoline call back to the
// symbol names it was looked up by.
type resolver struct {
	funcs []*ast.FuncDecl
	syms  map[string][]string // by "Type.field"
}

func newResolver(files []*ast.File) *resolver {
	r := &resolver{syms: map[string][]string{}}
	for _, f := range files {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				r.funcs = append(r.funcs, fn)
			}
		}
	}
	for _, fn := range r.funcs {
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr: // "name": &x.f
				if name, ok := strLit(n.Key); ok {
					if k := r.fieldKey(fn, addrOf(n.Value)); k != "" {
						r.syms[k] = append(r.syms[k], name)
					}
				}
			case *ast.CompositeLit: // {&x.f, []string{...}}
				if len(n.Elts) == 2 {
					if k := r.fieldKey(fn, addrOf(n.Elts[0])); k != "" {
						if list, ok := n.Elts[1].(*ast.CompositeLit); ok {
							for _, e := range list.Elts {
								if s, ok := strLit(e); ok {
									r.syms[k] = append(r.syms[k], s)
								}
							}
						}
					}
				}
			case *ast.AssignStmt: // x.f, _ = lib.Sym(arg)
				if len(n.Rhs) != 1 || len(n.Lhs) == 0 {
					break
				}
				call, ok := n.Rhs[0].(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					break
				}
				if s, ok := call.Fun.(*ast.SelectorExpr); !ok || s.Sel.Name != "Sym" {
					break
				}
				if sel, ok := n.Lhs[0].(*ast.SelectorExpr); ok {
					if k := r.fieldKey(fn, sel); k != "" {
						r.syms[k] = append(r.syms[k], r.strings(fn, call.Args[0], 0)...)
					}
				}
			}
			return true
		})
	}
	return r
}

func strLit(e ast.Expr) (string, bool) {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		s, err := strconv.Unquote(b.Value)
		return s, err == nil
	}
	return "", false
}

func addrOf(e ast.Expr) *ast.SelectorExpr {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		s, _ := u.X.(*ast.SelectorExpr)
		return s
	}
	return nil
}

// fieldKey returns "Type.field" for x.field in fn, where Type is x's
// type: fn's receiver, or a variable fn defines as &Type{…} or Type{…}.
func (r *resolver) fieldKey(fn *ast.FuncDecl, s *ast.SelectorExpr) string {
	if s == nil {
		return ""
	}
	x, ok := s.X.(*ast.Ident)
	if !ok {
		return ""
	}
	if t := varType(fn, x.Name); t != "" {
		return t + "." + s.Sel.Name
	}
	return ""
}

// varType returns the type name of the variable name in fn, or "".
func varType(fn *ast.FuncDecl, name string) string {
	if fn.Recv != nil {
		for _, f := range fn.Recv.List {
			for _, n := range f.Names {
				if n.Name == name {
					return typeName(f.Type)
				}
			}
		}
	}
	var t string
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok || a.Tok != token.DEFINE {
			return true
		}
		for i, l := range a.Lhs {
			if id, ok := l.(*ast.Ident); ok && id.Name == name && i < len(a.Rhs) {
				e := a.Rhs[i]
				if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
					e = u.X
				}
				if c, ok := e.(*ast.CompositeLit); ok {
					t = typeName(c.Type)
				}
			}
		}
		return true
	})
	return t
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// symbols returns the symbol names the expression e in fn may hold: a
// field looked up by name, or a parameter of fn followed to every call of
// fn.
func (r *resolver) symbols(fn *ast.FuncDecl, e ast.Expr, depth int) []string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if k := r.fieldKey(fn, s); k != "" {
			if syms := r.syms[k]; len(syms) > 0 {
				return syms
			}
		}
		// An embedded struct's field: x.f where f belongs to any type.
		var out []string
		for _, k := range sortedKeys(r.syms) {
			if strings.HasSuffix(k, "."+s.Sel.Name) {
				out = append(out, r.syms[k]...)
			}
		}
		return out
	}
	return r.viaParam(fn, e, depth, r.symbols)
}

// strings returns the string values e in fn may hold: a literal, or a
// parameter of fn followed to every call of fn.
func (r *resolver) strings(fn *ast.FuncDecl, e ast.Expr, depth int) []string {
	if s, ok := strLit(e); ok {
		return []string{s}
	}
	return r.viaParam(fn, e, depth, r.strings)
}

// viaParam resolves e, a parameter of fn, at each call of fn with next.
func (r *resolver) viaParam(fn *ast.FuncDecl, e ast.Expr, depth int, next func(*ast.FuncDecl, ast.Expr, int) []string) []string {
	id, ok := e.(*ast.Ident)
	if !ok || depth > 3 {
		return nil
	}
	idx, i := -1, 0
	for _, f := range fn.Type.Params.List {
		for _, n := range f.Names {
			if n.Name == id.Name {
				idx = i
			}
			i++
		}
	}
	if idx < 0 {
		return nil
	}
	var out []string
	for _, caller := range r.funcs {
		ast.Inspect(caller.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || idx >= len(call.Args) {
				return true
			}
			name := ""
			switch f := call.Fun.(type) {
			case *ast.Ident:
				name = f.Name
			case *ast.SelectorExpr:
				name = f.Sel.Name
			}
			if name == fn.Name.Name {
				out = append(out, next(caller, call.Args[idx], depth+1)...)
			}
			return true
		})
	}
	return out
}

// consts returns the integer constants of files with their C names, and
// problems with one line more for each constant whose C name it cannot
// find. C names come from the line comment, the doc comment ("X is
// C_NAME"), prefix+name when prefix is not empty, and map literals from
// integers to C names.
func consts(files []*ast.File, prefix, pkg string, problems []string) ([]Const, []string) {
	var out []Const
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					if len(vs.Names) != 1 || len(vs.Values) != 1 {
						continue
					}
					v, ok := intLit(vs.Values[0])
					if !ok {
						continue
					}
					var names []string
					if vs.Comment != nil {
						names = cNameRE.FindAllString(vs.Comment.Text(), -1)
					}
					doc := vs.Doc
					if doc == nil && len(g.Specs) == 1 {
						doc = g.Doc
					}
					if len(names) == 0 && doc != nil {
						if m := isRE.FindStringSubmatch(doc.Text()); m != nil && m[1] == vs.Names[0].Name {
							names = []string{m[2]}
						}
					}
					if len(names) == 0 && prefix != "" {
						names = []string{prefix + vs.Names[0].Name}
					}
					if len(names) == 0 {
						problems = append(problems, fmt.Sprintf("%s: constant %s: no C name (write it in a line comment: %s = %d // C_NAME)",
							pkg, vs.Names[0].Name, vs.Names[0].Name, v))
					}
					for _, n := range names {
						out = append(out, Const{Go: pkg + "." + vs.Names[0].Name, C: n, Value: v})
					}
				}
			}
			ast.Inspect(d, func(n ast.Node) bool {
				c, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				m, ok := c.Type.(*ast.MapType)
				if !ok || typeName(m.Key) != "int" || typeName(m.Value) != "string" {
					return true
				}
				for _, e := range c.Elts {
					kv := e.(*ast.KeyValueExpr)
					v, ok1 := intLit(kv.Key)
					s, ok2 := strLit(kv.Value)
					if ok1 && ok2 && cNameRE.MatchString(s) {
						out = append(out, Const{Go: fmt.Sprintf("%s map entry %d", pkg, v), C: s, Value: v})
					}
				}
				return false
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].C < out[j].C })
	return out, problems
}

func intLit(e ast.Expr) (int64, bool) {
	neg := false
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		neg, e = true, u.X
	}
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.INT {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(b.Value, "_", ""), 0, 64)
	if neg {
		v = -v
	}
	return v, err == nil
}
