package core

import "github.com/parleybot/parley/core/llm"

// ModelHealthReporter is what the Dispatcher offers adapters that show the
// model's state (the web chat's banner while the model is failing); an
// adapter finds it on the InboundHandler given to Start by type assertion.
type ModelHealthReporter interface {
	ModelHealth() llm.Health
}

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
