package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/model"
	"gnnmpi/npy"
	"gnnmpi/partition"
	"gnnmpi/safetensors"
	"gnnmpi/train"
)

// inferSplits are the values of infer's --split: the vertices whose rows
// the outputs hold.
var inferSplits = []string{"all", "train", "valid", "test"}

func inferCmd() *Command {
	return &Command{
		Name:    "infer",
		Summary: "run a saved model (train --save-model, export) over a dataset by the evaluation's exact layer-wise inference; write predictions, scores or a layer's embeddings as .npy in original vertex ids (docs/data-formats.md)",
		Usage:   "--model FILE.safetensors --data PATH [--out preds.npy] [--scores scores.npy] [--embeddings emb.npy --layer K] [--split all|train|valid|test [--eval-fanouts -1,-1]] [flags]",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			d := train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch
			modelPath := fs.String("model", "", "safetensors model file (train --save-model or gnnmpi export)")
			data := fs.String("data", "", "dataset: OGB raw-layout directory, .gnn binary file or partitioned directory (gnnmpi partition: each rank reads its parts)")
			out := fs.String("out", "", "write the predicted labels here: int64 .npy, one per vertex")
			scores := fs.String("scores", "", "write the class scores (logits) here: float32 .npy, vertices × classes")
			emb := fs.String("embeddings", "", "write layer --layer's output here: float32 .npy, vertices × width")
			layer := fs.Int("layer", 0, "the layer whose output --embeddings writes, 1 to the model's layers (default: the last, the logits)")
			split := fs.String("split", "all", "the vertices written: all (row v is original vertex v), or the training, validation or test vertices of --dataset-split (train, valid, test: rows in ascending original id, listed in a companion FILE.ids.npy)")
			dsplit := fs.String("dataset-split", "", "the dataset's split that --split train|valid|test reads (default: the dataset's first)")
			part := fs.String("partition", string(train.PartitionMetis), "vertex partition over the ranks: "+methodList(train.PartitionMethods)+", or a book file from `gnnmpi partition` (as train: the same partition gives train's logits bit for bit)")
			repl := fs.Int("replication", d.Replication, "feature replication c, as train's (divides the number of ranks)")
			format := fs.String("feature-format", string(graph.FeatureAuto), featureFormatUsage)
			dtype := enumVar(fs, "feature-dtype", d.FeatureDType, train.ParseFeatureDType, "feature storage and wire type: f32 or f16")
			norm := fs.String("feature-norm", "", "input features: row, none or auto (default: the normalisation the model file records, which training applied)")
			evalMem := fs.Int64("eval-memory", d.EvalMemory*4>>20, "MiB of gathered inputs per chunk of layer-wise inference (as train's)")
			evalFanouts := fs.String("eval-fanouts", "", "compute only the --split vertices, by sampling their receptive fields with these fanouts (one per layer, from the vertices; -1: all neighbours, exact), in minibatches of --eval-batch-size, instead of layer-wise inference over every vertex; --embeddings then writes the last layer only")
			evalBatch := fs.Int("eval-batch-size", d.EvalBatchSize, "seeds per rank per minibatch of --eval-fanouts")
			sym := fs.Bool("symmetrize", false, "add the reverse of every edge on load, as train --symmetrize")
			seed := fs.Uint64("seed", d.Seed, "random seed of the partition (METIS), as train's")
			return func(env *Env) error {
				if *modelPath == "" || *data == "" {
					return errors.New("infer: --model and --data are required")
				}
				if *out == "" && *scores == "" && *emb == "" {
					return errors.New("infer: nothing to write: give --out, --scores or --embeddings")
				}
				if !slices.Contains(inferSplits, *split) {
					return fmt.Errorf("infer: --split %q: want one of %s", *split, strings.Join(inferSplits, ", "))
				}
				if *layer != 0 && *emb == "" {
					return errors.New("infer: --layer selects the output of --embeddings: give --embeddings")
				}
				f, err := safetensors.ReadFile(*modelPath)
				if err != nil {
					return fmt.Errorf("infer: %w", err)
				}
				sm, err := train.ModelFromFile(f)
				if err != nil {
					return fmt.Errorf("infer: %s: %w", *modelPath, err)
				}
				cfg := d
				cfg.BLAS = env.BLAS // as train's: the products of layer-wise inference
				cfg.Replication, cfg.Seed, cfg.FeatureDType = *repl, *seed, *dtype
				cfg.EvalMemory = *evalMem << 20 / 4
				if *evalFanouts != "" {
					if cfg.EvalFanouts, err = parseInts(*evalFanouts); err != nil {
						return fmt.Errorf("infer: --eval-fanouts %q: %w", *evalFanouts, err)
					}
				}
				cfg.EvalBatchSize = *evalBatch
				cfg.FeatureNorm = sm.Info.FeatureNorm
				if *norm != "" {
					if cfg.FeatureNorm, err = train.ParseFeatureNorm(*norm); err != nil {
						return fmt.Errorf("infer: --feature-norm: %w", err)
					}
				}
				ff, err := graph.ParseFeatureFormat(*format)
				if err != nil {
					return fmt.Errorf("infer: %w", err)
				}
				if ff == graph.FeatureAuto && *dtype == alltoall.F16 {
					ff = graph.FeatureDense
				}
				lo := train.LoadOptions{Split: *dsplit, Symmetrize: *sym, Replication: *repl, Format: ff, Seed: *seed, Progress: env.Progress}
				if m := partition.Method(*part); slices.Contains(train.PartitionMethods, m) {
					lo.Partition = m
				} else {
					lo.Book = *part
				}
				return runInfer(env, *data, lo, cfg, sm, inferOutputs{model: *modelPath, preds: *out, scores: *scores, emb: *emb, layer: *layer, split: *split})
			}
		},
	}
}

