//go:build !race

package vectors

// queries is how many queries TestSearchRecallClustered measures.
const queries = 200
