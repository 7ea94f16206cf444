package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Load finds each symbol's function pointer type through fields, symbol
// tables and parameters, and each constant's C name from its comments, a
// status map or the package prefix; a call it cannot follow is a problem.
func TestLoad(t *testing.T) {
	p, err := Load("testdata/leaf", "LEAF_")
	require.NoError(t, err)
	assert.Equal(t, "leaf", p.Name)
	assert.Equal(t, []string{"typedef int res;", "typedef res (*two_f)(int, long long);"}, p.Typedefs)
	assert.Equal(t, map[string][]string{
		"leafOne_v2": {"res (*)(unsigned int)"},
		"leafOne":    {"res (*)(unsigned int)"},
		"leafTwo":    {"two_f"},
		"leafP1":     {"res (*)(void *)"},
	}, p.Funcs)
	assert.Equal(t, []Const{
		{Go: "leaf.KindA", C: "LEAF_KIND_A", Value: 3},
		{Go: "leaf.KindC", C: "LEAF_KIND_C", Value: 5},
		{Go: "leaf.KindB", C: "LEAF_KindB", Value: 4},
		{Go: "leaf map entry 7", C: "LEAF_STATUS_SEVEN", Value: 7},
	}, p.Consts)
	assert.Empty(t, p.Problems)

	p, err = Load("testdata/leaf", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"leaf: constant KindB: no C name (write it in a line comment: KindB = 4 // C_NAME)"}, p.Problems)
}

// The generated C++ declares the preamble's types in the package's
// namespace and asserts each symbol and constant; Plant changes one of
// each.
func TestGenerateAndPlant(t *testing.T) {
	p, err := Load("testdata/leaf", "LEAF_")
	require.NoError(t, err)
	p.Funcs["leafSize"] = []string{"res (*)(size_t)"}
	src := Generate([]*Package{p})
	for _, want := range []string{
		"namespace mine_leaf {\ntypedef int res;\n",
		"typedef res (*f0_0)(unsigned int);",
		"typedef two_f f4_0;",
		"static_assert(abi::fn<mine_leaf::f0_0, decltype(&leafOne)>::value,",
		"static_assert(static_cast<long long>(LEAF_KIND_A) == 3LL,",
	} {
		assert.Contains(t, src, want)
	}
	fn, c, err := Plant([]*Package{p})
	require.NoError(t, err)
	assert.Equal(t, "leafSize", fn)
	assert.Equal(t, "LEAF_KIND_A", c)
	assert.Equal(t, []string{"res (*)(int)"}, p.Funcs["leafSize"])
	assert.True(t, slices.ContainsFunc(p.Consts, func(k Const) bool { return k.C == "LEAF_KIND_A" && k.Value == 4 }))
	assert.True(t, strings.Contains(Generate([]*Package{p}), "== 4LL"))
}
