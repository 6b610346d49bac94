//go:build race

package vectors

// queries is how many queries TestSearchRecallClustered measures. The race
// detector slows its brute force tenfold and it has no concurrency to
// check, so under -race it measures a quarter of them.
const queries = 50
