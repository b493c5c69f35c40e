package knowledge

import (
	"context"
	"errors"
	"fmt"

	"github.com/chatpipe/chatpipe/pipeline"
)

var _ pipeline.DocumentReader = (*Service)(nil)

// ReadDocument implements pipeline.DocumentReader: the tenant's document
// with its text. A document the tenant does not have is reported with
// both ErrNotFound and pipeline.ErrDocumentNotFound.
func (s *Service) ReadDocument(ctx context.Context, tenantID, id string) (pipeline.Document, error) {
	doc, err := s.Document(ctx, tenantID, id)
	if errors.Is(err, ErrNotFound) {
		return pipeline.Document{}, fmt.Errorf("%w: %w", err, pipeline.ErrDocumentNotFound)
	}
	if err != nil {
		return pipeline.Document{}, err
	}
	return pipeline.Document{ID: doc.ID, Title: doc.Title, Source: doc.Source, Content: doc.Content}, nil
}
