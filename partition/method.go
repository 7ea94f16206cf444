package partition

import (
	"fmt"
	"strings"
)

// Method names a way to make a Book. Its value is the name flags, book
// files (Book.Method) and metrics spell. It implements flag.Value.
type Method string

// Partitioning methods.
const (
	MethodBlock    Method = "block"    // consecutive blocks (Block, Contiguous)
	MethodRandom   Method = "random"   // uniformly at random (Random)
	MethodMetis    Method = "metis"    // METIS on one rank (partition/metis)
	MethodPTScotch Method = "ptscotch" // PT-Scotch over the ranks (partition/ptscotch)
)

// Methods lists every method, in the order flags and errors list them.
var Methods = []Method{MethodBlock, MethodRandom, MethodMetis, MethodPTScotch}

// ParseMethod returns the method named s, or an error listing the
// methods.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("partition: unknown method %q (want %s)", s, OrList(Methods))
}

// String returns the method's name.
func (m Method) String() string { return string(m) }

// Set sets m to the method named s (flag.Value).
func (m *Method) Set(s string) (err error) {
	*m, err = ParseMethod(s)
	return err
}

// OrList spells methods as "a, b or c".
func OrList(methods []Method) string {
	s := make([]string, len(methods))
	for i, m := range methods {
		s[i] = string(m)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
