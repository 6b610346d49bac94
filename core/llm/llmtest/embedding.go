package llmtest

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"unicode"
)

// DefaultEmbeddingDimensions is the length of the fake's vectors when
// neither the request nor Embedding.Dimensions gives one.
const DefaultEmbeddingDimensions = 64

// Embedding makes the fake's vectors.
//
// A text's vector is the normalised sum of a direction per word: the
// words are the text lowercased and split at anything but letters and
// digits, each CJK character a word of its own. A word's direction is
// pseudo-random, seeded by a hash of the model and the word, or of the
// model and its concept when Concepts gives it one, which then weighs 3;
// common English function words ("the", "my", "remember"...) weigh 0.2.
// So texts sharing a concept land near each other, unrelated texts are
// nearly orthogonal, the same text always gets the same vector, and two
// models' vectors are unrelated. A text with no words gets a fixed vector.
// The zero value is ready to use.
type Embedding struct {
	// Dimensions is the length when a request gives none (default 64).
	Dimensions int
	// Concepts maps a concept's name to the words that mean it ("wedding": {"wedding", "married", "marry", "bride"}): every one of them adds the same direction, so paraphrases land near each other.
	Concepts map[string][]string
}

// Weights of a word's direction in a text's vector.
const (
	conceptWeight  = 3
	functionWeight = 0.2
)

// functionWords are the common English words that say little about what a
// text is about, so they weigh little: the questions a memory is searched
// with are full of them ("what did I say about my sister").
var functionWords = map[string]bool{
	"the": true, "a": true, "an": true, "i": true, "you": true, "my": true, "me": true, "is": true,
	"was": true, "to": true, "of": true, "in": true, "on": true, "and": true, "at": true, "for": true,
	"it": true, "that": true, "about": true, "what": true, "did": true, "do": true, "say": true,
	"said": true, "when": true, "remember": true, "your": true, "we": true, "be": true, "are": true,
	"have": true, "has": true, "will": true, "with": true, "this": true,
}

// Vector is the fake's vector of text under model, of dims dimensions
// (0: e.Dimensions, else 64), of unit length.
func (e Embedding) Vector(model, text string, dims int) []float32 {
	return e.Vectors()(model, text, dims)
}

// Vectors returns Vector with the concepts read once, for code that makes
// many vectors (the server, a benchmark seeding a store).
func (e Embedding) Vectors() func(model, text string, dims int) []float32 {
	concepts := e.conceptOf()
	return func(model, text string, dims int) []float32 { return e.vector(concepts, model, text, dims) }
}

func (e Embedding) vector(concepts map[string]string, model, text string, dims int) []float32 {
	if dims <= 0 {
		dims = e.Dimensions
	}
	if dims <= 0 {
		dims = DefaultEmbeddingDimensions
	}
	sum := make([]float64, dims)
	for _, w := range words(text) {
		key, weight := "w\x00"+w, 1.0
		switch c, ok := concepts[w]; {
		case ok:
			key, weight = "c\x00"+c, conceptWeight
		case functionWords[w]:
			weight = functionWeight
		}
		addDirection(sum, model, key, weight)
	}
	if norm(sum) == 0 {
		addDirection(sum, model, "empty", 1)
	}
	n := norm(sum)
	out := make([]float32, dims)
	for i, x := range sum {
		out[i] = float32(x / n)
	}
	return out
}

// conceptOf maps each concept word, lowercased, to its concept; a word of
// several concepts is the first's by name, so that the vectors do not
// depend on the map's order.
func (e Embedding) conceptOf() map[string]string {
	names := make([]string, 0, len(e.Concepts))
	for name := range e.Concepts {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]string)
	for _, name := range names {
		for _, w := range e.Concepts[name] {
			w = strings.ToLower(w)
			if _, taken := out[w]; !taken {
				out[w] = name
			}
		}
	}
	return out
}

// words splits text as the fake's embeddings and usage count it:
// lowercased, at anything but letters and digits, each CJK character (Han,
// kana, Hangul) a word of its own, as those scripts do not space words.
func words(text string) []string {
	var out []string
	start := -1
	text = strings.ToLower(text)
	for i, r := range text {
		cjk := unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
		word := !cjk && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if start >= 0 && !word {
			out = append(out, text[start:i])
			start = -1
		}
		switch {
		case cjk:
			out = append(out, string(r))
		case word && start < 0:
			start = i
		}
	}
	if start >= 0 {
		out = append(out, text[start:])
	}
	return out
}

// addDirection adds weight times the unit direction seeded by model and key
// to sum. The direction's components are uniform in [-1, 1) from a
// splitmix64 stream, whose output no Go release changes: a test may pin a
// vector.
func addDirection(sum []float64, model, key string, weight float64) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(model))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	state := h.Sum64()
	dir := make([]float64, len(sum))
	for i := range dir {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		dir[i] = float64(z>>11)/(1<<52) - 1
	}
	n := norm(dir)
	for i, x := range dir {
		sum[i] += weight * x / n
	}
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// appendFloat32s appends v as little-endian float32s, OpenAI's base64
// encoding of a vector.
func appendFloat32s(dst []byte, v []float32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}
