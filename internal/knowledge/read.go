package knowledge

import (
	"context"
	"errors"
	"fmt"

	"github.com/chatpipe/chatpipe/internal/retrieval"
)

var _ retrieval.DocumentReader = (*Service)(nil)

// ReadDocument implements retrieval.DocumentReader: the tenant's document
// with its text. A document the tenant does not have is reported with
// both ErrNotFound and retrieval.ErrDocumentNotFound.
func (s *Service) ReadDocument(ctx context.Context, tenantID, id string) (retrieval.Document, error) {
	doc, err := s.Document(ctx, tenantID, id)
	if errors.Is(err, ErrNotFound) {
		return retrieval.Document{}, fmt.Errorf("%w: %w", err, retrieval.ErrDocumentNotFound)
	}
	if err != nil {
		return retrieval.Document{}, err
	}
	return retrieval.Document{ID: doc.ID, Title: doc.Title, Source: doc.Source, Content: doc.Content}, nil
}
