package model

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImports checks STYLE.md §2: model depends on dense and sparse only
// among gnnmpi packages, and stays pure Go (BLAS is injected, so OpenBLAS
// is never linked through model).
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "gnnmpi/model").Output()
	require.NoError(t, err)
	allowed := map[string]bool{"gnnmpi/model": true, "gnnmpi/dense": true, "gnnmpi/sparse": true}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "gnnmpi/") {
			assert.True(t, allowed[d], "model must not import %s", d)
		}
		assert.False(t, strings.HasPrefix(d, "gonum.org/v1/netlib"), "model must not import %s", d)
		assert.NotEqual(t, "runtime/cgo", d, "model must stay pure Go")
	}
}
