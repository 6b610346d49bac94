package engine

import "github.com/parleybot/parley/core/llm"

// modelHealthSource is an LLM that tracks its server's health
// (*llm.Client).
type modelHealthSource interface {
	Health() llm.Health
}

// ModelHealth reports the model server's state as of the last call, or
// unknown when the LLM does not track it.
func (d *Dispatcher) ModelHealth() llm.Health {
	if h, ok := d.cfg.LLM.(modelHealthSource); ok {
		return h.Health()
	}
	return llm.Health{State: llm.HealthUnknown}
}
