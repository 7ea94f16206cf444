//go:build !nompi && mpich

package ptscotch

// Unavailable says why PT-Scotch is not linked: ErrMPICH.
var Unavailable = ErrMPICH
