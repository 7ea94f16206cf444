package graph

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gnnmpi/dense"
	"gnnmpi/internal/textfile"
	"gnnmpi/sparse"
)

// WriteOGB writes d to dir in the OGB raw layout read by ReadOGB: gzip
// files with modification time 0 and no file name, integers in decimal,
// features as the shortest decimal that reads back as the same float32
// (integer-valued features as plain integers). Edges are written row by
// row in storage order, and num-edge-list is written alongside. Each file
// is replaced atomically, but the dataset as a whole is not: a reader
// running concurrently may see a mix of old and new files.
//
// Tables of d's layout that d does not have (features, labels, splits) are
// removed from dir, so that reading dir back gives d; a stale split
// directory holding other files is an error.
//
// d must be whole (Rows nil), valid, unweighted (the OGB layout has no edge
// weights) and hold only finite features.
func WriteOGB(dir string, d *Dataset) error {
	if err := checkOGBWritable(d); err != nil {
		return err
	}
	raw := filepath.Join(dir, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}
	if err := writeOGBGraph(raw, d); err != nil {
		return err
	}
	if err := writeOGBNodeTables(raw, d); err != nil {
		return err
	}
	return writeOGBSplits(filepath.Join(dir, "split"), d)
}

// checkOGBWritable reports why WriteOGB cannot write d: d is partial,
// invalid, weighted or has a feature that is not finite.
func checkOGBWritable(d *Dataset) error {
	if d.Rows != nil {
		return fmt.Errorf("graph: WriteOGB of a partial dataset (%d of %d rows)", len(d.Rows), d.NumNodes)
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("graph: WriteOGB: %w", err)
	}
	if d.Adj != nil && d.Adj.Values != nil {
		return errors.New("graph: WriteOGB: the OGB layout cannot store edge weights")
	}
	if d.Feat != nil {
		for k, v := range d.Feat.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("graph: WriteOGB: feature (%d,%d) is %v", k/d.Feat.Cols, k%d.Feat.Cols, v)
			}
		}
	}
	if a := d.FeatCSR; a != nil {
		for i := range a.NRows {
			for k := a.Indptr[i]; a.Values != nil && k < a.Indptr[i+1]; k++ {
				if v := a.Values[k]; math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("graph: WriteOGB: feature (%d,%d) is %v", i, a.Indices[k], v)
				}
			}
		}
	}
	return nil
}

// writeOGBGraph writes the tables num-node-list, num-edge-list and edge of
// d to the raw directory.
func writeOGBGraph(raw string, d *Dataset) error {
	nnz := d.NumEdges()
	if err := writeTable(raw, "num-node-list", func(w *bufio.Writer) error {
		_, err := w.WriteString(strconv.FormatInt(d.NumNodes, 10) + "\n")
		return err
	}); err != nil {
		return err
	}
	if err := writeTable(raw, "num-edge-list", func(w *bufio.Writer) error {
		_, err := w.WriteString(strconv.FormatInt(nnz, 10) + "\n")
		return err
	}); err != nil {
		return err
	}
	return writeTable(raw, "edge", func(w *bufio.Writer) error {
		if d.Adj == nil {
			return nil
		}
		return writeEdgeLines(w, d.Adj)
	})
}

