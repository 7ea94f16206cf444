package partition_test

import (
	"fmt"

	"gnnmpi/partition"
)

func ExampleBook() {
	// 10 vertices in 3 contiguous blocks of sizes 4, 3, 3.
	b := partition.Block(10, 3)
	fmt.Println("sizes:", b.Sizes())
	fmt.Println("vertex 5: rank", b.Owner(5), "local id", b.LocalID(5))
	fmt.Println("rank 2 owns:", b.Owned(2))
	// Output:
	// sizes: [4 3 3]
	// vertex 5: rank 1 local id 1
	// rank 2 owns: [7 8 9]
}
