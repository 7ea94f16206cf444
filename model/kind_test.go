package model

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every kind parses from its name and sets a flag; an unknown name is an
// error listing the names.
func TestKindParseAndFlag(t *testing.T) {
	for _, k := range Kinds {
		got, err := ParseKind(string(k))
		require.NoError(t, err)
		require.Equal(t, k, got)
	}
	_, err := ParseKind("mlp")
	require.EqualError(t, err, `model: unknown model "mlp" (want sage, gcn, gat, resgcn or gcnii)`)

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	k, o := KindSAGE, OptimizerAdam
	fs.Var(&k, "model", "")
	fs.Var(&o, "optimizer", "")
	require.NoError(t, fs.Parse([]string{"--model", "gcnii", "--optimizer", "sgd"}))
	require.Equal(t, KindGCNII, k)
	require.Equal(t, OptimizerSGD, o)
	require.Equal(t, "gcnii", fs.Lookup("model").Value.String())
	require.Error(t, k.Set("mlp"))
	_, err = ParseOptimizerKind("rmsprop")
	require.EqualError(t, err, `model: unknown optimizer "rmsprop" (want adam or sgd)`)
}
