package discordtest

import "sort"

// Shards lists the [shard_id, shard_count] of the sessions identified so
// far (live or resumable), sorted: which shards the bot's replicas run.
func (s *gatewayServer) Shards() [][2]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][2]int, 0, len(s.sessions))
	for _, sess := range s.sessions {
		out = append(out, sess.shard)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] || (out[i][0] == out[j][0] && out[i][1] < out[j][1]) })
	return out
}
