package memory

import "context"

// WithoutPgvector keeps p's vectors searched by the plugin on PostgreSQL
// too, so that tests cover that path on a server with pgvector.
func WithoutPgvector(p *Plugin) { p.noPgvector = true }

// SearchesWithPgvector reports whether p's vectors are searched by
// PostgreSQL's pgvector.
func SearchesWithPgvector(p *Plugin) bool { return p.meaning != nil && p.meaning.vs.pv != nil }

// IndexWithPgvector creates the pgvector index of p's model for vectors
// of dims, as the background pass does after its first batch.
func IndexWithPgvector(p *Plugin, dims int) {
	m := p.meaning
	m.vs.pv.ensureIndex(context.Background(), m.vs.db, m.model, dims, p.log)
}

// PgvectorIndexStatement is the statement that creates the plugin's
// pgvector index of its model at dims.
func PgvectorIndexStatement(p *Plugin, dims int) string {
	return p.meaning.vs.pv.indexStatement(p.meaning.model, dims)
}

// VectorLiteral is v as pgvector's text form, as the plugin writes it.
var VectorLiteral = literal

// SearchByIndex makes p's pgvector search walk the HNSW index whatever
// the conversation's size.
func SearchByIndex(p *Plugin) { p.meaning.vs.pv.exactBelow = 0 }
