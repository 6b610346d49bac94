//go:build linux

package soak

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

// injector makes the fakes fail sends while the soak runs: after a drawn
// number of sends of a platform, the next one answers 429 (with
// retry_after) or a 5xx. A fault is queued only once the previous one of
// that platform has fired, so a send's retries never meet a run of faults.
type injector struct {
	tg  *telegramtest.Server
	dc  *discordtest.Server
	gap [2]int
	rng *rand.Rand

	// Read once run has returned.
	tg429, tg5xx, dc429, dc5xx int
}

func newInjector(tg *telegramtest.Server, dc *discordtest.Server, gap [2]int, seed uint64) *injector {
	return &injector{tg: tg, dc: dc, gap: gap, rng: rand.New(rand.NewPCG(seed, seed^0xfa17))}
}

func (in *injector) draw() int { return in.gap[0] + in.rng.IntN(in.gap[1]-in.gap[0]+1) }

// run injects faults until ctx ends.
func (in *injector) run(ctx context.Context) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	nextTG, nextDC := in.draw(), in.draw()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if c := in.tg.Calls("sendMessage"); c >= nextTG {
			if in.rng.IntN(2) == 0 {
				in.tg.FailNext("sendMessage", telegramtest.TooManyRequests(1))
				in.tg429++
			} else {
				in.tg.FailNext("sendMessage", telegramtest.ServerError())
				in.tg5xx++
			}
			nextTG = c + 1 + in.draw()
		}
		if c := in.dc.Calls("messages"); c >= nextDC {
			switch in.rng.IntN(4) {
			case 0, 1:
				in.dc.RateLimitNext("messages", time.Duration(100+in.rng.IntN(900))*time.Millisecond)
				in.dc429++
			case 2:
				in.dc.FailNext("messages", http.StatusInternalServerError, 0, "500: Internal Server Error")
				in.dc5xx++
			default:
				in.dc.FailNext("messages", http.StatusServiceUnavailable, 0, "503: Service Unavailable")
				in.dc5xx++
			}
			nextDC = c + 1 + in.draw()
		}
	}
}
