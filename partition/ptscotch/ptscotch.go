//go:build !nompi && !mpich

package ptscotch

/*
#cgo CFLAGS: -I/usr/include/scotch
#cgo LDFLAGS: -lptscotch -lptscotcherr
#cgo pkg-config: ompi-c
#include <stdint.h>
#include <stdio.h>
#include <mpi.h>
#include <ptscotch.h>

static int gp_strat_flag(int s) {
	switch (s) {
	case 1: return SCOTCH_STRATQUALITY;
	case 2: return SCOTCH_STRATSPEED;
	case 3: return SCOTCH_STRATBALANCE;
	case 4: return SCOTCH_STRATSCALABILITY;
	default: return SCOTCH_STRATDEFAULT;
	}
}

// gp_part builds the distributed graph of this rank's vertloc/edgeloc on the
// communicator of Fortran handle fcomm, partitions it into parts and
// stores each local vertex's part in part. It returns 0, or the number of
// the step that failed (1 dgraphInit, 2 dgraphBuild, 3 dgraphCheck,
// 4 stratInit, 5 stratDgraphMapBuild, 6 dgraphPart). Every structure is
// freed before it returns: Scotch keeps no pointer to the arrays.
static int gp_part(MPI_Fint fcomm, SCOTCH_Num vertlocnbr, SCOTCH_Num *vertloctab,
		SCOTCH_Num edgelocnbr, SCOTCH_Num *edgeloctab, SCOTCH_Num parts,
		int strat, double balrat, SCOTCH_Num seed, int docheck, SCOTCH_Num *parttab) {
	MPI_Comm comm = MPI_Comm_f2c(fcomm);
	int procnbr = 1;
	MPI_Comm_size(comm, &procnbr);
	SCOTCH_Context ctx;
	if (SCOTCH_contextInit(&ctx) != 0) return 7;
	int step = 0;
	if (SCOTCH_contextOptionSetNum(&ctx, SCOTCH_OPTIONNUMDETERMINISTIC, 1) != 0 ||
			SCOTCH_contextRandomClone(&ctx) != 0) {
		SCOTCH_contextExit(&ctx);
		return 8;
	}
	SCOTCH_contextRandomSeed(&ctx, seed);
	SCOTCH_Dgraph g, cg;
	if (SCOTCH_dgraphInit(&g, comm) != 0) {
		SCOTCH_contextExit(&ctx);
		return 1;
	}
	if (SCOTCH_dgraphBuild(&g, 0, vertlocnbr, vertlocnbr, vertloctab, NULL,
			NULL, NULL, edgelocnbr, edgelocnbr, edgeloctab, NULL, NULL) != 0) {
		step = 2;
	} else if (docheck && SCOTCH_dgraphCheck(&g) != 0) {
		step = 3;
	} else if (SCOTCH_dgraphInit(&cg, comm) != 0) {
		step = 1;
	} else {
		if (SCOTCH_contextBindDgraph(&ctx, &g, &cg) != 0) {
			step = 9;
		} else {
			SCOTCH_Strat s;
			if (SCOTCH_stratInit(&s) != 0) {
				step = 4;
			} else {
				if (SCOTCH_stratDgraphMapBuild(&s, gp_strat_flag(strat), procnbr, parts, balrat) != 0) {
					step = 5;
				} else if (SCOTCH_dgraphPart(&cg, parts, &s, parttab) != 0) {
					step = 6;
				}
				SCOTCH_stratExit(&s);
			}
		}
		SCOTCH_dgraphExit(&cg);
	}
	SCOTCH_dgraphExit(&g);
	SCOTCH_contextExit(&ctx);
	return step;
}
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// MaxNum is the largest SCOTCH_Num of the linked PT-Scotch (2³¹−1 for the
// 32-bit build, 2⁶³−1 for the 64-bit one). Vertex counts, global vertex
// numbers and edge counts, local and global, must not exceed it.
const MaxNum = int64(math.MaxUint64 >> (65 - 8*unsafe.Sizeof(C.SCOTCH_Num(0))))

// Available reports whether this binary was built with PT-Scotch.
const Available = true

// Unavailable is nil: PT-Scotch is linked.
var Unavailable error

// mu serialises calls: Scotch's random state is process-wide.
var mu sync.Mutex

var steps = [...]string{1: "SCOTCH_dgraphInit", 2: "SCOTCH_dgraphBuild", 3: "SCOTCH_dgraphCheck",
	4: "SCOTCH_stratInit", 5: "SCOTCH_stratDgraphMapBuild", 6: "SCOTCH_dgraphPart",
	7: "SCOTCH_contextInit", 8: "SCOTCH_contextOptionSetNum", 9: "SCOTCH_contextBindDgraph"}

// Part partitions the distributed undirected graph whose vertices are
// spread over the ranks of the MPI communicator with Fortran handle comm in
// consecutive blocks, in rank order, into parts parts, minimising the
// number of cut edges with each part within opt.Imbalance of the average
// vertex count. It is collective over the communicator: every rank calls
// it with its own block and the same parts and opt.
//
// This rank's block has n = len(xadj)−1 vertices; the neighbours of its
// i-th vertex are adjncy[xadj[i]:xadj[i+1]], as global vertex numbers
// (those of rank q's block follow those of ranks 0..q−1). A rank may hold
// no vertex (xadj = [0]). The graph must be symmetric, also across ranks,
// without self-loops or repeated edges; with check set, Part verifies that
// with SCOTCH_dgraphCheck (collective, O(edges)) and fails with ErrScotch
// otherwise. Without check, a graph that is not valid gives undefined
// results.
//
// part[i] in [0, parts) is the part of this rank's i-th vertex; the caller
// owns it, and the inputs are not modified. The result is the same for
// the same graph, blocks, parts and opt.
//
// Invalid arguments give an error wrapping ErrInput, values above MaxNum
// one wrapping ErrOverflow (these two are found before any communication,
// so a rank returning them leaves the others blocked: callers check the
// global sizes against MaxNum collectively first), and a PT-Scotch failure
// one wrapping ErrScotch. Part must be called from a thread allowed to
// make MPI calls.
func Part(comm int, xadj, adjncy []int64, parts int, opt Options, check bool) ([]int32, error) {
	if err := checkArgs(xadj, adjncy, parts, opt); err != nil {
		return nil, err
	}
	n := len(xadj) - 1
	if int64(n) > MaxNum || int64(len(adjncy)) > MaxNum || int64(parts) > MaxNum {
		return nil, fmt.Errorf("%w: %d vertices, %d edges, %d parts (max %d)", ErrOverflow, n, len(adjncy), parts, MaxNum)
	}
	if comm < math.MinInt32 || comm > math.MaxInt32 {
		return nil, fmt.Errorf("%w: communicator handle %d", ErrInput, comm)
	}
	vert := make([]C.SCOTCH_Num, n+1)
	for i, v := range xadj {
		vert[i] = C.SCOTCH_Num(v)
	}
	edge := make([]C.SCOTCH_Num, max(len(adjncy), 1)) // never a nil pointer
	for i, j := range adjncy {
		if j > MaxNum {
			return nil, fmt.Errorf("%w: vertex %d (max %d)", ErrOverflow, j, MaxNum)
		}
		edge[i] = C.SCOTCH_Num(j)
	}
	out := make([]C.SCOTCH_Num, max(n, 1))
	imb := opt.Imbalance
	if imb == 0 {
		imb = DefaultImbalance
	}
	var doCheck C.int
	if check {
		doCheck = 1
	}
	// The seed is reduced to SCOTCH_Num's range, the same on every rank.
	seed := C.SCOTCH_Num(uint64(opt.Seed) % uint64(MaxNum))

	// The slices hold no Go pointers and Scotch keeps none of them after
	// gp_part returns, so passing Go memory is allowed by the cgo rules.
	mu.Lock()
	step := C.gp_part(C.MPI_Fint(comm), C.SCOTCH_Num(n), &vert[0], C.SCOTCH_Num(len(adjncy)), &edge[0],
		C.SCOTCH_Num(parts), C.int(opt.Strategy), C.double(imb), seed, doCheck, &out[0])
	mu.Unlock()
	if step != 0 {
		return nil, fmt.Errorf("%w: %s", ErrScotch, steps[step])
	}
	part := make([]int32, n)
	for i := range part {
		p := int64(out[i])
		if p < 0 || p >= int64(parts) {
			return nil, fmt.Errorf("%w: %s put vertex %d in part %d of %d", ErrScotch, steps[6], i, p, parts)
		}
		part[i] = int32(p)
	}
	return part, nil
}
