package cli

import (
	"fmt"
	"time"

	"gnnmpi/train"
)

// loadData loads the dataset for training or the fetch sweep (train.Load:
// the rank's parts, with lo's replication factor; symmetrized on request)
// and reports it on rank 0, warning about a graph that looks directed and
// about empty classes.
func loadData(env *Env, path string, lo train.LoadOptions) (*train.Data, error) {
	t0 := time.Now()
	d, err := train.Load(env.Comm, path, lo)
	if err != nil {
		return nil, err
	}
	kind := string(d.FeatureFormat())
	if d.FeatCSR != nil {
		kind = fmt.Sprintf("%s, %d nonzeros on rank %d", kind, d.FeatCSR.NNZ(), env.Comm.Rank())
	}
	env.Progress("loaded %s in %.2fs: %d vertices, %d features (%s), %d classes; split %s with %d training vertices; %d parts (%s) × replication %d",
		d.Name, time.Since(t0).Seconds(), d.NumNodes(), d.NumFeatures(), kind, d.NumClasses, d.SplitName, d.TrainTotal, d.Book.Parts, d.Book.Method, max(lo.Replication, 1))
	warnDirection(env, path, d.Reciprocity, d.Symmetrized)
	warnClasses(env, path, d.EmptyClasses, d.NumClasses)
	return d, nil
}

// resolveFeatureNorm returns the normalisation norm applies to d's
// features (train.FeatureNorm.Resolve) and logs the choice auto made.
func resolveFeatureNorm(env *Env, norm train.FeatureNorm, d *train.Data) train.FeatureNorm {
	r := norm.Resolve(d.NonNegative)
	if norm == train.FeatureNormAuto {
		why := "non-negative"
		if !d.NonNegative {
			why = "real-valued (some are negative)"
		}
		env.Progress("feature normalisation auto: %s, as the features are %s", r, why)
	}
	return r
}
