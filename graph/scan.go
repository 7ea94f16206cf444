package graph

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
	"sync"
)

// This file holds the byte-level machinery shared by the text readers and
// writers: opening (optionally gzip-compressed) files, reading lines with
// positions for error messages, and hand-written number parsing (atomic
// file replacement is package internal/atomicfile).

const (
	// bufSize is the size of the buffered reader over each input and of
	// each read-ahead chunk.
	bufSize = 1 << 20
	// readAheadChunks is how many decompressed chunks may be queued ahead
	// of the parser.
	readAheadChunks = 4
	// maxDeflateRatio bounds how much deflate can expand its input: at
	// most 258 bytes per 2 bits, about 1032:1. It lets a reader reject a
	// count that a file cannot possibly hold before allocating for it.
	maxDeflateRatio = 1032
	// smallFile is the size below which files are read without
	// read-ahead and with a smaller buffer.
	smallFile = 256 << 10
)

// lineReader reads a text file line by line, transparently decompressing
// files whose name ends in ".gz" on a separate goroutine, and keeps the
// 1-based number of the last line returned.
type lineReader struct {
	path string
	line int // number of the last line returned by next

	f    *os.File
	zr   *gzip.Reader
	ra   *readAhead
	br   *bufio.Reader
	long []byte // holds lines longer than the bufio buffer
}

// openLines opens path for reading. A missing file is reported as a
// *ParseError wrapping fs.ErrNotExist.
func openLines(path string) (*lineReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, openErr(path, err)
	}
	lr := &lineReader{path: path, f: f}
	var src io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
		if err != nil {
			f.Close()
			if errors.Is(err, io.EOF) {
				return nil, &ParseError{Path: path, Msg: "empty file, want gzip data", Err: ErrTruncated}
			}
			return nil, &ParseError{Path: path, Msg: "bad gzip header", Err: err}
		}
		lr.zr = zr
		src = zr
	}
	// Small files are read directly; large ones get a read-ahead
	// goroutine so that decompression and reading overlap parsing.
	if st, err := f.Stat(); err == nil && st.Size() < smallFile {
		lr.br = bufio.NewReaderSize(src, 64<<10)
		return lr, nil
	}
	lr.ra = newReadAhead(src, bufSize, readAheadChunks)
	lr.br = bufio.NewReaderSize(lr.ra, bufSize)
	return lr, nil
}

// openErr turns an os.Open error into a *ParseError naming the file.
func openErr(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &ParseError{Path: path, Msg: "missing file", Err: fs.ErrNotExist}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &ParseError{Path: path, Msg: "cannot open", Err: err}
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
		return nil, lr.readErr(err)
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

// readErr describes a read failure at the line being read.
func (lr *lineReader) readErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &ParseError{Path: lr.path, Line: lr.line + 1, Msg: "truncated gzip stream", Err: ErrTruncated}
	}
	if lr.zr != nil {
		return &ParseError{Path: lr.path, Line: lr.line + 1, Msg: "corrupt gzip stream", Err: err}
	}
	return &ParseError{Path: lr.path, Line: lr.line + 1, Msg: "read error", Err: err}
}

// errorf returns a *ParseError at the current line.
func (lr *lineReader) errorf(format string, args ...any) error {
	return parseErr(lr.path, lr.line, fmt.Sprintf(format, args...))
}

// close releases the file and the read-ahead goroutine.
func (lr *lineReader) close() {
	if lr.ra != nil {
		lr.ra.close()
	}
	if lr.zr != nil {
		lr.zr.Close()
	}
	lr.f.Close()
}

// readAhead reads its source on a separate goroutine into a small ring of
// chunks, so that decompression overlaps parsing.
type readAhead struct {
	full chan chunk
	free chan []byte
	done chan struct{}
	wg   sync.WaitGroup

	cur  []byte // unread part of the current chunk
	last []byte // the current chunk's buffer, recycled on the next fetch
	err  error  // error that ended the stream, returned once cur is empty
}

type chunk struct {
	b   []byte
	err error
}

func newReadAhead(src io.Reader, size, n int) *readAhead {
	ra := &readAhead{
		full: make(chan chunk, n),
		free: make(chan []byte, n),
		done: make(chan struct{}),
	}
	for range n {
		ra.free <- make([]byte, size)
	}
	ra.wg.Add(1)
	go func() {
		defer ra.wg.Done()
		for {
			var buf []byte
			select {
			case buf = <-ra.free:
			case <-ra.done:
				return
			}
			k := 0
			var err error
			for k < len(buf) && err == nil {
				var m int
				m, err = src.Read(buf[k:])
				k += m
			}
			select {
			case ra.full <- chunk{buf[:k], err}:
			case <-ra.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ra
}

// Read implements io.Reader.
func (ra *readAhead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.err != nil {
			return 0, ra.err
		}
		if ra.last != nil {
			ra.free <- ra.last[:cap(ra.last)]
			ra.last = nil
		}
		c := <-ra.full
		ra.cur, ra.last, ra.err = c.b, c.b, c.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// close stops the goroutine and waits for it, so that the source may be
// closed safely afterwards.
func (ra *readAhead) close() {
	close(ra.done)
	ra.wg.Wait()
}

// findTable returns the path of the table base in dir: base.csv.gz, or
// base.csv when only that exists. ok is false when neither exists; path is
// then the .csv.gz name, for error messages.
func findTable(dir, base string) (path string, ok bool) {
	gz := filepath.Join(dir, base+".csv.gz")
	if _, err := os.Stat(gz); err == nil {
		return gz, true
	}
	plain := filepath.Join(dir, base+".csv")
	if _, err := os.Stat(plain); err == nil {
		return plain, true
	}
	return gz, false
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

// parseFloat32 parses b, all of it, as a finite float32. Plain integers
// take a fast path; anything else goes through strconv.ParseFloat, which
// rounds correctly.
func parseFloat32(b []byte) (float32, bool) {
	if n := len(b); n > 0 && n <= 18 {
		i := 0
		if b[0] == '-' || b[0] == '+' {
			i = 1
		}
		if i < n {
			var v int64
			for ; i < n; i++ {
				d := b[i] - '0'
				if d > 9 {
					break
				}
				v = v*10 + int64(d)
			}
			if i == n {
				f := float32(v) // one correctly rounded conversion
				if b[0] == '-' {
					f = -f // keeps the sign of "-0"
				}
				return f, true
			}
		}
	}
	f, err := strconv.ParseFloat(string(b), 32)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return float32(f), true
}

// parseFloat64 parses b, all of it, as a finite float64.
func parseFloat64(b []byte) (float64, bool) {
	if v, ok := parseInt(b); ok && v > -1<<53 && v < 1<<53 {
		return float64(v), true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// quote returns b quoted for an error message, shortened if long.
func quote(b []byte) string {
	const max = 48
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}

// isSpace reports whether c separates fields in whitespace-separated text.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' }

// fields splits b at runs of white space into at most len(dst) fields,
// returning how many it found (which may exceed len(dst); extra fields are
// counted but not stored).
func fields(b []byte, dst [][]byte) int {
	n := 0
	i := 0
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			return n
		}
		j := i
		for j < len(b) && !isSpace(b[j]) {
			j++
		}
		if n < len(dst) {
			dst[n] = b[i:j]
		}
		n++
		i = j
	}
}
