package textfile

import (
	"bufio"
	"compress/gzip"
	"io"
	"strconv"
	"strings"

	"gnnmpi/internal/atomicfile"
)

// Write writes path with the content fill writes, through a buffer and,
// when path ends in ".gz", gzip at BestSpeed (zero header: modification
// time 0, no name; the default level took ~30 s for the 33M edges of R-MAT
// scale 20). The file is replaced atomically (package atomicfile): readers
// see the old file or the complete new one.
func Write(path string, fill func(w *bufio.Writer) error) (err error) {
	af, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			af.Abort()
		}
	}()
	var out io.Writer = af
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		if zw, err = gzip.NewWriterLevel(af, gzip.BestSpeed); err != nil {
			return err
		}
		out = zw
	}
	w := bufio.NewWriterSize(out, BufSize)
	if err := fill(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	return af.Commit()
}

// WriteInts writes one integer a line.
func WriteInts[T int32 | int64](w *bufio.Writer, xs []T) error {
	var buf []byte
	for _, x := range xs {
		buf = strconv.AppendInt(buf[:0], int64(x), 10)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
