// Package pipe will hold GNNPipe: a pure pipeline schedule of stages and
// graph chunks, tested for deadlock-freedom without communication, and the
// executor that runs it over package collective.
//
// It is empty until the pipeline issue fills it.
package pipe
