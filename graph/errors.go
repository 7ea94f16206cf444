package graph

import (
	"errors"
	"strconv"
)

// ParseError reports malformed or unreadable input: the file, the 1-based
// line and what is wrong. Line is 0 for problems with a whole file (a
// missing file, a count that disagrees with another file, a corrupt binary
// section). Every reader in this package returns its input errors as a
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
// io.ErrUnexpectedEOF or ErrChecksum.
func (e *ParseError) Unwrap() error { return e.Err }

// Sentinel errors wrapped by *ParseError; test for them with errors.Is.
var (
	// ErrChecksum reports a binary section whose CRC-32C does not match
	// the one recorded when the file was written.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrNotBinary reports a file that does not start with the magic bytes
	// of the binary dataset format.
	ErrNotBinary = errors.New("not a gnnmpi binary dataset (bad magic)")
	// ErrVersion reports a binary dataset written in a format version
	// this build cannot read.
	ErrVersion = errors.New("unsupported binary format version")
	// ErrTruncated reports a file that ends early: a truncated gzip stream
	// or a binary file shorter than its header says.
	ErrTruncated = errors.New("file truncated")
)

// parseErr returns a *ParseError for path at line with a formatted message.
func parseErr(path string, line int, msg string) *ParseError {
	return &ParseError{Path: path, Line: line, Msg: msg}
}
