package cli

import (
	"flag"
	"fmt"

	"gnnmpi/graph"
)

// datasetFlags are the flags of the commands that read one dataset
// (info, partition, convert): --data, --symmetrize and --feature-format.
type datasetFlags struct {
	data, format *string
	symmetrize   *bool
}

// addDatasetFlags registers --data (default data, help dataUsage),
// --symmetrize (help symUsage) and --feature-format (help formatUsage) on
// fs.
func addDatasetFlags(fs *flag.FlagSet, data, dataUsage, symUsage, formatUsage string) *datasetFlags {
	return &datasetFlags{
		data:       fs.String("data", data, dataUsage),
		symmetrize: fs.Bool("symmetrize", false, symUsage),
		format:     fs.String("feature-format", string(graph.FeatureAuto), formatUsage),
	}
}

// featureFormat returns the parsed --feature-format; its error names the
// command cmd.
func (f *datasetFlags) featureFormat(cmd string) (graph.FeatureFormat, error) {
	ff, err := graph.ParseFeatureFormat(*f.format)
	if err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	return ff, nil
}
