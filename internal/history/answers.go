package history

import "context"

// AnswersStarter is implemented by stores that can reserve several
// assistant messages in one turn: the answers of models asked side by
// side, each saved as its own message. Both built-in stores implement it.
type AnswersStarter interface {
	// StartTurnWithAnswers is StartTurn reserving one assistant message
	// per id, in the order given (which ListMessages keeps), all in one
	// transaction. With one id it is StartTurn.
	StartTurnWithAnswers(ctx context.Context, sessionID string, user Message, assistantIDs []string) (userMsg Message, assistants []Message, err error)
}
