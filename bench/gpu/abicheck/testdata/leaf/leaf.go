// Package leaf is a dlopen leaf in miniature for abicheck's tests.
package leaf

/*
typedef int res;
typedef res (*two_f)(int, long long);
static res t_one(void *f, unsigned int x) { return ((res (*)(unsigned int))f)(x); }
static res t_two(void *f, int a, long long b) { return ((two_f)f)(a, b); }
static res t_ptr(void *f, void *p) { return ((res (*)(void *))f)(p); }
*/
import "C"

import "unsafe"

// Kinds.
const (
	KindA = 3 // LEAF_KIND_A
	KindB = 4
)

// KindC is LEAF_KIND_C.
const KindC = 5

var names = map[int]string{7: "LEAF_STATUS_SEVEN"}

type lib struct{ one, two, p1, p2 unsafe.Pointer }

func open(sym func(string) unsafe.Pointer) *lib {
	l := &lib{}
	for _, s := range []struct {
		dst   *unsafe.Pointer
		names []string
	}{{&l.one, []string{"leafOne_v2", "leafOne"}}} {
		*s.dst = sym(s.names[0])
	}
	m := map[string]*unsafe.Pointer{"leafTwo": &l.two, "leafP1": &l.p1}
	_ = m
	l.p2 = sym("leafP2")
	return l
}

func (l *lib) call() {
	C.t_one(l.one, 1)
	C.t_two(l.two, 1, 2)
	l.viaParam(l.p1)
}

func (l *lib) viaParam(f unsafe.Pointer) { C.t_ptr(f, nil) }
