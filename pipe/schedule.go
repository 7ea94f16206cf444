package pipe

import "fmt"

// Kind is what one Step of a stage does.
type Kind uint8

// Step kinds. Forward and Backward compute; the other four move a chunk's
// rows between neighbouring stages of one pipeline.
const (
	// Forward runs the stage's layers on chunk MB (historical embeddings
	// for the neighbours outside the chunk).
	Forward Kind = iota + 1
	// Backward back-propagates chunk MB through the stage's layers.
	Backward
	// SendAct sends chunk MB's output rows to stage Peer (the next).
	SendAct
	// RecvAct receives chunk MB's input rows from stage Peer (the previous).
	RecvAct
	// SendGrad sends the gradient of chunk MB's input rows to stage Peer
	// (the previous).
	SendGrad
	// RecvGrad receives the gradient of chunk MB's output rows from stage
	// Peer (the next).
	RecvGrad
)

var kindNames = [...]string{Forward: "fwd", Backward: "bwd", SendAct: "send-act", RecvAct: "recv-act", SendGrad: "send-grad", RecvGrad: "recv-grad"}

func (k Kind) String() string {
	if k >= Forward && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Step is one action of a stage. MB is the chunk's position in the epoch's
// chunk order (0 is processed first); Peer is the other stage of a transfer
// and −1 for computation.
type Step struct {
	Kind Kind
	MB   int
	Peer int
}

func (s Step) String() string {
	if s.Peer < 0 {
		return fmt.Sprintf("%v mb %d", s.Kind, s.MB)
	}
	return fmt.Sprintf("%v mb %d stage %d", s.Kind, s.MB, s.Peer)
}

// Schedule returns the epoch's steps of every stage of a pipeline of stages
// stages through which chunks chunks flow, GPipe-style with one weight
// update per epoch: all forwards, chunk 0 first (stage s runs chunk t − s in
// round t), then all backwards in the reverse chunk order, the last stage
// first.
//
// Reverse order is what makes historical gradients consistent: a chunk's
// forward read the fresh rows of the chunks before it, and their backwards
// come after its own, so the gradients it sends them arrive before they are
// consumed; what it sends to the chunks after it (whose rows were stale)
// arrives after their backward and is cleared at the epoch's end.
//
// A stage receives a chunk before computing it and sends it right after,
// receives before it sends, and sends only to a stage that will post the
// matching receive next, so the schedule completes with synchronous sends;
// the pipe tests check that by simulation. Every pipeline of a hybrid run has
// the same schedule, so stage s of every pipeline computes chunk position mb
// at the same time, which lets them exchange halos with collectives.
//
// It returns an error if stages or chunks is not positive.
func Schedule(stages, chunks int) ([][]Step, error) {
	if stages < 1 || chunks < 1 {
		return nil, fmt.Errorf("pipe: schedule of %d stages and %d chunks; want both ≥ 1", stages, chunks)
	}
	out := make([][]Step, stages)
	for s := range stages {
		steps := make([]Step, 0, 6*chunks)
		for mb := range chunks {
			if s > 0 {
				steps = append(steps, Step{RecvAct, mb, s - 1})
			}
			steps = append(steps, Step{Forward, mb, -1})
			if s < stages-1 {
				steps = append(steps, Step{SendAct, mb, s + 1})
			}
		}
		for mb := chunks - 1; mb >= 0; mb-- {
			if s < stages-1 {
				steps = append(steps, Step{RecvGrad, mb, s + 1})
			}
			steps = append(steps, Step{Backward, mb, -1})
			if s > 0 {
				steps = append(steps, Step{SendGrad, mb, s - 1})
			}
		}
		out[s] = steps
	}
	return out, nil
}

// Rounds returns the number of compute rounds of Schedule(stages, chunks)
// when every transfer takes no time: 2(chunks + stages − 1), the forward
// and backward fills and drains. Bubble fraction = (stages − 1)/(chunks +
// stages − 1).
func Rounds(stages, chunks int) int { return 2 * (chunks + stages - 1) }
