package partition

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A book file is a header line
//
//	gnnmpi-partition 1 nodes=N parts=K method=M
//
// followed by the part of each vertex, one decimal number per line in
// global-id order, optionally gzip-compressed.

// headerSyntax describes a valid header in error messages.
const headerSyntax = "gnnmpi-partition 1 nodes=N parts=K method=M"

// maxDeflateRatio bounds how much deflate can expand its input: at most 258
// bytes per 2 bits, about 1032:1. It lets Read reject a node count that a
// file cannot possibly hold before allocating for it.
const maxDeflateRatio = 1032

// ParseError reports a malformed or unreadable book file: the file, the
// 1-based line and what is wrong. Line is 0 for problems with the whole file
// (a missing file, a bad gzip header).
type ParseError struct {
	Path string // file being read
	Line int    // 1-based line number; 0 for the whole file
	Msg  string // what is wrong
	Err  error  // underlying error, if any (see Unwrap)
}

// Error returns "path:line: msg", or "path: msg" when Line is 0, followed by
// ": " and the underlying error when there is one.
func (e *ParseError) Error() string {
	s := e.Path
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	switch {
	case e.Msg != "" && e.Err != nil:
		return s + ": " + e.Msg + ": " + e.Err.Error()
	case e.Err != nil:
		return s + ": " + e.Err.Error()
	default:
		return s + ": " + e.Msg
	}
}

// Unwrap returns the underlying error, such as fs.ErrNotExist or
// io.ErrUnexpectedEOF (a truncated gzip stream).
func (e *ParseError) Unwrap() error { return e.Err }

// Write writes b to path: a header line
//
//	gnnmpi-partition 1 nodes=N parts=K method=M
//
// then the part of each vertex, one decimal number per line in global-id
// order. The file is gzip-compressed when path ends in ".gz". Write writes a
// temporary file in the same directory and renames it over path, so readers
// see either the old file or the complete new one.
func Write(path string, b *Book) error {
	if b.Parts < 1 || b.Parts > math.MaxInt32 {
		return fmt.Errorf("partition: writing %s: book with %d parts", path, b.Parts)
	}
	if err := checkMethod(b.Method); err != nil {
		return fmt.Errorf("partition: writing %s: %w", path, err)
	}
	for gid, r := range b.Part {
		if r < 0 || int(r) >= b.Parts {
			return fmt.Errorf("partition: writing %s: vertex %d in part %d outside [0,%d)", path, gid, r, b.Parts)
		}
	}
	if err := writeFile(path, b); err != nil {
		return fmt.Errorf("partition: writing %s: %w", path, err)
	}
	return nil
}

