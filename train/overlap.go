package train

import (
	"gnnmpi/collective"
	"gnnmpi/internal/cores"
	"gnnmpi/metrics"
)

// resolveOverlap returns cfg with Overlap turned off when cfg.OverlapCores
// is positive and some rank has fewer cores than that (cores.Mine), and
// the number of cores of the rank with the fewest. The ranks agree: each
// rank's loader runs on a duplicate communicator, so either every rank
// overlaps or none does. It is collective over c, under
// metrics.PhaseSetup.
func resolveOverlap(c collective.Comm, cfg Config) (Config, int, error) {
	if !cfg.Overlap || cfg.OverlapCores <= 0 {
		return cfg, 0, nil
	}
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	_, local, err := collective.LocalRank(c)
	if err != nil {
		return cfg, 0, err
	}
	n := int64(cores.Mine(local))
	if err := collective.AllreduceVars(c, collective.Min, &n); err != nil {
		return cfg, 0, err
	}
	if n < int64(cfg.OverlapCores) {
		cfg.Overlap = false
	}
	return cfg, int(n), nil
}
