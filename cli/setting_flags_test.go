package cli

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/model"
	"gnnmpi/train"
)

// Every setting that train's errors name has a flag of the train command,
// and the table names no other setting.
func TestSettingFlags(t *testing.T) {
	fs, _ := parseTrainFlags(t)
	for _, s := range train.ErrorSettings {
		name, ok := settingFlags[s]
		require.True(t, ok, "setting %s has no flag", s)
		require.NotNil(t, fs.Lookup(name), "flag --%s of setting %s", name, s)
		require.Equal(t, "--"+name, flagName(s))
	}
	for s := range settingFlags {
		require.Contains(t, train.ErrorSettings, s)
	}
	require.Equal(t, "Other", flagName("Other"), "a setting without a flag keeps its name")
}

// withFlagNames rewrites the settings of the SettingErrors anywhere in an
// error's tree as flags, and keeps the error in the chain.
func TestWithFlagNames(t *testing.T) {
	cfg := train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch
	cfg.BatchSize, cfg.GlobalBatchSize = 10, 20
	se := cfg.Validate()
	require.ErrorAs(t, se, new(*train.SettingError))
	const goNames = "train: give a batch size per rank (10, BatchSize) or a global one (20, GlobalBatchSize), not both"
	const flags = "train: give a batch size per rank (10, --batch-size) or a global one (20, --global-batch-size), not both"
	require.EqualError(t, se, goNames)
	plain := errors.New("plain")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"setting error", se, flags},
		{"wrapped", fmt.Errorf("fetch: %w", se), "fetch: " + flags},
		{"joined", errors.Join(plain, fmt.Errorf("x: %w", se)), "plain\nx: " + flags},
		{"twice", errors.Join(se, se), flags + "\n" + flags},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := withFlagNames(tc.err)
			require.EqualError(t, got, tc.want)
			require.ErrorIs(t, got, tc.err)
			require.ErrorIs(t, got, se)
		})
	}
	require.NoError(t, withFlagNames(nil))
	require.Same(t, plain, withFlagNames(plain), "no SettingError: the error itself")
}

// The train command reports train's setting errors with the flags' names.
func TestTrainSettingErrorNamesFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--batch-size", "10", "--global-batch-size", "20"}, "(10, --batch-size) or a global one (20, --global-batch-size)"},
		{[]string{"--sampler", "ladies"}, "use --model gcn (not sage)"},
		{[]string{"--cache-frac", "0.1", "--cache", "none"}, "choose --cache degree, vip or sim"},
	} {
		_, err := runCmd(t, 1, "train", slices.Concat([]string{"--data", "nowhere"}, tc.args)...)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
