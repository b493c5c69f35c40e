package handler

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/auth"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/run"
)

// The OpenAI-compatible API (/v1): chat completions answered by a chat
// mode's pipeline, with the mode named as the model. It is stateless: the
// request's messages are the history and the question, and nothing is
// saved. Errors have OpenAI's shape so that OpenAI clients show them.

// ThinkTagsHeader asks for thinking as <think>…</think> inside the content
// instead of reasoning_content (the body field "think_tags" does the same).
// UIs such as Open WebUI can send it as a connection header.
const ThinkTagsHeader = "X-Chatpipe-Think-Tags"

// openAIError is OpenAI's error object.
type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type openAIErrorBody struct {
	Error openAIError `json:"error"`
}

func newOpenAIError(typ, code, param, message string) openAIErrorBody {
	e := openAIError{Message: message, Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	return openAIErrorBody{e}
}

func openAIAbort(c *gin.Context, status int, code, param, message string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "server_error"
	}
	c.AbortWithStatusJSON(status, newOpenAIError(typ, code, param, message))
}

// openAIAuthenticate is authenticate for the /v1 API: the same keys and
// tenants, answered in OpenAI's error shape.
func (h *Handler) openAIAuthenticate(c *gin.Context) {
	keys := h.deps.Auth()
	if keys.Open() {
		c.Set(tenantKey, auth.DefaultTenant)
		return
	}
	if h.authThrottled(c, func(msg string) {
		openAIAbort(c, http.StatusTooManyRequests, "auth_rate_limited", "", msg)
	}) {
		return
	}
	token := ""
	if scheme, value, ok := strings.Cut(c.GetHeader("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(value)
	}
	if token == "" {
		h.authFailed(c)
		c.Header("WWW-Authenticate", `Bearer realm="chatpipe"`)
		openAIAbort(c, http.StatusUnauthorized, "missing_api_key", "",
			"This API needs a key: send it as \"Authorization: Bearer <key>\".")
		return
	}
	tenant, ok := keys.Tenant(token)
	if !ok {
		h.authFailed(c)
		c.Header("WWW-Authenticate", `Bearer realm="chatpipe", error="invalid_token"`)
		openAIAbort(c, http.StatusUnauthorized, "invalid_api_key", "", "The API key is not valid.")
		return
	}
	c.Set(tenantKey, tenant)
}

// openAIModel is a chat mode shown as a model.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// modesListedSince is the "created" time of every listed model: modes have
// no creation date, and a stable value keeps clients' caches quiet.
var modesListedSince = time.Now().Unix()

func modeModel(mode string) openAIModel {
	return openAIModel{ID: mode, Object: "model", Created: modesListedSince, OwnedBy: "chatpipe"}
}

// listModels lists the chat modes as models.
func (h *Handler) listModels(c *gin.Context) {
	modes := h.deps.Modes()
	data := make([]openAIModel, len(modes))
	for i, m := range modes {
		data[i] = modeModel(m)
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

// getModel describes one mode as a model.
func (h *Handler) getModel(c *gin.Context) {
	if !h.knownMode(c.Param("model")) {
		h.unknownModel(c, c.Param("model"))
		return
	}
	c.JSON(http.StatusOK, modeModel(c.Param("model")))
}

func (h *Handler) unknownModel(c *gin.Context, model string) {
	openAIAbort(c, http.StatusNotFound, "model_not_found", "model", fmt.Sprintf(
		"The model %q does not exist; chatpipe's models are its chat modes: %s.", model, strings.Join(h.deps.Modes(), ", ")))
}

// openAIChatRequest is the part of a chat-completions request chatpipe
// reads; every other field (temperature, tools, …) is accepted and ignored:
// the mode's configuration decides them.
type openAIChatRequest struct {
	Model         string          `json:"model"`
	Messages      []openAIMessage `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// ThinkTags (a chatpipe extension) sends thinking as <think>…</think>
	// at the start of content instead of reasoning_content.
	ThinkTags *bool `json:"think_tags"`
}

type openAIMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// chatCompletions runs the mode named by "model" on the request's
// conversation and answers in OpenAI's chat-completions format.
func (h *Handler) chatCompletions(c *gin.Context) {
	r, b, stream, includeUsage := h.startCompletion(c)
	switch {
	case r == nil: // answered
	case stream:
		h.streamCompletion(c, r, b, includeUsage)
	default:
		h.wholeCompletion(c, r, b)
	}
}

// startCompletion validates the request and starts its run, or answers the
// error (r nil); apart from chatCompletions so that its large frame is
// gone before the answer streams (see streamTail).
func (h *Handler) startCompletion(c *gin.Context) (r *run.Run, b *completionBuilder, stream, includeUsage bool) {
	cfg := h.cfg()
	var req openAIChatRequest
	if status, msg := decodeOpenAI(c, cfg.Limits.MaxBodyBytes, &req); status != 0 {
		code := "invalid_json"
		if status == http.StatusRequestEntityTooLarge {
			code = "body_too_large"
		}
		openAIAbort(c, status, code, "", msg)
		return nil, nil, false, false
	}
	mode := req.Model
	if mode == "" {
		mode = cfg.DefaultMode
	}
	if !h.knownMode(mode) {
		h.unknownModel(c, mode)
		return nil, nil, false, false
	}
	turns, question, perr := openAITurns(req.Messages, cfg.Limits.MaxQuestionChars)
	if perr != nil {
		openAIAbort(c, http.StatusBadRequest, perr.code, perr.param, perr.message)
		return nil, nil, false, false
	}
	r, ok, err := h.startLimited(c, 1, func() (*run.Run, error) {
		return h.deps.Runs.StartStateless(c.Request.Context(), run.StatelessRequest{
			TenantID: tenant(c), Mode: mode, History: turns, Question: question,
			// A streaming completion cannot take back bytes it forwarded:
			// no mid-stream retry there (a whole one drops a withdrawn attempt).
			NoStreamRetry: req.Stream})
	}, func(msg string) { openAIAbort(c, http.StatusTooManyRequests, "rate_limit_exceeded", "", msg) })
	if !ok {
		return nil, nil, false, false
	}
	switch {
	case errors.Is(err, run.ErrUnknownMode):
		h.unknownModel(c, mode)
		return nil, nil, false, false
	case errors.Is(err, run.ErrShuttingDown):
		openAIAbort(c, http.StatusServiceUnavailable, "shutting_down", "", "The server is restarting; try again in a moment.")
		return nil, nil, false, false
	case err != nil:
		h.reqLog(c).Error("start completion failed", zap.Error(err))
		openAIAbort(c, http.StatusInternalServerError, "internal_error", "", "Something went wrong on the server; please try again.")
		return nil, nil, false, false
	}
	c.Header("X-Message-Id", r.StreamID)
	return r, newCompletionBuilder(r.StreamID, mode, wantsThinkTags(c, req.ThinkTags)), req.Stream,
		req.StreamOptions != nil && req.StreamOptions.IncludeUsage
}

// wantsThinkTags reads the think_tags field, else the header.
func wantsThinkTags(c *gin.Context, field *bool) bool {
	if field != nil {
		return *field
	}
	v, err := strconv.ParseBool(strings.TrimSpace(c.GetHeader(ThinkTagsHeader)))
	return err == nil && v
}

// decodeOpenAI reads a JSON body leniently (unknown fields are fine:
// OpenAI clients send many), answering a status and message on failure.
func decodeOpenAI(c *gin.Context, limit int64, v any) (int, string) {
	body := http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	err := json.NewDecoder(body).Decode(v)
	if err == nil {
		// Read to the end (whitespace, or data the lenient decoder ignores)
		// so the body read deadline is lifted before a long stream starts.
		_, err = io.Copy(io.Discard, body)
	}
	var maxErr *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return 0, ""
	case bodyTimedOut(err):
		closeAfterReply(c)
		return http.StatusRequestTimeout, "The request body did not arrive in time; send it at once."
	case errors.As(err, &maxErr):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("The request body is larger than the limit of %d bytes.", maxErr.Limit)
	case errors.Is(err, io.EOF):
		return http.StatusBadRequest, "The request body is empty; send a JSON object."
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return http.StatusBadRequest, fmt.Sprintf("Field %q must be a %s.", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
	default:
		return http.StatusBadRequest, "The request body is not valid JSON."
	}
}

// paramError is a request error naming the parameter at fault.
type paramError struct{ code, param, message string }

// openAITurns turns OpenAI messages into chatpipe's history and question:
// the last message must be the user's; system and developer messages are
// left out (the mode's configured prompt applies), as are tool messages
// (no tools are offered).
func openAITurns(msgs []openAIMessage, maxQuestion int) ([]conversation.Message, string, *paramError) {
	if len(msgs) == 0 {
		return nil, "", &paramError{"empty_messages", "messages", "'messages' must hold at least one message."}
	}
	turns := make([]conversation.Message, 0, len(msgs))
	for i, m := range msgs {
		param := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "user", "assistant":
		case "system", "developer", "tool", "function":
			continue
		default:
			return nil, "", &paramError{"invalid_role", param + ".role", fmt.Sprintf("Unknown role %q.", m.Role)}
		}
		text, perr := messageText(m.Content, param+".content")
		if perr != nil {
			return nil, "", perr
		}
		if m.Role == "assistant" {
			text = stripThinkTags(text) // models must not be fed their own reasoning back
		}
		turns = append(turns, conversation.Message{Role: m.Role, Content: text})
	}
	last := msgs[len(msgs)-1]
	if len(turns) == 0 || last.Role != "user" {
		return nil, "", &paramError{"no_user_message", "messages",
			"The last message must be the user's question (role \"user\")."}
	}
	question := turns[len(turns)-1].Content
	if strings.TrimSpace(question) == "" {
		return nil, "", &paramError{"empty_content", fmt.Sprintf("messages[%d].content", len(msgs)-1), "The question (the last message) is empty."}
	}
	if n := utf8.RuneCountInString(question); n > maxQuestion {
		return nil, "", &paramError{"content_too_long", fmt.Sprintf("messages[%d].content", len(msgs)-1),
			fmt.Sprintf("The question is %d characters long; the limit is %d.", n, maxQuestion)}
	}
	return turns[:len(turns)-1], question, nil
}

// messageText reads a message's content: a string, null, or an array of
// parts of which only text parts are supported.
func messageText(raw json.RawMessage, param string) (string, *paramError) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if !utf8.ValidString(s) {
			return "", &paramError{"invalid_content", param, "The content is not valid UTF-8 text."}
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", &paramError{"invalid_content", param, "The content must be a string or an array of content parts."}
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", &paramError{"unsupported_content", fmt.Sprintf("%s[%d].type", param, i),
				fmt.Sprintf("Content parts of type %q are not supported; chatpipe answers text.", p.Type)}
		}
		b.WriteString(p.Text)
	}
	if !utf8.ValidString(b.String()) {
		return "", &paramError{"invalid_content", param, "The content is not valid UTF-8 text."}
	}
	return b.String(), nil
}

// stripThinkTags removes <think>…</think> blocks (and an unclosed one at
// the end) from an assistant message sent back as history.
func stripThinkTags(s string) string {
	for {
		start := strings.Index(s, "<think>")
		if start < 0 {
			return s
		}
		end := strings.Index(s[start:], "</think>")
		if end < 0 {
			return strings.TrimSpace(s[:start])
		}
		rest := s[start+end+len("</think>"):]
		if strings.TrimSpace(s[:start]) == "" {
			rest = strings.TrimLeft(rest, " \t\r\n") // "<think>…</think>\n\nAnswer"
		}
		s = s[:start] + rest
	}
}