// inferOutputs are infer's files ("" for none) and what they hold.
type inferOutputs struct {
	model, preds, scores, emb string
	layer                     int // --embeddings' layer (0: the last)
	split                     string
}

func runInfer(env *Env, path string, lo train.LoadOptions, cfg train.Config, sm train.SavedModel, o inferOutputs) error {
	c := env.Comm
	d, err := loadData(env, path, lo)
	if err != nil {
		return err
	}
	cfg.FeatureNorm = resolveFeatureNorm(env, cfg.FeatureNorm, d)
	L := sm.Config.Layers
	layer := o.layer
	if layer == 0 {
		layer = L
	}
	if layer < 1 || layer > L {
		return fmt.Errorf("infer: --layer %d: the model of %s has layers 1 to %d", layer, o.model, L)
	}
	embed := 0
	if o.emb != "" {
		embed = layer
	}
	env.Printf("inferring with the %s model of %s (%d layers, epoch %d, feature norm %s) on %s, %d ranks\n",
		sm.Config.Kind, o.model, L, sm.Info.BestEpoch, cfg.FeatureNorm, d.Name, c.Size())
	var only []int64 // with --eval-fanouts, the --split vertices alone
	if cfg.EvalFanouts != nil {
		only = splitSet(d, o.split)
	}
	inf, err := train.Infer(c, d, sm, cfg, embed, only, func(l int) {
		if c.Rank() == 0 {
			env.Progress("inference: layer %d of %d done", l, L)
		}
	})
	if err != nil {
		return fmt.Errorf("infer: %s: %w", o.model, err)
	}
	sel, n, ids, err := selectRows(c, d, inf, o.split)
	if err != nil {
		return err
	}
	if o.emb != "" {
		if err := writeSelected(env, o.emb, n, ids, sel, inf.Embeddings.Data, inf.Embeddings.Cols); err != nil {
			return err
		}
	}
	if o.scores != "" {
		if err := writeSelected(env, o.scores, n, ids, sel, inf.Logits.Data, inf.Logits.Cols); err != nil {
			return err
		}
	}
	if o.preds != "" {
		pred := make([]int64, inf.Logits.Rows)
		for i, p := range model.Argmax(inf.Logits) {
			pred[i] = int64(p)
		}
		if err := writeSelected(env, o.preds, n, ids, sel, pred, 1); err != nil {
			return err
		}
	}
	return nil
}

// selected are the rows of one rank's inference that an output holds:
// the index of each among the rank's rows and its row in the file.
type selected struct {
	index, row []int64
}

// selectRows returns the rows of inf that split selects and where they go
// (the file's row of each), the file's row count n and, for a split other
// than all, the original ids of the file's rows in order (every rank's
// selected ids, gathered to every rank: 8 bytes per selected vertex); for
// all, row v is original vertex v and ids is nil. It is collective over c.
func selectRows(c collective.Comm, d *train.Data, inf *train.Inference, split string) (selected, int64, []int64, error) {
	var s selected
	if split == "all" {
		s.index = make([]int64, len(inf.Orig))
		for i := range s.index {
			s.index[i] = int64(i)
		}
		s.row = slices.Clone(inf.Orig)
		return s, d.NumNodes(), nil, nil
	}
	set := splitSet(d, split)
	var mine []int64
	for i, g := range inf.Owned {
		if _, ok := slices.BinarySearch(set, g); ok {
			s.index = append(s.index, int64(i))
			mine = append(mine, inf.Orig[i])
		}
	}
	all, _, err := collective.AllgatherSlice(c, mine)
	if err != nil {
		return s, 0, nil, err
	}
	slices.Sort(all)
	s.row = make([]int64, len(mine))
	for k, v := range mine {
		r, _ := slices.BinarySearch(all, v)
		s.row[k] = int64(r)
	}
	return s, int64(len(all)), all, nil
}

