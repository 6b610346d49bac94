package reactions

import "sync"

// kept bounds the messages a Memory remembers.
const kept = 1024

// Memory remembers the emoji the bot last put on each message it reacted
// to, the newest of them: a bot has one reaction per message, so taking
// one back (the acknowledgement's) must leave a later one (the model's)
// that replaced it. Safe for concurrent use; the zero value is ready.
type Memory struct {
	mu    sync.Mutex
	emoji map[string]string
	order []string
}

// Set remembers that the bot's reaction on message key is emoji ("" once
// taken back).
func (m *Memory) Set(key, emoji string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.emoji == nil {
		m.emoji = map[string]string{}
	}
	if _, ok := m.emoji[key]; !ok {
		m.order = append(m.order, key)
		if len(m.order) > kept {
			delete(m.emoji, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.emoji[key] = emoji
}

// Replaced reports whether the bot's reaction on message key is known to
// be another than emoji now.
func (m *Memory) Replaced(key, emoji string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.emoji[key]
	return ok && last != emoji
}
