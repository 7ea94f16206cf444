//go:build nompi

package ptscotch

// Unavailable says why PT-Scotch is not linked: ErrNoMPI.
var Unavailable = ErrNoMPI
