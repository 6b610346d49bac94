package turns

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestGoneFromHost(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Fatalf("this test needs the host name: %v", err)
	}
	// A process that has exited: its pid names no process any more.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("running true: %v", err)
	}
	exited := cmd.Process.Pid
	// A process killed and not yet waited for: a zombie, gone all the
	// same (a supervisor that restarts before it reaps).
	zombie := exec.Command("sleep", "60")
	if err := zombie.Start(); err != nil {
		t.Fatalf("starting sleep: %v", err)
	}
	t.Cleanup(func() { _ = zombie.Wait() })
	if err := zombie.Process.Kill(); err != nil {
		t.Fatalf("killing sleep: %v", err)
	}
	waitZombie(t, zombie.Process.Pid)
	cases := []struct {
		owner string
		gone  bool
	}{
		{fmt.Sprintf("%s-%d-abcd1234", host, os.Getpid()), true}, // this pid, another owner: an earlier process
		{fmt.Sprintf("%s-%d-abcd1234", host, exited), true},
		{fmt.Sprintf("%s-%d-abcd1234", host, zombie.Process.Pid), runtime.GOOS == "linux"},
		{fmt.Sprintf("%s-%d-abcd1234", host, os.Getppid()), false}, // alive
		{fmt.Sprintf("other-%s-%d-abcd1234", host, exited), false}, // another host
		{"dead-process", false},
		{host + "-x-abcd", false},
		{host + "-12", false},
	}
	for _, c := range cases {
		if got := goneFromHost(c.owner, host); got != c.gone {
			t.Errorf("goneFromHost(%q) = %v, want %v", c.owner, got, c.gone)
		}
	}
}

// waitZombie waits until pid shows state Z in /proc (the kill has been
// delivered and nobody has reaped it), for at most 10 s.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatalf("reading /proc/%d/stat: %v", pid, err)
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return
		}
	}
	t.Fatalf("pid %d is not a zombie 10 s after SIGKILL", pid)
}