// writeEdgeLines writes one line "i,j" for each entry of a, row by row in
// storage order.
func writeEdgeLines(w *bufio.Writer, a *sparse.CSR) error {
	var buf []byte
	for i := int64(0); i < a.NRows; i++ {
		for _, j := range a.Row(i) {
			buf = strconv.AppendInt(buf[:0], i, 10)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, j, 10)
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFeatureLines writes each row of feat as one line of comma-separated
// numbers (see appendFloat32).
func writeFeatureLines(w *bufio.Writer, feat *dense.Matrix) error {
	var buf []byte
	for i := 0; i < feat.Rows; i++ {
		buf = buf[:0]
		for k, v := range feat.Row(i) {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = appendFloat32(buf, v)
		}
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// writeSparseFeatureLines writes the sparse rows a as lines of
// comma-separated numbers, zeros included.
func writeSparseFeatureLines(w *bufio.Writer, a *sparse.Matrix[float32]) error {
	var buf []byte
	for i := range a.NRows {
		buf = buf[:0]
		k := a.Indptr[i]
		for j := range a.NCols {
			if j > 0 {
				buf = append(buf, ',')
			}
			v := float32(0)
			if k < a.Indptr[i+1] && a.Indices[k] == j {
				v = 1
				if a.Values != nil {
					v = a.Values[k]
				}
				k++
			}
			buf = appendFloat32(buf, v)
		}
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// writeOGBNodeTables writes the tables node-feat and node-label of d to the
// raw directory, or removes them when d has no features or labels.
func writeOGBNodeTables(raw string, d *Dataset) error {
	if d.HasFeatures() {
		err := writeTable(raw, "node-feat", func(w *bufio.Writer) error {
			if d.FeatCSR != nil {
				return writeSparseFeatureLines(w, d.FeatCSR)
			}
			return writeFeatureLines(w, d.Feat)
		})
		if err != nil {
			return err
		}
	} else if err := removeTable(raw, "node-feat"); err != nil {
		return err
	}
	if d.Labels != nil {
		return writeTable(raw, "node-label", func(w *bufio.Writer) error {
			return writeLabelLines(w, d.Labels)
		})
	}
	return removeTable(raw, "node-label")
}

// writeOGBSplits writes every split of d to its directory under splitDir,
// with each part's ids in ascending order, after removing the split
// directories d does not have (see removeStaleSplits).
func writeOGBSplits(splitDir string, d *Dataset) error {
	if err := removeStaleSplits(splitDir, d.Splits); err != nil {
		return err
	}
	for _, name := range d.SplitNames() {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
			return fmt.Errorf("graph: WriteOGB: split name %q is not a valid directory name", name)
		}
		s := d.Splits[name]
		sd := filepath.Join(splitDir, name)
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return err
		}
		for k, ids := range [...][]int64{s.Train, s.Valid, s.Test} {
			if !slices.IsSorted(ids) {
				ids = slices.Sorted(slices.Values(ids))
			}
			if err := writeTable(sd, splitParts[k], func(w *bufio.Writer) error {
				return textfile.WriteInts(w, ids)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeStaleSplits removes the split directories under dir that keep does
// not name, provided they hold nothing but split tables.
func removeStaleSplits(dir string, keep map[string]Split) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // nothing there (or nothing we may touch)
	}
	for _, e := range ents {
		if _, ok := keep[e.Name()]; ok || !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		files, err := os.ReadDir(sub)
		if err != nil {
			return err
		}
		for _, f := range files {
			base := strings.TrimSuffix(strings.TrimSuffix(f.Name(), ".gz"), ".csv")
			if f.IsDir() || !slices.Contains(splitParts[:], base) {
				return fmt.Errorf("graph: WriteOGB: stale split directory %s holds %s; remove it", sub, f.Name())
			}
		}
		if err := os.RemoveAll(sub); err != nil {
			return err
		}
	}
	return nil
}

// removeTable removes both forms of the table base in dir, if present.
func removeTable(dir, base string) error {
	for _, p := range []string{base + ".csv.gz", base + ".csv"} {
		if err := os.Remove(filepath.Join(dir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// writeTable atomically writes dir/base.csv.gz with the content fill
// writes, and removes a stale uncompressed dir/base.csv.
func writeTable(dir, base string, fill func(w *bufio.Writer) error) error {
	if err := writeText(filepath.Join(dir, base+".csv.gz"), fill); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, base+".csv")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// writeText writes path with textfile.Write (atomic; gzip for ".gz"),
// naming the file in an error.
func writeText(path string, fill func(w *bufio.Writer) error) error {
	if err := textfile.Write(path, fill); err != nil {
		return fmt.Errorf("graph: writing %s: %w", path, err)
	}
	return nil
}

// appendFloat32 appends the shortest decimal form of v that parses back to
// v as a float32; integers in (-2²⁴, 2²⁴) are written without exponent or
// point.
func appendFloat32(b []byte, v float32) []byte {
	if v > -1<<24 && v < 1<<24 && v == float32(int32(v)) && !(v == 0 && math.Signbit(float64(v))) {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, float64(v), 'g', -1, 32)
}

// writeLabelLines writes one label a line, "nan" for Unlabelled (as
// readLabels reads it).
func writeLabelLines(w *bufio.Writer, labels []int32) error {
	var buf []byte
	for _, l := range labels {
		buf = buf[:0]
		if l == Unlabelled {
			buf = append(buf, "nan"...)
		} else {
			buf = strconv.AppendInt(buf, int64(l), 10)
		}
		if _, err := w.Write(append(buf, '\n')); err != nil {
			return err
		}
	}
	return nil
}
