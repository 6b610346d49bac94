package telegram_test

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A child bot measures its own heap on its parent's word, so that what a
// benchmark reports is the bot's, never the fakes' (they live in the
// parent): "mark" collects garbage and takes the heap then as the floor;
// "report" prints how far above it the heap rose since, sampled every
// 500 µs from runtime/metrics (which stops nothing).

// heapObjects is the metric sampled: the bytes of heap objects, live and
// not yet swept.
const heapObjects = "/memory/classes/heap/objects:bytes"

// obeyParent reads the parent's lines from in until it closes, answering
// on out.
func obeyParent(in io.Reader, out io.Writer) {
	var probe heapProbe
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "mark":
			probe.mark()
			fmt.Fprintf(out, "marked %d\n", probe.marks.Load())
		case "report":
			fmt.Fprintf(out, "heap-growth %d %d\n", probe.marks.Load(), probe.growth())
		}
	}
	probe.stop()
}

// heapProbe samples the heap from the first mark on.
type heapProbe struct {
	floor, peak atomic.Uint64
	marks       atomic.Int64
	done        chan struct{}
}

func heapNow() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func (p *heapProbe) mark() {
	if p.done == nil {
		p.done = make(chan struct{})
		go p.sample()
	}
	runtime.GC()
	now := heapNow()
	p.floor.Store(now)
	p.peak.Store(now)
	p.marks.Add(1)
}

func (p *heapProbe) sample() {
	tick := time.NewTicker(500 * time.Microsecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			now := heapNow()
			for {
				old := p.peak.Load()
				if now <= old || p.peak.CompareAndSwap(old, now) {
					break
				}
			}
		}
	}
}

func (p *heapProbe) growth() uint64 {
	return p.peak.Load() - min(p.peak.Load(), p.floor.Load())
}

func (p *heapProbe) stop() {
	if p.done != nil {
		close(p.done)
	}
}

// markHeap has c's bot take its heap now as the floor, and waits until it
// has.
func (c *child) markHeap(b *testing.B, n int) {
	b.Helper()
	_, err := fmt.Fprintln(c.stdin, "mark")
	if err != nil {
		b.Fatal(err)
	}
	c.waitLine(b, fmt.Sprintf("marked %d", n))
}

// heapGrowth is how far c's bot's heap rose above the floor of mark n.
func (c *child) heapGrowth(b *testing.B, n int) uint64 {
	b.Helper()
	if _, err := fmt.Fprintln(c.stdin, "report"); err != nil {
		b.Fatal(err)
	}
	line := c.waitLine(b, fmt.Sprintf("heap-growth %d ", n))
	v, err := strconv.ParseUint(strings.TrimPrefix(line, fmt.Sprintf("heap-growth %d ", n)), 10, 64)
	if err != nil {
		b.Fatalf("the child's report %q: %v", line, err)
	}
	return v
}

// waitLine waits until c's output has a line starting with prefix that
// was not taken yet, and returns it.
func (c *child) waitLine(b *testing.B, prefix string) string {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range strings.Split(c.out.String(), "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		time.Sleep(time.Millisecond) // polling the child's output; no event to wait on
	}
	b.Fatalf("the child never said %q:\n%s", prefix, c.out.String())
	return ""
}
