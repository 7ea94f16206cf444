// Package textfile is the byte-level machinery of the text readers in
// graph and partition: Lines reads a file line by line (gzip-compressed
// when its name ends in ".gz", with read-ahead for large files) and knows
// the line number; ParseError names the file and line of malformed input;
// ParseInt, ParseFloat32, ParseFloat64, Fields and Quote parse and quote
// without allocating; MaxLines bounds what a file can hold, so that a
// count in a header is checked before anything is allocated for it.
//
// Write is the matching writer: text through a buffer (gzip for ".gz"),
// replacing the file atomically by package internal/atomicfile.
package textfile
