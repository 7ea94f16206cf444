package train

import (
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/model"
)

// The default fanouts are 25 and 10, then 10 for every further hop.
func TestDefaultFanouts(t *testing.T) {
	for _, tc := range []struct {
		layers int
		want   []int
	}{
		{0, []int{}},
		{1, []int{25}},
		{2, []int{25, 10}},
		{4, []int{25, 10, 10, 10}},
	} {
		require.Equal(t, tc.want, DefaultFanouts(tc.layers), "%d layers", tc.layers)
	}
}

// Defaults fills the configuration of its mode, valid for every kind the
// mode takes, with the same common settings in every mode.
func TestDefaultsTable(t *testing.T) {
	var common *Common
	for _, k := range model.MinibatchKinds {
		s := Defaults(k, ModeMinibatch)
		require.Equal(t, ModeMinibatch, s.Mode)
		require.Equal(t, k, s.Minibatch.Model.Kind)
		require.NoError(t, s.Minibatch.Validate(), "%s", k)
		require.Zero(t, s.Full.Model.Layers)
		if k == model.KindSAGE {
			c := *s.Common()
			common = &c
		}
	}
	gat := Defaults(model.KindGAT, ModeMinibatch).Minibatch
	require.Equal(t, 200, gat.Epochs)
	require.Equal(t, float32(0.005), gat.LR)
	for _, m := range []Mode{ModeGraph, ModePipe, ModeHybrid} {
		for _, k := range model.DeepKinds {
			s := Defaults(k, m)
			require.Equal(t, k, s.Full.Model.Kind)
			require.Equal(t, m, s.Full.Mode)
			require.Equal(t, *common, *s.Common(), "%s %s", m, k)
			require.NoError(t, s.Full.Validate(2), "%s %s", m, k)
		}
	}
	require.Equal(t, 1, Defaults(model.KindGCNII, ModeGraph).Full.Chunks)
	require.Equal(t, 2, Defaults(model.KindGCNII, ModeHybrid).Full.Pipelines)
}
