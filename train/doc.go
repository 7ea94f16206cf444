// Package train will hold the training driver: epoch loop, evaluation,
// metrics and atomic checkpoints, wiring the other packages together.
//
// It is empty until the training issue fills it.
package train
