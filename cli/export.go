package cli

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/atomicfile"
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
		env.Printf("model (epoch %d) saved to %s\n", sm.Info.BestEpoch, path)
		return nil
	})
}

// logitsWriter returns a train.Hooks.Logits that gathers every rank's
// logits to every rank (collective.AllgatherSlice: n×classes float32 on
// each, so it suits graphs of moderate size) and writes them on rank 0 to
// path as a .npy (writeNpyF32) of one row per vertex in global id order.
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
			if err := atomicfile.WriteFile(path, npyF32(out, len(ids), cols)); err != nil {
				return fmt.Errorf("train: --save-logits: %w", err)
			}
			env.Printf("logits (%d×%d) saved to %s\n", len(ids), cols, path)
			return nil
		})
	}
}

// npyF32 returns the NumPy .npy file (format version 1.0) of the
// row-major rows×cols float32 matrix x: the magic "\x93NUMPY", the
// version, a little-endian uint16 header length, the header dict padded
// with spaces and a newline so that the data starts at a multiple of 64
// bytes, then the values little-endian. numpy.load reads it.
func npyF32(x []float32, rows, cols int) []byte {
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols)
	pad := 64 - (10+len(dict)+1)%64
	if pad == 64 {
		pad = 0
	}
	hdr := dict + strings.Repeat(" ", pad) + "\n"
	b := make([]byte, 0, 10+len(hdr)+4*len(x))
	b = append(b, "\x93NUMPY\x01\x00"...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(hdr)))
	b = append(b, hdr...)
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}
