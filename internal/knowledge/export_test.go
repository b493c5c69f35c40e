package knowledge

import "time"

// SetRetryBackoff shortens the embedding retry wait for tests.
func SetRetryBackoff(s *Service, d time.Duration) { s.retryBackoff = d }
