package turns

import "github.com/parleybot/parley/core"

// isCommandMessage reports whether m is a chat command or its answer.
func isCommandMessage(m core.Message) bool { return m.Source == core.SourceCommand }

// commandsFirst puts the chat commands answered since the model last
// spoke ahead of the user's messages waiting for it, so that the prompt
// ends with what the user said, not with a command's answer ("hi", then
// "/reminders" within the debounce: the turn answers "hi" and knows the
// listing). Everything else keeps its order. history is not modified.
func commandsFirst(history []core.Message) []core.Message {
	tail := len(history)
	for tail > 0 {
		m := history[tail-1]
		if m.Role == core.RoleAssistant && !isCommandMessage(m) {
			break
		}
		tail--
	}
	waiting := history[tail:]
	moved := false
	seenUser := false
	for _, m := range waiting {
		if isCommandMessage(m) {
			moved = moved || seenUser
		} else {
			seenUser = true
		}
	}
	if !moved {
		return history
	}
	out := make([]core.Message, 0, len(history))
	out = append(out, history[:tail]...)
	for _, m := range waiting {
		if isCommandMessage(m) {
			out = append(out, m)
		}
	}
	for _, m := range waiting {
		if !isCommandMessage(m) {
			out = append(out, m)
		}
	}
	return out
}
