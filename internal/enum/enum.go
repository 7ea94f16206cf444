// Package enum holds what the named string types of gnnmpi share: the
// settings that take one of a few names (a model kind, a sampler, a
// training mode), whose values are the names flags, configs and metrics
// spell.
//
// # Overview
//
// A package declares its type and constants, a Parse function that calls
// Parse with its own prefix and list of names, and a flag.Value Set that
// calls Set:
//
//	func ParseKind(s string) (Kind, error) { return enum.Parse("model", "model", s, Kinds...) }
//	func (k *Kind) Set(s string) error     { return enum.Set(k, ParseKind, s) }
//
// so that every such type accepts exactly its names and every error lists
// them the same way: `model: unknown model "mlp" (want sage, gcn or gat)`.
package enum

import (
	"fmt"
	"strings"
)

// Parse returns the element of valid whose name is s. When none is, it
// returns the zero value and the error
//
//	pkg: unknown what "s" (want a, b or c)
//
// listing valid in its order (Or).
func Parse[T ~string](pkg, what, s string, valid ...T) (T, error) {
	for _, v := range valid {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s: unknown %s %q (want %s)", pkg, what, s, Or(valid))
}

// Set sets *dst to parse(s) when s parses and leaves *dst alone when it
// does not; it returns parse's error. It is the body of a flag.Value's Set
// method.
func Set[T any](dst *T, parse func(string) (T, error), s string) error {
	v, err := parse(s)
	if err == nil {
		*dst = v
	}
	return err
}

// Or spells names as "a, b or c": "a" for one, "a or b" for two, "" for
// none.
func Or[T ~string](names []T) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
