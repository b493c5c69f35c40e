package knowledge

import "time"

// Options are the service's settings (the knowledge section of
// config.yaml). Reconfigure replaces them at run time; Ingest is read by
// StartBackground only.
type Options struct {
	// MaxUploadBytes is the largest text document accepted (.txt, .md,
	// .html, JSON); 0 = no limit.
	MaxUploadBytes int64
	// MaxFileBytes is the largest PDF, DOCX, PPTX, XLSX or CSV file
	// accepted; 0 = no limit.
	MaxFileBytes int64
	// Chunking sizes the passages documents are cut into.
	Chunking Chunker
	// EmbedBatchSize is the texts sent in one embeddings request; less
	// than 1 = 1.
	EmbedBatchSize int
	// Search is the hybrid search's settings when a request leaves them
	// unset.
	Search SearchOptions
	// Ingest bounds the background ingest.
	Ingest IngestOptions
}

// SearchOptions tune hybrid retrieval: weighted reciprocal rank fusion of
// the keyword and vector rankings.
type SearchOptions struct {
	TopK          int     // candidates returned; 0 = 20
	KeywordWeight float64 // weight of the bm25 ranking; 0 = no keyword search
	VectorWeight  float64 // weight of the embedding ranking; 0 = no vector search
	RRFK          int     // fusion score is weight/(RRFK+rank); 0 = 60
	// LeadWeight is what a chunk's title-field score for the question's
	// English terms counts against its keyword score (see
	// TitleSearcher); 0 = not searched.
	LeadWeight float64
	// NameWeight is what a chunk's title-field score for the Latin-letter
	// words of a question in an unspaced script (nameTerms) counts
	// against its keyword score (see TitleSearcher); 0 = not searched.
	NameWeight float64
	// Synonyms are the groups of words a question's words bring into its
	// search (nil = none), and SynonymWeight what a chunk's score for
	// them counts against its score for the question's own words
	// (0 = not searched).
	Synonyms      *SynonymGroups
	SynonymWeight float64
}

// IngestOptions bound background ingestion: Workers goroutines parse,
// chunk and embed documents, at most Queue waiting.
type IngestOptions struct {
	Workers int // documents ingested at once; less than 1 = 1
	Queue   int // uploads waiting for a worker; more are refused
	// StaleAfter: a processing document whose ingest gave no sign of life
	// for this long is resumed; 0 = a minute.
	StaleAfter time.Duration
	// MaxAttempts is the ingests started for one document before it is
	// marked failed; less than 1 = 1.
	MaxAttempts int
}

// EmbeddingOptions are an OpenAI-compatible /v1/embeddings endpoint.
type EmbeddingOptions struct {
	Provider   string        // "" (none: keyword search only) | openai
	BaseURL    string        // API root, e.g. https://api.openai.com/v1
	Model      string        // required
	APIKey     string        // sent as a Bearer token; "" = none
	Dimensions int           // 0 = the model's default
	Timeout    time.Duration // bound of one request; 0 = none
}