// splitSet returns the vertices of split in d's split (ascending), nil for
// all.
func splitSet(d *train.Data, split string) []int64 {
	switch split {
	case "train":
		return d.Split.Train
	case "valid":
		return d.Split.Valid
	case "test":
		return d.Split.Test
	}
	return nil
}

// writeSelected writes the rows sel selects of src (cols values each; cols
// 1 writes a vector) as rows of an n-row .npy at path (writeShared), and
// ids, when not nil, as path's companion (idsPath).
func writeSelected[T npy.Elem](env *Env, path string, n int64, ids []int64, sel selected, src []T, cols int) error {
	shape := []int64{n, int64(cols)}
	if cols == 1 {
		shape = shape[:1]
	}
	if err := writeShared(env, path, shape, sel.row, func(k int64) []T {
		i := sel.index[k]
		return src[i*int64(cols) : (i+1)*int64(cols)]
	}); err != nil {
		return err
	}
	if ids != nil {
		ip := idsPath(path)
		if err := collective.RankZero(env.Comm, func() error { return writeNpyInts(ip, ids) }); err != nil {
			return fmt.Errorf("infer: %s: %w", ip, err)
		}
	}
	env.Printf("wrote %s (%v)\n", path, shape)
	return nil
}

// idsPath returns the companion of an output path that lists its rows'
// original ids: preds.npy → preds.ids.npy.
func idsPath(path string) string {
	return strings.TrimSuffix(path, ".npy") + ".ids.npy"
}

// writeNpyInts writes ids to path as an int64 .npy, atomically.
func writeNpyInts(path string, ids []int64) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	if err := npy.Write(f, []int64{int64(len(ids))}, ids); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// writeShared writes one .npy of the given shape at path from every rank
// at once: rank 0 creates a temporary file in path's directory
// (atomicfile.TempPrefix), sized whole, and writes the header; every rank
// then writes its rows (row k of rows: the values get(k), at row rows[k]),
// those at consecutive rows in one write each, and syncs; rank 0 renames
// the file over path once all have (npy.Writer). A failure on any rank
// removes the temporary file and is every rank's error. The directory must
// be one every rank sees. It is collective over env.Comm.
func writeShared[T npy.Elem](env *Env, path string, shape []int64, rows []int64, get func(k int64) []T) error {
	c := env.Comm
	tmp := filepath.Join(filepath.Dir(path), atomicfile.TempPrefix(path)+"infer")
	err := collective.RankZero(c, func() error {
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		w := npy.NewWriter[T](f, shape)
		err = f.Truncate(w.Size())
		if err == nil {
			err = w.WriteHeader()
		}
		return errors.Join(err, f.Close())
	})
	if err != nil {
		return fmt.Errorf("infer: %s: %w", path, err)
	}
	err = func() error {
		f, err := os.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		w := npy.NewWriter[T](f, shape)
		order := make([]int, len(rows))
		for k := range order {
			order[k] = k
		}
		slices.SortFunc(order, func(a, b int) int { return int(rows[a] - rows[b]) })
		var buf []T
		for a := 0; a < len(order) && err == nil; {
			b := a + 1
			for b < len(order) && rows[order[b]] == rows[order[b-1]]+1 {
				b++
			}
			buf = buf[:0]
			for _, k := range order[a:b] {
				buf = append(buf, get(int64(k))...)
			}
			err = w.WriteRows(rows[order[a]], buf)
			a = b
		}
		if err == nil {
			err = f.Sync()
		}
		return errors.Join(err, f.Close())
	}()
	if err := collective.Agree(c, err); err != nil {
		if c.Rank() == 0 {
			os.Remove(tmp)
		}
		return fmt.Errorf("infer: %s: %w", path, err)
	}
	return collective.RankZero(c, func() error {
		if err := os.Chmod(tmp, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("infer: %w", err)
		}
		if dir, err := os.Open(filepath.Dir(path)); err == nil {
			dir.Sync()
			dir.Close()
		}
		return nil
	})
}
