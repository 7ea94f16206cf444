package partition

import "gnnmpi/internal/enum"

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
	return enum.Parse("partition", "method", s, Methods...)
}

// String returns the method's name.
func (m Method) String() string { return string(m) }

// Set sets m to the method named s, leaving it alone when s names none (flag.Value).
func (m *Method) Set(s string) error { return enum.Set(m, ParseMethod, s) }

// OrList spells methods as "a, b or c", for messages outside the package
// that list methods.
func OrList(methods []Method) string { return enum.Or(methods) }
