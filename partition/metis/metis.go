package metis

/*
#cgo LDFLAGS: -lmetis
#include <metis.h>
#include <signal.h>
#include <stddef.h>

// gnnmpi_metis_part runs METIS_PartGraphKway or METIS_PartGraphRecursive.
// METIS (GKlib's gk_sigtrap/gk_siguntrap) installs its own SIGABRT and
// SIGTERM handlers with signal(3) for the duration of the call and puts the
// old ones back with signal(3) as well, which loses the SA_SIGINFO and
// SA_ONSTACK flags the Go runtime's handlers need. Save and restore the full
// dispositions with sigaction(2) around the call.
static int gnnmpi_metis_part(int recursive, idx_t *nvtxs, idx_t *ncon,
		idx_t *xadj, idx_t *adjncy, idx_t *vwgt, idx_t *nparts,
		idx_t *options, idx_t *edgecut, idx_t *part) {
	struct sigaction abrt, term;
	sigaction(SIGABRT, NULL, &abrt);
	sigaction(SIGTERM, NULL, &term);
	int rc;
	if (recursive) {
		rc = METIS_PartGraphRecursive(nvtxs, ncon, xadj, adjncy, vwgt, NULL,
			NULL, nparts, NULL, NULL, options, edgecut, part);
	} else {
		rc = METIS_PartGraphKway(nvtxs, ncon, xadj, adjncy, vwgt, NULL,
			NULL, nparts, NULL, NULL, options, edgecut, part);
	}
	sigaction(SIGABRT, &abrt, NULL);
	sigaction(SIGTERM, &term, NULL);
	return rc;
}
*/
import "C"

import (
	"sync"
	"unsafe"
)

// Compile-time checks that the Go side agrees with metis.h: idx_t is 32 bits
// (IDXTYPEWIDTH 32) and the return codes are those of rstatus_et. Each index
// expression is out of range, so fails to compile, unless the two sides are
// equal.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(C.idx_t(0))-4]
	_ = [1]struct{}{}[C.IDXTYPEWIDTH-32]
	_ = [1]struct{}{}[C.METIS_OK-statusOK]
	_ = [1]struct{}{}[statusErrorInput-C.METIS_ERROR_INPUT]
	_ = [1]struct{}{}[statusErrorMemory-C.METIS_ERROR_MEMORY]
	_ = [1]struct{}{}[statusError-C.METIS_ERROR]
)

// mu serialises calls into METIS, which swaps process-wide signal handlers.
var mu sync.Mutex

// BUG(metis): While METIS runs, its own handlers for SIGABRT and SIGTERM are
// installed process-wide, so a SIGTERM sent to the process during a
// PartGraph call is not seen by os/signal and may crash the process instead
// (METIS's handler long-jumps on whichever thread receives it).

// PartGraph partitions the undirected graph with n = len(xadj)-1 vertices
// whose neighbours of vertex i are adjncy[xadj[i]:xadj[i+1]] into nparts parts,
// minimising the number of cut edges subject to balancing each of the ncon
// vertex-weight constraints.
//
// The graph must be symmetric (j is a neighbour of i exactly when i is a
// neighbour of j); METIS's result is meaningless otherwise. Self-loops are
// ignored. vwgt is nil for unit weights or holds n·ncon non-negative weights,
// those of vertex i at vwgt[i*ncon:(i+1)*ncon]; with nil vwgt, ncon must be 1.
// Each constraint's total weight must fit METIS's idx_t.
//
// part[i] in [0, nparts) is vertex i's part and edgecut is the number of
// undirected edges between parts, as METIS reports it. With nparts == 1
// PartGraph returns all zeros without calling METIS. The caller owns part;
// the inputs are not modified.
//
// Invalid arguments give an error wrapping ErrInput, values too large for
// idx_t one wrapping ErrOverflow, and METIS failures ErrInput, ErrMemory or
// ErrMETIS. PartGraph is safe for concurrent use, but calls run one at a
// time.
func PartGraph(xadj, adjncy []int64, vwgt []int64, ncon, nparts int, opt Options) (part []int32, edgecut int64, err error) {
	in, err := convert(xadj, adjncy, vwgt, ncon, nparts, opt)
	if err != nil {
		return nil, 0, err
	}
	part = make([]int32, in.n)
	if in.n == 0 || nparts == 1 {
		return part, 0, nil
	}

	var options [C.METIS_NOPTIONS]C.idx_t
	C.METIS_SetDefaultOptions(&options[0])
	options[C.METIS_OPTION_NUMBERING] = 0
	options[C.METIS_OPTION_SEED] = C.idx_t(in.seed)
	if in.ufactor > 0 {
		options[C.METIS_OPTION_UFACTOR] = C.idx_t(in.ufactor)
	}
	if opt.Contiguous {
		options[C.METIS_OPTION_CONTIG] = 1
	}
	var recursive C.int
	if opt.Recursive {
		recursive = 1
	}
	var vw *C.idx_t
	if in.vwgt != nil {
		vw = (*C.idx_t)(unsafe.Pointer(&in.vwgt[0]))
	}
	nvtxs, ncn, np := C.idx_t(in.n), C.idx_t(in.ncon), C.idx_t(in.nparts)
	var cut C.idx_t

	// The slices hold no Go pointers, and METIS keeps none of them after
	// returning, so passing Go memory is allowed by the cgo rules.
	mu.Lock()
	rc := C.gnnmpi_metis_part(recursive, &nvtxs, &ncn,
		(*C.idx_t)(unsafe.Pointer(&in.xadj[0])),
		(*C.idx_t)(unsafe.Pointer(&in.adjncy[0])),
		vw, &np, &options[0], &cut,
		(*C.idx_t)(unsafe.Pointer(&part[0])))
	mu.Unlock()
	if err := codeError(int(rc)); err != nil {
		return nil, 0, err
	}
	return part, int64(cut), nil
}
