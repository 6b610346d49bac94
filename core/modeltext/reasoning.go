package modeltext

import (
	"strings"
)

// reasoningNames are the tags reasoning models put their thinking in
// (DeepSeek-R1 and Qwen3 <think>, others <thinking> or <reasoning>).
var reasoningNames = [...]string{"think", "thinking", "reasoning"}

// tag is one reasoning tag found in a text.
type tag struct {
	start, end int // the tag's bytes, s[start:end]
	name       string
	closing    bool
}

// StripReasoning takes a model's reasoning out of its answer and returns
// the answer and the reasoning, each trimmed. Reasoning is:
//
//   - every <think>…</think>, <thinking>…</thinking> and
//     <reasoning>…</reasoning> block, anywhere (any case, spaces inside
//     the brackets allowed; nested blocks of one name count as one);
//   - from an opening tag that is never closed to the end (the answer was
//     cut off while the model was thinking);
//   - everything before a closing tag that comes before any opening one:
//     some servers drop the opening <think>, so the answer starts inside
//     it.
//
// A stray closing tag amid the answer is removed. A tag written between
// backticks (`<think>`) is text about tags, not one, and stays. Removing
// a block never leaves a new tag behind ("<thi<think>x</think>nk>"): the
// answer is stripped again until none is left. Blocks of reasoning are
// joined by a blank line.
func StripReasoning(s string) (answer, reasoning string) {
	if !strings.Contains(s, "<") {
		// The common case: no tag at all, nothing to allocate.
		return strings.TrimSpace(s), ""
	}
	var thoughts []string
	for {
		a, r, changed := stripOnce(s)
		thoughts = append(thoughts, r...)
		if !changed {
			break
		}
		s = a
	}
	return strings.TrimSpace(s), strings.Join(thoughts, "\n\n")
}

// stripOnce makes one pass over s; changed reports whether it removed
// anything.
func stripOnce(s string) (answer string, thoughts []string, changed bool) {
	tags := findTags(s)
	if len(tags) == 0 {
		return s, nil, false
	}
	keep := func(t string) {
		if t = strings.TrimSpace(t); t != "" {
			thoughts = append(thoughts, t)
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	pos, i := 0, 0
	if tags[0].closing {
		// The answer started inside a block whose opening tag the server
		// dropped.
		keep(s[:tags[0].start])
		pos, i = tags[0].end, 1
	}
	for i < len(tags) {
		t := tags[i]
		if t.closing {
			// A stray closing tag: not shown.
			join(&b, s[pos:t.start])
			pos, i = t.end, i+1
			continue
		}
		join(&b, s[pos:t.start])
		closeAt := matchClose(tags, i)
		if closeAt < 0 {
			// Never closed: the rest is reasoning.
			keep(s[t.end:])
			pos = len(s)
			break
		}
		keep(s[t.end:tags[closeAt].start])
		pos, i = tags[closeAt].end, closeAt+1
	}
	join(&b, s[pos:])
	return b.String(), thoughts, true
}

// join appends piece to b, leaving one space where a removal left two.
func join(b *strings.Builder, piece string) {
	if piece == "" {
		return
	}
	if b.Len() > 0 {
		prev := b.String()[b.Len()-1]
		if (prev == ' ' || prev == '\t') && (piece[0] == ' ' || piece[0] == '\t') {
			piece = strings.TrimLeft(piece, " \t")
		}
	}
	b.WriteString(piece)
}

// matchClose finds the tag that closes the opening tag tags[open] (same
// name; blocks of one name nest), or -1.
func matchClose(tags []tag, open int) int {
	depth := 0
	name := tags[open].name
	for j := open; j < len(tags); j++ {
		if tags[j].name != name {
			continue
		}
		if tags[j].closing {
			depth--
			if depth == 0 {
				return j
			}
		} else {
			depth++
		}
	}
	return -1
}

// findTags lists the reasoning tags of s in order, leaving out those
// written between backticks.
func findTags(s string) []tag {
	var out []tag
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		t, ok := readTag(s, i)
		if !ok {
			continue
		}
		if t.start > 0 && s[t.start-1] == '`' && t.end < len(s) && s[t.end] == '`' {
			continue
		}
		out = append(out, t)
		i = t.end - 1
	}
	return out
}

// readTag reads a reasoning tag starting at s[i] == '<': "<", spaces, an
// optional "/", spaces, a reasoning name in any case, spaces, ">".
func readTag(s string, i int) (tag, bool) {
	j := skipSpaces(s, i+1)
	closing := j < len(s) && s[j] == '/'
	if closing {
		j = skipSpaces(s, j+1)
	}
	for _, name := range reasoningNames {
		if len(s)-j < len(name) || !strings.EqualFold(s[j:j+len(name)], name) {
			continue
		}
		k := skipSpaces(s, j+len(name))
		if k < len(s) && s[k] == '>' {
			return tag{start: i, end: k + 1, name: name, closing: closing}, true
		}
	}
	return tag{}, false
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// Clean is text the model wrote, as it may be shown or stored: reasoning
// taken out and every control token and token-like text stripped (none is
// acted on). For text the model writes outside its answer: a scheduled
// message, a recurring job's instruction, a fact.
func Clean(s string) string {
	answer, _ := StripReasoning(s)
	return ParseTokens(answer).Text
}
