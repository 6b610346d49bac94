package turns

import (
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/modeltext"
)

// DefaultLengthNudge asks the model to go on after an answer the server cut
// at llm.max_tokens.
const DefaultLengthNudge = "(your last message was cut off at the length limit: go on exactly where it stopped, without repeating it)"

// cutMark ends an answer the server cut, so that it never stops
// mid-sentence without a sign.
const cutMark = " …"

// answer is one model answer read for the user: its reasoning taken out and
// what it says about how it ended.
type answer struct {
	// text is what the model said, reasoning removed, control tokens still
	// in (the output processors read them).
	text string
	// reasoning is the reasoning_content field and any <think> blocks,
	// kept for the run record only.
	reasoning string
	// cut is set when the server stopped at the token limit.
	cut bool
	// refused is why the answer is not one: a refusal or the content
	// filter; "" for an answer.
	refused string
}

// readAnswer reads a model result: reasoning out, refusals and the
// content filter noticed.
func readAnswer(res llm.Result) answer {
	text, thought := modeltext.StripReasoning(res.Content)
	a := answer{text: text, cut: res.FinishReason == finishLength}
	switch {
	case res.Reasoning != "" && thought != "":
		a.reasoning = strings.TrimSpace(res.Reasoning) + "\n\n" + thought
	case res.Reasoning != "":
		a.reasoning = strings.TrimSpace(res.Reasoning)
	default:
		a.reasoning = thought
	}
	switch {
	case strings.TrimSpace(res.Refusal) != "":
		a.refused = "the model refused to answer: " + oneLine(res.Refusal, 300)
	case res.FinishReason == finishContentFilter:
		a.refused = "the model's answer was withheld by the server's content filter (finish_reason content_filter)"
	}
	return a
}

// emptyAnswer says why an answer with nothing to show is a failure.
func emptyAnswer(a answer, raw string) string {
	switch {
	case a.cut:
		return "the model's answer was empty: it was cut at llm.max_tokens before it said anything"
	case strings.TrimSpace(raw) != "":
		return "the model's answer was empty once its reasoning and control tokens were taken out"
	}
	return "the model's answer was empty"
}

// answerError is a model answer that cannot be shown (empty, refused,
// filtered): the turn fails with it and the user gets the failure message.
type answerError struct{ why string }

func (e *answerError) Error() string { return e.why }

// oneLine is s on one line, cut to at most n bytes (at a rune boundary).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Finish reasons the core acts on (the server's finish_reason).
const (
	finishLength        = "length"
	finishContentFilter = "content_filter"
)
