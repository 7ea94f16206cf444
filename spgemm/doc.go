// Package spgemm holds distributed sparse matrix–matrix products C = A·B
// over a semiring: 1D, 1.5D (Tripathy, Yelick, Buluç, MLSys'24) and 2D
// SUMMA, written against collective.Comm and collective.Grid and calling
// package sparse for all local work.
//
// # Overview
//
// The package keeps CombBLAS's split: the process grid is
// collective.Grid (CommGrid.h), the local storage and kernel are
// sparse.Matrix and sparse.MulSR (SpDCCols.h, mtSpGEMM.h), the semiring is
// sparse.Semiring (Semirings.h), and this package holds the distributed
// variants (ParFriends.h). Every product takes its communicator or grid as
// an argument and never reaches for a world communicator.
//
// A Dist is one rank's block of a distributed matrix, with local indices
// and the bounds that place it in the whole. Distribute cuts a matrix that
// every rank holds (BcastMatrix gives it to them from one rank) into any
// layout; Distribute1D, Distribute15D and Distribute2D cut evenly (block b
// of n over k parts has n/k elements, the first n mod k one more: Bounds).
// Gather assembles a distributed matrix on one rank; Checksum hashes it
// without gathering. Blocks may be uneven and empty, and there may be
// fewer rows than ranks.
//
// The products:
//
//   - Mul1D(c, sr, a, b, o): row blocks of A and B over p ranks. Each rank
//     fetches the rows of B its rows of A name (sparsity-aware, by
//     Alltoallv) and multiplies once. C is in the row blocks of A.
//   - Mul15D(g, sr, a, b, o): on a (p/c)×c grid, A and B in p/c row blocks,
//     each held by the c ranks of a grid row. In p/c² stages per replica
//     (round robin over the replicas when c does not divide p/c), a block of
//     B is broadcast down a grid column and multiplied locally; the c
//     partial products are summed by a sparse reduce-scatter over the grid
//     row, fused with the last local product (each rank forms only the
//     rows it sends, then adds the rows it receives in the accumulator of
//     its own rows' product). C comes out in p row blocks (1D).
//   - Mul2D(g, sr, a, b, o): SUMMA on any pr×pc grid; √p stages on a
//     square grid. For a p that is not a perfect square, use
//     collective.GridDims(p) (2×3 for 6, 2×4 for 8, 1×p for a prime): the
//     stages are then the pieces between the cuts of A's column blocks and
//     B's row blocks, at most pr+pc−1.
//   - Mul15DStream(g, sr, a, b, s) and Mul2DStream(g, sr, a, b, s): the
//     1.5D and SUMMA products without an assembled result: every stage's
//     term A_i(:, stage)·B(stage, :) is formed in chunks of rows of bounded
//     work (Stream.ChunkWork, flops plus rows) and handed to the callback
//     Stream.Chunk, with Stream.StageDone after each stage (a collective
//     point where the caller may exchange what it got). A row of A with
//     entries in several stages arrives as several partial rows that the
//     caller adds up; a selection matrix's rows (one entry each, the
//     samplers' P = Q·A) arrive whole. Mul2DStream also takes A held whole
//     per grid row (a frontier every rank of the row knows), whose stage
//     slices are then cut locally instead of broadcast.
//
// Each rank multiplies with Options.Threads goroutines (default 1: one rank
// per core). The result is exact: C has the entries of sparse.MulSR(sr, A,
// B), explicit zeros of cancelling sums included, with rows sorted. 1D and
// 2D add the terms of every entry in the local product's order, so they
// equal it bit for bit when A's rows are sorted; 1.5D with c > 1 and
// staged 2D sum partial sums, which for floating-point (+, ×) may round
// differently (exactly representable values, integers, min-plus and or-and
// agree exactly).
//
// # Communication volume
//
// The products count their traffic in the collective.Stats phase
// metrics.PhaseSpGEMM; measured times and bytes are in bench/results/README.md of the
// repository. A sparse block of r rows and e entries travels as r int64 row
// offsets or lengths, e int64 column indices and e values of s bytes
// (s = 8 for float64, 1 for bool, 0 for a pattern, which sends no values):
// 8r + (8+s)e bytes, with no size header (the receiver knows r from the
// layout and e from the offsets). With the accounting of collective
// (a broadcast root sends its buffer to each of the others; an alltoallv
// counts only what goes between different ranks), rank r sends and
// receives:
//
// 1D, p ranks. Let R(r,q) be the number of distinct columns of A_r that
// fall in rank q's rows of B (q ≠ r), and N(r,q) the entries of B in those
// rows. Messages: request counts (8 bytes to each other rank), requested
// row ids, row lengths, indices, values:
//
//	sent(r) = 8(p−1) + 8·Σ_q R(r,q) + 8·Σ_q R(q,r) + (8+s_B)·Σ_q N(q,r)
//	recv(r) = 8(p−1) + 8·Σ_q R(q,r) + 8·Σ_q R(r,q) + (8+s_B)·Σ_q N(r,q)
//
// At worst (every row needed) a rank receives 8(p−1) + 16·m_B + (8+s_B)·nnz(B)
// roughly: B once, whatever p.
//
// 1.5D on a q×c grid (q = p/c), rank (i, k). Stages j ≡ k (mod c): the rank
// at (j, k) broadcasts B_j (rows_j rows) down grid column k. Then P_ik, the
// partial product over those stages, is cut into c sub-blocks of rows
// (sub_x rows each, the even split of A_i's rows), and sub-block x goes to
// rank (i, x), values of C taking s_C bytes:
//
//	sent = Σ_{j≡k, j=i} (q−1)·(8·rows_j + (8+s_B)·nnz(B_j)) + Σ_{x≠k} (8·sub_x + (8+s_C)·nnz(P_ik[sub_x]))
//	recv = Σ_{j≡k, j≠i} (8·rows_j + (8+s_B)·nnz(B_j))     + Σ_{x≠k} (8·sub_k + (8+s_C)·nnz(P_ix[sub_k]))
//
// So B moves about nnz(B)·(8+s_B)/c per rank, and the reduction moves up to
// (c−1)/c of the partial products, which for A·A of a power-law graph is of
// the order of nnz(C): 1.5D suits products with a small output, such as
// the sampler's Q·A, and replicates the input to save its broadcasts.
//
// 2D on a pr×pc grid, rank (i, j). For every stage [l, h) of the inner
// dimension, the owner of A's columns l…h−1 in grid row i broadcasts
// A(i, l:h) (m_i rows) along the row, and the owner of B's rows l…h−1 in
// grid column j broadcasts B(l:h, j) (h−l rows) down the column:
//
//	sent = Σ_{stages owned in row i} (pc−1)·(8m_i + (8+s_A)·nnz(A(i,l:h))) + Σ_{stages owned in column j} (pr−1)·(8(h−l) + (8+s_B)·nnz(B(l:h,j)))
//	recv = the same terms over the stages owned by others, once each.
//
// On a √p×√p grid each rank receives about (nnz(A)+nnz(B))·(8+s)/√p.
//
// The tests derive these volumes message by message from the operands and
// compare them with every rank's counts (volume_test.go).
//
// # Memory
//
// By default a 1.5D or 2D rank keeps the blocks it receives and multiplies
// once, after the last stage: the stages' products are then summed inside
// the local kernel's accumulator, without merging partial results, at the
// price of holding all of the rank's operands (nnz(B)/c for 1.5D,
// nnz(A)/pr + nnz(B)/pc for 2D). A 1.5D rank then holds, besides its
// operands and its block of C, the rows of its partial product it sends and
// the rows it receives: for A·A of a power-law graph with c = 2, about
// 0.6–0.7 of its block of C each, so 1.5D needs over twice 1D's memory for
// such products. Options.Staged multiplies per stage and
// keeps a running sum instead, like CombBLAS's Mult_AnXBn_Synch. Mul1D and
// the unstaged 1.5D build a B with all k rows (most empty), O(k) memory
// like the local kernel's dense accumulator.
//
// The streamed products hold, besides a rank's operands, one received
// piece of a block of B (PieceEntries entries; plus, for a 2D A, one
// broadcast slice of A) and one chunk of the product: ChunkWork bounds a
// chunk's entries (one row may exceed it alone), so their memory grows
// neither with the number of rows of A nor with the size of B's blocks.
// They send only the broadcasts (no reduction). Mul15DStream given the
// degrees of B's rows (Stream.Degrees) fetches, per stage, only the rows
// of B_j that A_i names, instead of the broadcast, when that sends fewer
// bytes (FetchVolume15D); a fetched stage is one piece of those rows.
// With Stream.Reuse each
// chunk is formed in the previous one's arrays (sparse.MulSRTo), so a
// caller that copies what it keeps allocates no product per chunk. When A
// is a pattern with at most one entry per row in a stage's range (a
// sampler's selection matrix Q), a chunk is its rows of the piece copied
// (sparse.SelectRowsSRTo): the same matrix, without the product's set-up;
// with Stream.Select the caller reads those rows in the piece itself, and
// nothing is copied.
//
// BUG(spgemm): One Alltoallv moves at most 2³¹−1 elements per rank under MPI
// (MPI counts are C ints); the reduce-scatter of 1.5D and Gather can exceed
// that for products with billions of entries per rank. Broadcasts are sent
// in pieces and have no such limit.
package spgemm
