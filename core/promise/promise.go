// Package promise notices whether a bot's reply promises a later message
// ("I'll remind you at 5", "Te escribo mañana", "我明天提醒你"), so that a
// turn which promised without scheduling can be given one more round. It is
// the cheap first stage of bot.promise_check: word tables for English,
// Spanish, German, French, Russian and Chinese, one pass over the reply, no
// regular expressions. When the words are not enough to decide (an offer,
// a question, a condition on the user) it says Unsure and leaves the rest
// to the light model. It imports only the standard library.
package promise

// Verdict is what the patterns say of a reply.
type Verdict int

const (
	No     Verdict = iota // promises nothing later
	Unsure                // may promise: ask the light model
	Yes                   // promises a later message
)

// String names the verdict for logs and test tables.
func (v Verdict) String() string {
	switch v {
	case Yes:
		return "yes"
	case Unsure:
		return "unsure"
	}
	return "no"
}

// Finding is the verdict with the words that made it: Phrase is the
// promising words as they appear in the reply ("I'll check in tomorrow
// morning"), When the time words if any ("tomorrow morning"), "" when none.
type Finding struct {
	Verdict      Verdict
	Phrase, When string
}

// Detect reads a reply (any of the six languages, mixed scripts, Markdown)
// and says whether it promises a later message from the bot. Quoted text,
// block quotes and code are ignored. The strongest sentence wins; among
// equals, the first.
func Detect(reply string) Finding {
	if reply == "" {
		return Finding{}
	}
	// lower keeps byte offsets, so spans found in it cut the reply itself.
	low := lower(reply)
	mask(low)
	var best Finding
	var toks [96]span
	forSentences(low, func(s, e int) bool {
		f := judge(reply, low, s, e, toks[:0])
		if f.Verdict > best.Verdict {
			best = f
		}
		return best.Verdict == Yes
	})
	return best
}

// judge reads one sentence low[s:e] in the table languages, then in
// Chinese when it holds Han characters.
func judge(reply string, low []byte, s, e int, toks []span) Finding {
	f := judgeWords(reply, low, s, e, toks)
	if f.Verdict == Yes {
		return f
	}
	if hasHan(low[s:e]) {
		if z := judgeZh(reply, low, s, e); z.Verdict > f.Verdict {
			return z
		}
	}
	return f
}

// Record is what a turn's run record keeps of a promise its reply made
// without scheduling it (bot.promise_check) and of the round that kept it.
type Record struct {
	// Phrase and When are the promising words and their time, as Finding.
	Phrase string `json:"phrase"`
	When   string `json:"when,omitempty"`
	// Stage is the stage that caught it: StagePatterns or StageLightModel.
	Stage string `json:"stage"`
	// Said is the reply as the model first wrote it (not sent as such).
	Said string `json:"said"`
	// Note is what the model was told in its extra round.
	Note string `json:"note"`
	// Kept says how: KeptScheduled, KeptFollowUp, KeptReworded or
	// Unkept; Why says why it was not kept.
	Kept string `json:"kept"`
	Why  string `json:"why,omitempty"`
}

// The stages that catch a promise.
const (
	StagePatterns   = "patterns"
	StageLightModel = "light model"
)

// How a caught promise was kept.
const (
	KeptScheduled = "scheduled" // the extra round called a scheduling tool
	KeptFollowUp  = "follow-up" // it asked to write first later (<PROACTIVE>)
	KeptReworded  = "reworded"  // its reply no longer promises
	Unkept        = "unkept"    // none of these: the reply went out as it was
)
