package output_test

import (
	"errors"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/internal/output"
)

func TestVectorsInTheInputsOrder(t *testing.T) {
	t.Parallel()
	got, err := output.Vectors([]openai.Embedding{
		{Index: 2, Embedding: []float32{3, 3}},
		{Index: 0, Embedding: []float32{1, 1}},
		{Index: 1, Embedding: []float32{2, 2}},
	}, 0, 3, 2)
	require.NoError(t, err)
	require.Equal(t, [][]float32{{1, 1}, {2, 2}, {3, 3}}, got)
}

func TestVectorsRefusesAWrongAnswer(t *testing.T) {
	t.Parallel()
	v := func(i int, xs ...float32) openai.Embedding { return openai.Embedding{Index: i, Embedding: xs} }
	for _, tc := range []struct {
		name string
		data []openai.Embedding
		dims int
		want string
	}{
		{"too few", []openai.Embedding{v(0, 1)}, 0, "1 vectors for 2 inputs"},
		{"too many", []openai.Embedding{v(0, 1), v(1, 1), v(2, 1)}, 0, "3 vectors for 2 inputs"},
		{"index out of range", []openai.Embedding{v(0, 1), v(2, 1)}, 0, "a vector for index 2, of 2 inputs"},
		{"index twice", []openai.Embedding{v(1, 1), v(1, 1)}, 0, "two vectors for input 11"},
		{"empty", []openai.Embedding{v(0), v(1)}, 0, "an empty vector for input 10"},
		{"mixed lengths", []openai.Embedding{v(0, 1, 2), v(1, 1)}, 0, "input 11's vector has 1 dimensions, not 2"},
		{"not the dimensions asked", []openai.Embedding{v(0, 1, 2), v(1, 1, 2)}, 3, "input 10's vector has 2 dimensions, not 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := output.Vectors(tc.data, 10, 2, tc.dims)
			require.EqualError(t, err, tc.want)
			require.True(t, errors.Is(err, output.ErrAnswer))
		})
	}
}
