package turns

import (
	"bytes"
	"fmt"
	"os"
)

// defunct reports whether pid is a zombie (state Z) or dead (X): it has
// exited and holds nothing, though its parent has not reaped it yet.
func defunct(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// hold any byte, ')' included.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	st := b[i+2]
	return st == 'Z' || st == 'X' || st == 'x'
}
