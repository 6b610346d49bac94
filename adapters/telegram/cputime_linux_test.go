package telegram_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// userHZ is the unit of /proc's CPU times, fixed at 100 for user space.
const userHZ = 100

// processCPU is the CPU time (user and system, every thread) process pid
// has used, from /proc/<pid>/stat: a child's, while it runs.
func processCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(b, err)
	// The command name, in parentheses, may hold spaces: the fields are
	// counted after its closing one. utime and stime are fields 14 and 15.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	require.GreaterOrEqual(b, len(fields), 13, "an unexpected /proc/%d/stat", pid)
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		require.NoError(b, err)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ
}
