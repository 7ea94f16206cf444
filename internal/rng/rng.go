// Package rng gives seeded, reproducible random streams.
//
// # Overview
//
// Nothing in gnnmpi calls the top-level functions of math/rand/v2. Every
// consumer asks New for a stream identified by a seed and a path of stream
// ids, so that the same seed gives the same numbers on every backend and
// rank count. Work that must agree across ranks (a global shuffle, weight
// initialisation) uses a stream without the rank; per-rank work adds the rank
// to the path.
package rng

import "math/rand/v2"

// New returns a PCG generator for seed and the stream path. Different paths
// give statistically independent streams; the same seed and path always give
// the same sequence.
func New(seed uint64, stream ...uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, Mix(stream...)))
}

// Mix hashes a stream path into one 64-bit value (SplitMix64 finaliser
// applied after each element).
func Mix(stream ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, s := range stream {
		h ^= s + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h = splitmix(h)
	}
	return h
}

func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
