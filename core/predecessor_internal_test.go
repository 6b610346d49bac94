package core

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
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
	cases := []struct {
		owner string
		gone  bool
	}{
		{fmt.Sprintf("%s-%d-abcd1234", host, os.Getpid()), true}, // this pid, another owner: an earlier process
		{fmt.Sprintf("%s-%d-abcd1234", host, exited), true},
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
