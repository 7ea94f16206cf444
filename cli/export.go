package cli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/npy"
	"gnnmpi/train"
)

func exportCmd() *Command {
	return &Command{
		Name:    "export",
		Summary: "write a minibatch checkpoint's model (sage, gcn, gat) as safetensors with PyTorch Geometric's names (docs/data-formats.md)",
		Usage:   "--checkpoint DIR --out FILE",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			dir := fs.String("checkpoint", "", "checkpoint directory of a minibatch train run (train --checkpoint)")
			out := fs.String("out", "", "safetensors file to write (atomically)")
			return func(env *Env) error {
				if *dir == "" || *out == "" {
					return errors.New("export: --checkpoint and --out are required")
				}
				return collective.RankZero(env.Comm, func() error {
					sm, err := train.CheckpointModel(*dir)
					if err != nil {
						return err
					}
					if err := train.SaveModel(*out, sm.Config, sm.Weights, sm.Info); err != nil {
						return err
					}
					env.Printf("exported %s model of %s (epoch %d) to %s\n", sm.Config.Kind, *dir, sm.Info.BestEpoch, *out)
					return nil
				})
			}
		},
	}
}

// saveModel writes res's selected model (train.Result.Saved) to path on
// rank 0 (train.SaveModel), every rank returning its outcome.
func saveModel(env *Env, path string, res *train.Result, cfg train.Config, d *train.Data) error {
	return collective.RankZero(env.Comm, func() error {
		sm := res.Saved(cfg, d)
		if err := train.SaveModel(path, sm.Config, sm.Weights, sm.Info); err != nil {
			return err
		}
		which := fmt.Sprintf("epoch %d", sm.Info.BestEpoch)
		if sm.Info.BestEpoch == 0 {
			which = "the last epoch's; none was evaluated"
		}
		env.Printf("model (%s) saved to %s\n", which, path)
		return nil
	})
}

// logitsWriter returns a train.Hooks.Logits that gathers every rank's
// logits to every rank (collective.AllgatherSlice: n×classes float32 on
// each, so it suits graphs of moderate size) and writes them on rank 0 to
// path as a .npy (writeNpy) of one row per vertex in global id order.
func logitsWriter(env *Env, path string, n int64) func(owned []int64, logits *dense.Matrix) error {
	return func(owned []int64, logits *dense.Matrix) error {
		c := env.Comm
		ids, _, err := collective.AllgatherSlice(c, owned)
		if err != nil {
			return err
		}
		rows, _, err := collective.AllgatherSlice(c, logits.Data)
		if err != nil {
			return err
		}
		cols := logits.Cols
		return collective.RankZero(c, func() error {
			if int64(len(ids)) != n || len(rows) != len(ids)*cols {
				return fmt.Errorf("train: --save-logits: the ranks own %d vertices with %d values, want %d×%d", len(ids), len(rows), n, cols)
			}
			out := make([]float32, len(rows))
			for k, g := range ids {
				copy(out[int(g)*cols:(int(g)+1)*cols], rows[k*cols:(k+1)*cols])
			}
			if err := writeNpy(path, []int64{int64(len(ids)), int64(cols)}, out); err != nil {
				return fmt.Errorf("train: --save-logits: %w", err)
			}
			env.Printf("logits (%d×%d) saved to %s\n", len(ids), cols, path)
			return nil
		})
	}
}

// writeNpy writes data, of the given shape, to path as a .npy file
// (npy.Write), atomically.
func writeNpy(path string, shape []int64, data []float32) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := npy.Write(w, shape, data); err != nil {
		f.Abort()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}
