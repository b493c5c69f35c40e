package handler

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"
)

// ErrorBody is the shape of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a stable code for programs and a
// message for people.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func abort(c *gin.Context, status int, code, message string) {
	c.AbortWithStatusJSON(status, ErrorBody{ErrorDetail{Code: code, Message: message}})
}

// firstNonSpace is the first byte of r that is not JSON white space,
// left unread.
func firstNonSpace(r *bufio.Reader) (byte, error) {
	for {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			return b, r.UnreadByte()
		}
	}
}

// requestError is a 4xx the decoder found.
type requestError struct {
	status  int
	code    string
	message string
}

func (e *requestError) Error() string { return e.message }

// decodeJSON reads a JSON object body of at most limit bytes into v,
// rejecting unknown fields and trailing data, with messages that say what
// to fix. An empty body decodes as {} when allowEmpty.
func decodeJSON(c *gin.Context, limit int64, v any, allowEmpty bool) *requestError {
	// Content-Type is not checked: curl -d sends form encoding by default,
	// and a body that is not JSON gets a clear 400 below anyway.
	body := bufio.NewReader(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	// null decodes into a struct as {}: it is no object all the same.
	if first, err := firstNonSpace(body); err == nil && first == 'n' {
		return &requestError{http.StatusBadRequest, "invalid_json", "The request body must be a JSON object."}
	}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) && allowEmpty {
		return nil
	}
	if err == nil {
		if dec.More() || trailingData(dec) {
			return &requestError{http.StatusBadRequest, "invalid_json", "The request body must hold a single JSON object."}
		}
		return nil
	}
	var maxErr *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case bodyTimedOut(err):
		closeAfterReply(c)
		return &requestError{http.StatusRequestTimeout, "body_timeout",
			"The request body did not arrive in time; send it at once."}
	case errors.As(err, &maxErr):
		return &requestError{http.StatusRequestEntityTooLarge, "body_too_large",
			fmt.Sprintf("The request body is larger than the limit of %d bytes.", maxErr.Limit)}
	case errors.Is(err, io.EOF):
		return &requestError{http.StatusBadRequest, "invalid_json", "The request body is empty; send a JSON object."}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &requestError{http.StatusBadRequest, "invalid_json", "The request body is cut off: it is not complete JSON."}
	case errors.As(err, &syntaxErr):
		return &requestError{http.StatusBadRequest, "invalid_json",
			fmt.Sprintf("The request body is not valid JSON (at byte %d).", syntaxErr.Offset)}
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return &requestError{http.StatusBadRequest, "invalid_json", "The request body must be a JSON object."}
		}
		if k := typeErr.Type.Kind(); strings.HasPrefix(typeErr.Value, "number") && (reflect.Int <= k && k <= reflect.Uint64) {
			// 1.5, or a number past the type's range.
			return &requestError{http.StatusBadRequest, "invalid_field", fmt.Sprintf("Field %q must be a whole number (of a sensible size).", field)}
		}
		return &requestError{http.StatusBadRequest, "invalid_field",
			fmt.Sprintf("Field %q must be a %s.", field, jsonKind(typeErr.Type.Kind().String()))}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return &requestError{http.StatusBadRequest, "unknown_field",
			fmt.Sprintf("Unknown field %s in the request body.", strings.TrimPrefix(err.Error(), "json: unknown field "))}
	default:
		return &requestError{http.StatusBadRequest, "invalid_json", "The request body could not be read as JSON."}
	}
}

func trailingData(dec *json.Decoder) bool {
	_, err := dec.Token()
	return !errors.Is(err, io.EOF)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int64", "float64":
		return "number"
	}
	return goKind
}
