package llm

import "testing"

// The body is read as it comes until a chunk brings text: the role chunk
// and empty deltas do not start the pacing, any text does (reasoning
// included), wherever the read cuts the stream.
func TestHasText(t *testing.T) {
	for body, want := range map[string]bool{
		`data: {"choices":[{"delta":{"role":"assistant","content":""}}]}` + "\n\n":                                    false,
		`data: {"choices":[{"delta":{"role":"assistant"}}]}` + "\n\n":                                                 false,
		`data: {"choices":[{"delta":{"content":""}}]}` + "\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}": true,
		`data: {"choices":[{"delta":{"reasoning_content":"hm"}}]}`:                                                    true,
		`data: {"choices":[{"delta":{"content":"\n"}}]}`:                                                              true,
		`data: {"choices":[{"delta":{"content":"`:                                                                     false, // cut: the next read tells
		``: false,
	} {
		if got := hasText([]byte(body)); got != want {
			t.Errorf("hasText(%q) = %v, want %v", body, got, want)
		}
	}
}
