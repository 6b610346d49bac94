package output

import openai "github.com/sashabaranov/go-openai"

// Vectors checks the answer to an embeddings request for n inputs (the
// caller's inputs first to first+n-1, as errors name them) and returns the
// vectors in the inputs' order: one per input, placed by its index (a server may answer
// in any order), all of one non-zero length, dims when dims > 0. A wrong
// answer would put one text's vector under another's, or mix lengths no
// similarity can compare, in whatever stores them.
func Vectors(data []openai.Embedding, first, n, dims int) ([][]float32, error) {
	if len(data) != n {
		return nil, bad("%d vectors for %d inputs", len(data), n)
	}
	out := make([][]float32, n)
	for _, d := range data {
		switch {
		case d.Index < 0 || d.Index >= n:
			return nil, bad("a vector for index %d, of %d inputs", d.Index, n)
		case out[d.Index] != nil:
			return nil, bad("two vectors for input %d", first+d.Index)
		case len(d.Embedding) == 0:
			return nil, bad("an empty vector for input %d", first+d.Index)
		case dims > 0 && len(d.Embedding) != dims:
			return nil, bad("input %d's vector has %d dimensions, not %d", first+d.Index, len(d.Embedding), dims)
		}
		dims = len(d.Embedding)
		out[d.Index] = d.Embedding
	}
	return out, nil
}