// writeFile writes b's text to a temporary file beside path, through gzip at
// BestSpeed with a zero header when path ends in ".gz", and renames it over
// path.
func writeFile(path string, b *Book) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	var out io.Writer = f
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		if zw, err = gzip.NewWriterLevel(f, gzip.BestSpeed); err != nil {
			return err
		}
		out = zw
	}
	w := bufio.NewWriterSize(out, 1<<20)
	if _, err := fmt.Fprintf(w, "gnnmpi-partition 1 nodes=%d parts=%d method=%s\n", len(b.Part), b.Parts, b.Method); err != nil {
		return err
	}
	var buf []byte
	for _, r := range b.Part {
		buf = strconv.AppendInt(buf[:0], int64(r), 10)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	// Persist the rename; failure to sync a directory is not fatal on
	// file systems that do not support it.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Read reads a book written by Write, gunzipping it when path ends in ".gz".
// Malformed input is reported as a *ParseError at its line
// ("path:line: message"): a bad header, a part id that is not a number or
// lies outside [0, parts), or fewer or more part ids than the header's node
// count. A missing file is a *ParseError wrapping fs.ErrNotExist, a
// truncated gzip stream one wrapping io.ErrUnexpectedEOF.
func Read(path string) (*Book, error) {
	lr, err := openLines(path)
	if err != nil {
		return nil, err
	}
	defer lr.close()

	h, err := lr.next()
	if err == io.EOF {
		return nil, &ParseError{Path: path, Line: 1, Msg: "empty file, want header " + strconv.Quote(headerSyntax)}
	}
	if err != nil {
		return nil, err
	}
	nodes, parts, method, err := parseHeader(h)
	if err != nil {
		return nil, lr.errorf("%v", err)
	}
	// Every id takes at least two bytes, so a larger count is a lie; check
	// before allocating for it.
	if nodes > maxLines(path) {
		return nil, lr.errorf("nodes=%d is more than the file can hold", nodes)
	}

	part := make([]int32, 0, nodes)
	for {
		b, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if int64(len(part)) == nodes {
			return nil, lr.errorf("more than nodes=%d part ids", nodes)
		}
		r, ok := parseInt(b)
		if !ok {
			return nil, lr.errorf("bad part id %s", quote(b))
		}
		if r < 0 || r >= int64(parts) {
			return nil, lr.errorf("part id %d out of range [0,%d)", r, parts)
		}
		part = append(part, int32(r))
	}
	if int64(len(part)) != nodes {
		return nil, &ParseError{Path: path, Line: lr.line + 1, Msg: fmt.Sprintf("unexpected end of file after %d of nodes=%d part ids", len(part), nodes)}
	}
	return newBook(part, parts, method), nil
}

// parseHeader parses "gnnmpi-partition 1 nodes=N parts=K method=M".
func parseHeader(line []byte) (nodes int64, parts int, method string, err error) {
	f := strings.Fields(string(line))
	if len(f) != 5 || f[0] != "gnnmpi-partition" {
		return 0, 0, "", fmt.Errorf("bad header %s, want %q", quote(line), headerSyntax)
	}
	if f[1] != "1" {
		return 0, 0, "", fmt.Errorf("unsupported partition book version %q, want 1", f[1])
	}
	value := func(field, key string) (int64, string, error) {
		v, ok := strings.CutPrefix(field, key+"=")
		if !ok || v == "" {
			return 0, "", fmt.Errorf("bad header field %q, want %s=…", field, key)
		}
		x, ok := parseInt([]byte(v))
		if key != "method" && !ok {
			return 0, "", fmt.Errorf("bad header field %q: not an integer", field)
		}
		return x, v, nil
	}
	nodes, _, err = value(f[2], "nodes")
	if err != nil {
		return 0, 0, "", err
	}
	if nodes < 0 {
		return 0, 0, "", fmt.Errorf("bad node count %d", nodes)
	}
	p, _, err := value(f[3], "parts")
	if err != nil {
		return 0, 0, "", err
	}
	if p < 1 || p > math.MaxInt32 {
		return 0, 0, "", fmt.Errorf("bad part count %d", p)
	}
	if _, method, err = value(f[4], "method"); err != nil {
		return 0, 0, "", err
	}
	return nodes, int(p), method, nil
}

// lineReader reads a book file line by line, gunzipping files whose name
// ends in ".gz", and keeps the 1-based number of the last line returned.
type lineReader struct {
	path string
	line int // number of the last line returned by next

	f    *os.File
	zr   *gzip.Reader
	br   *bufio.Reader
	long []byte // holds lines longer than the bufio buffer
}

// openLines opens path for reading.
func openLines(path string) (*lineReader, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &ParseError{Path: path, Msg: "missing file", Err: fs.ErrNotExist}
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &ParseError{Path: path, Msg: "cannot open", Err: err}
	}
	lr := &lineReader{path: path, f: f}
	var src io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
		if err != nil {
			f.Close()
			if errors.Is(err, io.EOF) {
				return nil, &ParseError{Path: path, Msg: "empty file, want gzip data", Err: io.ErrUnexpectedEOF}
			}
			return nil, &ParseError{Path: path, Msg: "bad gzip header", Err: err}
		}
		lr.zr = zr
		src = zr
	}
	lr.br = bufio.NewReaderSize(src, 1<<20)
	return lr, nil
}

// next returns the next line without its line terminator ("\n" or "\r\n").
// The slice is valid until the following call. At the end of the input it
// returns io.EOF; any other error is a *ParseError naming the line being
// read.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		lr.long = append(lr.long[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, b...)
		}
		b = lr.long
	}
	if err != nil && err != io.EOF {
		at := &ParseError{Path: lr.path, Line: lr.line + 1, Msg: "read error", Err: err}
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			at.Msg = "truncated gzip stream"
		case lr.zr != nil:
			at.Msg = "corrupt gzip stream"
		}
		return nil, at
	}
	if len(b) == 0 {
		return nil, io.EOF
	}
	lr.line++
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b, nil
}

// errorf returns a *ParseError at the current line.
func (lr *lineReader) errorf(format string, args ...any) error {
	return &ParseError{Path: lr.path, Line: lr.line, Msg: fmt.Sprintf(format, args...)}
}

// close releases the file.
func (lr *lineReader) close() {
	if lr.zr != nil {
		lr.zr.Close()
	}
	lr.f.Close()
}

// maxLines returns an upper bound on the number of non-empty lines the file
// at path can hold, from its size alone: a line takes at least two bytes
// ("0\n", or one byte for a final line without newline), and gzip expands
// by at most maxDeflateRatio.
func maxLines(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return math.MaxInt64
	}
	size := st.Size()
	if strings.HasSuffix(path, ".gz") {
		if size > math.MaxInt64/maxDeflateRatio {
			return math.MaxInt64
		}
		size *= maxDeflateRatio
	}
	return size/2 + 1
}

// parseInt parses b, all of it, as a decimal int64 with an optional sign.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	switch b[0] {
	case '-':
		neg = true
		b = b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false
		}
		if v > (math.MaxInt64-d)/10 {
			return 0, false // overflow
		}
		v = v*10 + d
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// quote returns b quoted for an error message, shortened if long.
func quote(b []byte) string {
	const max = 48
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}
