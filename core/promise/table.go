package promise

import "strings"

// kind is the part a cue plays in a promise.
type kind uint8

const (
	kHead       kind = iota + 1 // the bot's own future: "i'll", "je vais", "ich werde"
	kOffer                      // an offer, not a commitment: "i can", "should i"
	kNeg                        // a negation before the verb: "won't", "no", "не"
	kPostNeg                    // a negation that may follow the verb: "nicht", "pas"
	kStrong                     // a contact verb that promises after a head: "remind"
	kWeak                       // a contact verb that promises only with a time: "tell"
	kSelfStrong                 // person and future in one: "te escribiré", "свяжусь"
	kSelfWeak                   // person, present form, needs a time: "te escribo"
	kSelfOffer                  // a subjunctive or offer form: "que te escriba"
	kTime                       // a time to come: "tomorrow", "mañana", "завтра"
	kAt                         // a word before a clock time or amount: "at 5", "in 20 minutes"
	kBreak                      // starts a new clause: "that", "que", "dass", "что"
	kCond                       // a condition on the user: "if you want"
	kIgnore                     // a phrase that looks like a cue and is none: "mich daran erinnern"
)

// cue is one table entry: its words, in order, and its part.
type cue struct {
	words []string
	kind  kind
}

// entries is one language's table: phrases (words separated by spaces)
// by part.
type entries map[kind][]string

// index maps a cue's first word to the cues starting with it, longest
// first, so that a sentence is read with one map look-up per word.
var index = buildIndex(english, spanish, german, french, russian)

func buildIndex(langs ...entries) map[string][]cue {
	idx := map[string][]cue{}
	for _, l := range langs {
		for k, phrases := range l {
			for _, p := range phrases {
				add(idx, p, k)
				// Replies use both apostrophes: "I'll" and "I’ll".
				if strings.Contains(p, "'") {
					add(idx, strings.ReplaceAll(p, "'", "’"), k)
				}
			}
		}
	}
	for w, cs := range idx {
		for i := 1; i < len(cs); i++ {
			for j := i; j > 0 && len(cs[j].words) > len(cs[j-1].words); j-- {
				cs[j], cs[j-1] = cs[j-1], cs[j]
			}
		}
		idx[w] = cs
	}
	return idx
}

func add(idx map[string][]cue, phrase string, k kind) {
	words := strings.Fields(phrase)
	for _, c := range idx[words[0]] {
		// Two parts for one phrase would make the verdict depend on map order.
		if strings.Join(c.words, " ") == phrase {
			if c.kind != k {
				panic("promise: cue listed with two parts: " + phrase)
			}
			return
		}
	}
	idx[words[0]] = append(idx[words[0]], cue{words: words, kind: k})
}

// units may follow a clock time or amount and belong to it.
var units = map[string]bool{
	"am": true, "pm": true, "uhr": true, "h": true, "minutes": true, "hours": true, "mins": true,
	"minutos": true, "horas": true, "minuten": true, "stunden": true, "heures": true,
	"минут": true, "часов": true, "часа": true, "минуты": true, "o'clock": true,
}
