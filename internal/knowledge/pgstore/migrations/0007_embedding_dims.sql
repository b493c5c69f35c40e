-- The dimensions of the stored embeddings, one row each, kept by
-- AddDocument. With pgvector every dimension has its own partial HNSW
-- index (an HNSW index needs one dimension, and the embedding model, so
-- the dimension, is a deployment's choice); the store creates it with
-- the first embedding of that dimension, or at Open for dimensions
-- stored before the server had pgvector. The embeddings themselves stay
-- real[], so this schema is the same with and without pgvector.
CREATE TABLE knowledge_embedding_dims (
    dims integer PRIMARY KEY CHECK (dims > 0)
);
INSERT INTO knowledge_embedding_dims (dims)
SELECT DISTINCT cardinality(embedding) FROM knowledge_chunks
WHERE embedding IS NOT NULL AND cardinality(embedding) > 0;
