package graph

import (
	"errors"

	"gnnmpi/internal/textfile"
)

// ParseError reports malformed or unreadable input: the file, the 1-based
// line and what is wrong. Line is 0 for problems with a whole file (a
// missing file, a count that disagrees with another file, a corrupt binary
// section). Every reader in this package returns its input errors as a
// *ParseError, so callers can recover the position with errors.As. It is
// the type of package internal/textfile, shared with the partition book's
// reader.
type ParseError = textfile.ParseError

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
	ErrTruncated = textfile.ErrTruncated
)

// parseErr returns a *ParseError for path at line with a formatted message.
func parseErr(path string, line int, msg string) *ParseError {
	return &ParseError{Path: path, Line: line, Msg: msg}
}
