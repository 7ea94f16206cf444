package cli

import (
	"flag"
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/model"
	"gnnmpi/train"
)

// parseTrainFlags registers the train flags and parses args.
func parseTrainFlags(t *testing.T, args ...string) (*flag.FlagSet, *trainFlags) {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := addTrainFlags(fs)
	require.NoError(t, fs.Parse(args))
	return fs, f
}

// Without flags besides --model and --mode, the train command's
// configuration is train.Defaults' for that kind and mode: the flags'
// defaults and the per-kind defaults applied to unset flags agree with the
// table. The head counts are GAT's for every kind (the others ignore
// them).
func TestTrainFlagsFollowDefaults(t *testing.T) {
	gat := train.Defaults(model.KindGAT, train.ModeMinibatch).Minibatch
	for _, k := range model.MinibatchKinds {
		fs, f := parseTrainFlags(t, "--model", string(k))
		got, err := f.minibatchConfig(&Env{}, setFlags(fs))
		require.NoError(t, err)
		want := train.Defaults(k, train.ModeMinibatch).Minibatch
		want.Model.Heads, want.Model.OutHeads = gat.Model.Heads, gat.Model.OutHeads
		require.Equal(t, want, got, "%s", k)
	}
	for _, m := range fullModes {
		for _, k := range model.DeepKinds {
			fs, f := parseTrainFlags(t, "--model", string(k), "--mode", string(m))
			got, err := f.fullConfig(&Env{}, m, setFlags(fs))
			require.NoError(t, err)
			require.Equal(t, train.Defaults(k, m).Full, got, "%s %s", m, k)
		}
	}
}

// The help texts of the flags whose defaults depend on the kind or mode
// spell the table's values; changing a default changes them.
func TestTrainFlagsHelp(t *testing.T) {
	fs, _ := parseTrainFlags(t)
	for _, tc := range []struct{ name, want string }{
		{"hidden", "hidden width (GAT: per head; default sage 128, gcn 64, gat 8; full-graph 100)"},
		{"epochs", "epochs (default sage/gcn 100, gat 200; full-graph 100)"},
		{"lr", "learning rate (default sage/gcn 0.01, gat 0.005; full-graph 0.01)"},
		{"dropout", "feature dropout (default sage/gcn 0.5, gat 0.6; full-graph 0.5)"},
		{"layers", "GNN layers (default minibatch 2, full-graph 32)"},
		{"chunks", "pipe, hybrid: chunks each graph part is split into (default graph 1, pipe/hybrid 4)"},
	} {
		fl := fs.Lookup(tc.name)
		require.NotNil(t, fl, tc.name)
		require.Equal(t, tc.want, fl.Usage)
		require.Empty(t, fl.DefValue, "%s: the default is in the help text", tc.name)
	}
	require.Equal(t, "2", fs.Lookup("pipelines").DefValue, "hybrid's default")
}

// onlyFor splits the mode-specific flags into the two kinds of training,
// each a registered flag.
func TestTrainFlagModes(t *testing.T) {
	fs, _ := parseTrainFlags(t)
	mb, full := onlyFor(true), onlyFor(false)
	require.Contains(t, mb, "fanouts")
	require.Contains(t, full, "chunks")
	require.Len(t, append(mb, full...), len(flagModes))
	for _, name := range append(mb, full...) {
		require.NotNil(t, fs.Lookup(name), name)
	}
}

// decimal shows a float32 default as written and converts back exactly.
func TestDecimal(t *testing.T) {
	for _, x := range []float32{0, 0.0005, 0.01, 0.9, 1e-7, 3} {
		d := decimal(x)
		require.Equal(t, x, float32(d), "%v", x)
		require.Equal(t, strconv.FormatFloat(float64(x), 'g', -1, 32), strconv.FormatFloat(d, 'g', -1, 64))
	}
}

// The kind-dependent flags print as strconv's shortest form and apply only
// when given.
func TestOpt(t *testing.T) {
	for _, s := range []string{"0.005", "1e-07", "1e+21", "123456789", "0.1"} {
		var f optFloat
		require.Equal(t, "", f.String())
		require.NoError(t, f.Set(s))
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		require.Equal(t, strconv.FormatFloat(v, 'g', -1, 64), f.String())
		x := float32(2)
		f.apply32(&x)
		require.Equal(t, float32(v), x)
	}
	var i optInt
	n := 7
	i.apply(&n)
	require.Equal(t, 7, n, "unset: the default stays")
	require.Error(t, i.Set("x"))
	require.NoError(t, i.Set("12"))
	i.apply(&n)
	require.Equal(t, 12, n)
	require.Equal(t, "12", i.String())
}
