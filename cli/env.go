package cli

import "os"

// getenv is os.Getenv; a variable so tests can replace it.
var getenv = os.Getenv
