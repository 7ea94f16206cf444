package textfile

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ParseError reports malformed or unreadable input: the file, the 1-based
// line and what is wrong. Line is 0 for problems with a whole file (a
// missing file, a count that disagrees with another file, a corrupt binary
// section). Readers built on this package return their input errors as a
// *ParseError, so callers can recover the position with errors.As.
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

// Unwrap returns the underlying error, such as fs.ErrNotExist,
// io.ErrUnexpectedEOF or ErrTruncated.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrTruncated reports a file that ends early: a truncated gzip stream or
// a binary file shorter than its header says. *ParseError wraps it; test
// for it with errors.Is.
var ErrTruncated = errors.New("file truncated")

// MaxDeflateRatio bounds how much deflate can expand its input: at most
// 258 bytes per 2 bits, about 1032:1. It lets a reader reject a count that
// a file cannot possibly hold before allocating for it.
const MaxDeflateRatio = 1032

const (
	// BufSize is the size of the buffered reader over each input and of
	// each read-ahead chunk.
	BufSize = 1 << 20
	// readAheadChunks is how many decompressed chunks may be queued ahead
	// of the parser.
	readAheadChunks = 4
	// smallFile is the size below which files are read without
	// read-ahead and with a smaller buffer.
	smallFile = 256 << 10
)

// Lines reads a text file line by line, transparently decompressing
// files whose name ends in ".gz" on a separate goroutine, and keeps the
// 1-based number of the last line returned.
type Lines struct {
	path string
	line int // number of the last line returned by next

	f    *os.File
	zr   *gzip.Reader
	ra   *readAhead
	br   *bufio.Reader
	long []byte // holds lines longer than the bufio buffer
	err  error  // the error that ended All
}

// Open opens path for reading, decompressing it when its name ends in
// ".gz". A missing file is reported as a
// *ParseError wrapping fs.ErrNotExist.
func Open(path string) (*Lines, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, OpenError(path, err)
	}
	lr := &Lines{path: path, f: f}
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
	lr.ra = newReadAhead(src, BufSize, readAheadChunks)
	lr.br = bufio.NewReaderSize(lr.ra, BufSize)
	return lr, nil
}

// OpenError turns an os.Open error on path into a *ParseError naming the
// file (wrapping fs.ErrNotExist for a missing one).
func OpenError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &ParseError{Path: path, Msg: "missing file", Err: fs.ErrNotExist}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &ParseError{Path: path, Msg: "cannot open", Err: err}
}

// Next returns the next line without its line terminator ("\n" or "\r\n").
// The slice is valid until the following call. At the end of the input it
// returns io.EOF; any other error is a *ParseError naming the line being
// read.
func (lr *Lines) Next() ([]byte, error) {
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

// All returns an iterator over the remaining lines, as Next returns them
// (each valid until the next iteration). It stops at the end of the input
// or at the first error, which Err then returns.
func (lr *Lines) All() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for {
			b, err := lr.Next()
			if err != nil {
				if err != io.EOF {
					lr.err = err
				}
				return
			}
			if !yield(b) {
				return
			}
		}
	}
}

// Err returns the error that ended All's iteration early, or nil if it
// reached the end of the input.
func (lr *Lines) Err() error { return lr.err }

// Path returns the file's path.
func (lr *Lines) Path() string { return lr.path }

// Line returns the 1-based number of the last line Next returned (0
// before the first).
func (lr *Lines) Line() int { return lr.line }

// readErr describes a read failure at the line being read.
func (lr *Lines) readErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &ParseError{Path: lr.path, Line: lr.line + 1, Msg: "truncated gzip stream", Err: ErrTruncated}
	}
	if lr.zr != nil {
		return &ParseError{Path: lr.path, Line: lr.line + 1, Msg: "corrupt gzip stream", Err: err}
	}
	return &ParseError{Path: lr.path, Line: lr.line + 1, Msg: "read error", Err: err}
}

// Errorf returns a *ParseError at the current line.
func (lr *Lines) Errorf(format string, args ...any) error {
	return &ParseError{Path: lr.path, Line: lr.line, Msg: fmt.Sprintf(format, args...)}
}

// Close releases the file and the read-ahead goroutine.
func (lr *Lines) Close() {
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

// MaxLines returns an upper bound on the number of non-empty lines the file
// at path can hold, from its size alone: a line takes at least two bytes
// ("0\n", or one byte for a final line without newline), and gzip expands
// by at most MaxDeflateRatio.
func MaxLines(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return math.MaxInt64
	}
	size := st.Size()
	if strings.HasSuffix(path, ".gz") {
		if size > math.MaxInt64/MaxDeflateRatio {
			return math.MaxInt64
		}
		size *= MaxDeflateRatio
	}
	return size/2 + 1
}
