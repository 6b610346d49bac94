// Package textsplit splits a long reply into the parts a platform takes,
// at the best breaks and with code blocks that render on their own.
package textsplit

import (
	"strings"
	"unicode/utf8"
)

// Split splits text into parts of at most max runes each, in order and
// without losing a character. It prefers to break between paragraphs, then
// lines, then words; a fenced code block (```) is kept whole when it fits in
// one part, and otherwise is closed at the end of a part and reopened (with
// its language) at the start of the next so every part renders on its own.
// max < 1 returns the text as one part; empty text has no parts.
func Split(text string, max int) []string {
	if text == "" {
		return nil
	}
	if max < 1 || utf8.RuneCountInString(text) <= max {
		return []string{text}
	}
	var parts []string
	var cur strings.Builder
	curLen := 0
	flush := func() {
		if curLen > 0 {
			parts = append(parts, cur.String())
		}
		cur.Reset()
		curLen = 0
	}
	add := func(s string) {
		cur.WriteString(s)
		curLen += utf8.RuneCountInString(s)
	}
	for _, blk := range splitBlocks(text) {
		n := utf8.RuneCountInString(blk.text)
		if curLen+n <= max {
			add(blk.text)
			continue
		}
		flush()
		if n <= max {
			add(blk.text)
			continue
		}
		parts = append(parts, splitLong(blk, max)...)
	}
	flush()
	return parts
}

// block is a piece of text that should stay together if it can: a paragraph
// (with its trailing blank lines) or a whole fenced code block.
type block struct {
	text  string
	fence string // the opening fence line ("```go") for code blocks
}

// splitBlocks cuts text into paragraphs and fenced code blocks; joining the
// blocks gives back the text exactly.
func splitBlocks(text string) []block {
	var blocks []block
	lines := strings.SplitAfter(text, "\n")
	var cur strings.Builder
	inFence := false
	fence := ""
	for _, ln := range lines {
		trimmed := strings.TrimSpace(ln)
		isFence := strings.HasPrefix(trimmed, "```")
		switch {
		case !inFence && isFence:
			if cur.Len() > 0 {
				blocks = append(blocks, block{text: cur.String()})
				cur.Reset()
			}
			inFence, fence = true, strings.TrimRight(ln, "\r\n")
			cur.WriteString(ln)
		case inFence && isFence:
			cur.WriteString(ln)
			blocks = append(blocks, block{text: cur.String(), fence: fence})
			cur.Reset()
			inFence, fence = false, ""
		case inFence:
			cur.WriteString(ln)
		default:
			cur.WriteString(ln)
			if trimmed == "" {
				blocks = append(blocks, block{text: cur.String()})
				cur.Reset()
			}
		}
	}
	if cur.Len() > 0 {
		blocks = append(blocks, block{text: cur.String(), fence: fence})
	}
	return blocks
}

// splitLong splits one block longer than max. Code blocks are cut at line
// boundaries and each part is wrapped in the fence so it renders alone.
func splitLong(b block, max int) []string {
	if b.fence == "" || max < 2*len("```")+len(b.fence)+4 {
		return splitPlain(b.text, max)
	}
	body := strings.TrimPrefix(b.text, b.fence)
	body = strings.TrimPrefix(body, "\n")
	hasClose := false
	if t := strings.TrimRight(body, "\n"); strings.HasSuffix(strings.TrimSpace(t), "```") {
		hasClose = true
		idx := strings.LastIndex(t, "```")
		body = t[:idx]
	}
	open := b.fence + "\n"
	const closing = "```\n"
	budget := max - utf8.RuneCountInString(open) - utf8.RuneCountInString(closing)
	chunks := splitPlain(body, budget)
	out := make([]string, 0, len(chunks))
	for i, c := range chunks {
		if !strings.HasSuffix(c, "\n") {
			c += "\n"
		}
		last := i == len(chunks)-1
		if last && !hasClose {
			out = append(out, open+c)
			continue
		}
		out = append(out, open+c+closing)
	}
	return out
}

// splitPlain splits at the last newline, else the last space, else hard at
// max runes.
func splitPlain(s string, max int) []string {
	var out []string
	for utf8.RuneCountInString(s) > max {
		cut := runeOffset(s, max)
		head := s[:cut]
		if i := strings.LastIndex(head, "\n"); i > 0 {
			cut = i + 1
		} else if i := strings.LastIndex(head, " "); i > 0 {
			cut = i + 1
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// runeOffset is the byte offset of the n-th rune of s.
func runeOffset(s string, n int) int {
	i := 0
	for off := range s {
		if i == n {
			return off
		}
		i++
	}
	return len(s)
}
