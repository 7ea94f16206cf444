package train

import (
	"fmt"
	"strings"
)

// Setting names a setting of training: a field of Config, FullConfig,
// Common or LoadOptions, spelled as its Go name (Model.Kind for the
// model's kind). The errors of training about a setting name it as a
// Setting (SettingError), so that a front end can name it its own way.
type Setting string

// The settings that SettingErrors name.
const (
	SettingBatchSize       Setting = "BatchSize"       // Config.BatchSize
	SettingC               Setting = "C"               // Config.C
	SettingCache           Setting = "Cache"           // Config.Cache
	SettingChunks          Setting = "Chunks"          // FullConfig.Chunks
	SettingDevice          Setting = "Device"          // Config.Device
	SettingEvalBatchSize   Setting = "EvalBatchSize"   // Config.EvalBatchSize
	SettingEvalFanouts     Setting = "EvalFanouts"     // Config.EvalFanouts
	SettingFanouts         Setting = "Fanouts"         // Config.Fanouts
	SettingFeatureFormat   Setting = "Format"          // LoadOptions.Format
	SettingGlobalBatchSize Setting = "GlobalBatchSize" // Config.GlobalBatchSize
	SettingGradComm        Setting = "GradComm"        // Config.GradComm
	SettingGradDType       Setting = "GradDType"       // Config.GradDType
	SettingLR              Setting = "LR"              // Common.LR
	SettingMode            Setting = "Mode"            // FullConfig.Mode
	SettingModel           Setting = "Model.Kind"      // Config.Model.Kind, FullConfig.Model.Kind
	SettingNormalize       Setting = "Model.Normalize" // Config.Model.Normalize
	SettingOptimizer       Setting = "Optimizer"       // Common.Optimizer
	SettingPartition       Setting = "Partition"       // LoadOptions.Partition or LoadOptions.Book
	SettingSampler         Setting = "Sampler"         // Config.Sampler
	SettingShuffle         Setting = "Shuffle"         // Config.Shuffle
	SettingSymmetrize      Setting = "Symmetrize"      // LoadOptions.Symmetrize
	SettingTopology        Setting = "Topology"        // Config.Topology
)

// ErrorSettings lists every Setting that a SettingError may name, sorted;
// a front end that renames them (SettingError.Message) checks its names
// against it.
var ErrorSettings = []Setting{
	SettingBatchSize, SettingC, SettingCache, SettingChunks, SettingDevice, SettingEvalBatchSize, SettingEvalFanouts, SettingFanouts,
	SettingFeatureFormat, SettingGlobalBatchSize, SettingGradComm, SettingGradDType, SettingLR, SettingMode, SettingModel,
	SettingNormalize, SettingOptimizer, SettingPartition, SettingSampler, SettingShuffle, SettingSymmetrize, SettingTopology,
}

// SettingError is an error of training that names settings: an invalid or
// conflicting value, or a failure of what a setting asked for. Error
// spells each setting as its Go name ("use Topology 1.5d or 2d"); Message
// spells it as a front end names it ("use --topology 1.5d or 2d").
//
// A SettingError wraps the errors among its arguments (as fmt.Errorf's %w
// does), so errors.Is and errors.As see them.
type SettingError struct {
	format string // a fmt format; its %w verbs are written %v
	args   []any  // the Setting arguments are the settings it names
}

// settingErrorf returns the SettingError of format and args, which follow
// fmt.Errorf's rules; each Setting argument names a setting, and each %w
// verb an error that the result wraps.
func settingErrorf(format string, args ...any) *SettingError {
	return &SettingError{format: strings.ReplaceAll(format, "%w", "%v"), args: args}
}

// Error returns the message with every setting spelled as its Go name.
func (e *SettingError) Error() string {
	return e.Message(func(s Setting) string { return string(s) })
}

// Message returns the message with every setting s spelled as name(s).
func (e *SettingError) Message(name func(Setting) string) string {
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if s, ok := a.(Setting); ok {
			a = name(s)
		}
		args[i] = a
	}
	return fmt.Sprintf(e.format, args...)
}

// Settings returns the settings that the message names, in order and with
// repetitions. The caller owns the returned slice.
func (e *SettingError) Settings() []Setting { return argsOf[Setting](e.args) }

// Unwrap returns the errors among the arguments.
func (e *SettingError) Unwrap() []error { return argsOf[error](e.args) }

// argsOf returns the arguments of type T, in order.
func argsOf[T any](args []any) []T {
	var out []T
	for _, a := range args {
		if v, ok := a.(T); ok {
			out = append(out, v)
		}
	}
	return out
}
