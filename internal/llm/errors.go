package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/eventbus"
)

// ErrHeaderTimeout is the cause of a call whose provider sent no response
// headers within the configured timeout.
var ErrHeaderTimeout = errors.New("no response headers within the timeout")

// ProviderError is a failed model call, classified the same way whichever
// client made it. The stream of a call that already started carries it as
// an error item; a call that failed before streaming returns it.
type ProviderError struct {
	StatusCode int           // HTTP status of a rejected request; 0 for network and in-stream errors
	Type       string        // the provider's error type, e.g. "rate_limit_error"
	Code       string        // the provider's error code, e.g. "rate_limit_exceeded"
	Message    string        // the provider's own message, truncated to about 300 characters
	Retryable  bool          // a new attempt may succeed (429, 408, 409, 5xx, network errors)
	RetryAfter time.Duration // from the Retry-After header; 0 when absent
	Truncated  bool          // the stream ended before the answer was complete
	Malformed  bool          // the provider sent a stream chunk that does not parse
	Host       string        // host:port of the provider, for messages; never carries credentials
	Err        error         // the underlying cause, if any
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString("model provider")
	if e.Host != "" {
		b.WriteString(" ")
		b.WriteString(e.Host)
	}
	switch {
	case e.StatusCode != 0:
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	case e.Truncated:
		b.WriteString(": stream broke off")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause, so errors.Is(err, context.Canceled) works.
func (e *ProviderError) Unwrap() error { return e.Err }

// IsRetryable reports whether err is a ProviderError a new attempt may fix.
func IsRetryable(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Retryable
}

// MidStream classifies an error that ended a stream after it had
// streamed output: the status its model_call.finished reports (timeout,
// malformed or failed), and whether a new attempt may succeed — a
// dropped connection, a stall past a deadline or a malformed chunk. A
// cancellation (a stop, the run's own deadline) and an error object the
// provider sent on purpose are final, except a timeout it reports.
func MidStream(err error) (status string, retry bool) {
	var pe *ProviderError
	if !errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return eventbus.ModelCallFailed, false
	}
	var ne net.Error
	switch {
	case pe.Malformed:
		return eventbus.ModelCallMalformed, true
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() ||
		strings.Contains(strings.ToLower(pe.Type+" "+pe.Code), "timeout"):
		return eventbus.ModelCallTimeout, true
	case pe.Truncated:
		return eventbus.ModelCallFailed, true
	}
	return eventbus.ModelCallFailed, false
}

// retryableStatus reports whether a request rejected with status may
// succeed when sent again.
func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		status == http.StatusConflict || status >= 500
}

// statusError builds the ProviderError of a rejected request from its
// status, headers and (already read, possibly partial) body.
func statusError(status int, header http.Header, body []byte, host string) *ProviderError {
	pe := &ProviderError{StatusCode: status, Host: host, Retryable: retryableStatus(status)}
	pe.Message, pe.Type, pe.Code = parseErrorBody(body)
	if header != nil {
		pe.RetryAfter = parseRetryAfter(header.Get("Retry-After"), time.Now())
	}
	if pe.Code == "insufficient_quota" { // OpenAI's billing 429: waiting does not help
		pe.Retryable = false
	}
	return pe
}

// streamError builds the ProviderError of an error object that arrived in
// the middle of a stream (HTTP status 200).
func streamError(message, typ, code, host string) *ProviderError {
	pe := &ProviderError{Message: truncateMessage(message), Type: typ, Code: code, Host: host}
	kind := strings.ToLower(typ + " " + code)
	for _, s := range []string{"server_error", "overloaded", "rate_limit", "timeout", "unavailable"} {
		if strings.Contains(kind, s) {
			pe.Retryable = true
		}
	}
	return pe
}

// networkError classifies a failure to get a response at all. Errors the
// caller caused by cancelling ctx are not retryable.
func networkError(ctx context.Context, err error, host string) *ProviderError {
	if ctx.Err() != nil {
		return &ProviderError{Host: host, Err: context.Cause(ctx)}
	}
	return &ProviderError{Host: host, Retryable: true, Err: err}
}

// truncatedError is the error of a stream that ended before it was
// complete. It is retryable only when nothing was streamed yet.
func truncatedError(ctx context.Context, cause error, streamed bool, host string) *ProviderError {
	if ctx.Err() != nil {
		return &ProviderError{Host: host, Err: context.Cause(ctx)}
	}
	return &ProviderError{Truncated: true, Retryable: !streamed, Host: host, Err: cause}
}

// parseErrorBody extracts message, type and code from the error bodies
// OpenAI-compatible servers send: {"error":{"message":..}}, {"error":".."},
// {"message":..} and {"detail":..}; else a short non-HTML body verbatim.
func parseErrorBody(body []byte) (message, typ, code string) {
	var d chunkDecoder
	if msg, t, c, ok := d.errorBody(body); ok {
		return truncateMessage(msg), t, c
	}
	text := strings.TrimSpace(string(body))
	if text == "" || text[0] == '<' || text[0] == '{' {
		return "", "", ""
	}
	return truncateMessage(text), "", ""
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

const maxMessageChars = 300

// truncateMessage shortens a provider message to about 300 characters
// and removes what looks like a credential. It never cuts inside a run of
// characters a key is made of (letters, digits, -_.~+/=): a key the
// provider echoed is then either whole, so the configured secrets'
// redactor recognises it later, or gone — never a recognisable prefix.
func truncateMessage(s string) string {
	s = redact(strings.TrimSpace(s))
	if utf8.RuneCountInString(s) <= maxMessageChars {
		return s
	}
	n, cut := 0, 0
	for i, r := range s {
		if n == maxMessageChars {
			if keyRune(r) { // s[i] continues a token: drop that token
				i = cut
			}
			return strings.TrimRightFunc(s[:i], unicode.IsSpace) + "…"
		}
		if !keyRune(r) {
			cut = i + utf8.RuneLen(r)
		}
		n++
	}
	return s
}

// keyRune reports whether r may be part of an API key or token.
func keyRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_.~+/=", r)
}

// redact removes secrets a provider may echo: API keys (sk-…, Bearer
// tokens, partially masked ones included) and URL userinfo and queries.
func redact(s string) string {
	if !strings.Contains(s, "sk-") && !strings.Contains(s, "Bearer ") && !strings.Contains(s, "://") {
		return s
	}
	words := strings.Fields(s)
	for i, w := range words {
		switch {
		case strings.HasPrefix(w, "sk-") || strings.Contains(w, ":sk-"):
			words[i] = "[redacted]"
		case i > 0 && words[i-1] == "Bearer":
			words[i] = "[redacted]"
		case strings.Contains(w, "://"):
			words[i] = redactURL(w)
		}
	}
	return strings.Join(words, " ")
}

// redactURL strips userinfo and query from a URL (keeping trailing
// punctuation); text that does not parse is dropped.
func redactURL(w string) string {
	end := len(w)
	for end > 0 && strings.IndexByte(".,;)]\"'", w[end-1]) >= 0 {
		end--
	}
	u, err := url.Parse(w[:end])
	if err != nil {
		return "[url]" + w[end:]
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String() + w[end:]
}

// hostOf returns host:port of a base URL (default port by scheme), for
// messages; it never includes userinfo.
func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// Describe turns a model call error into what the user sees: a stable
// code, a message written for the user (naming the model, never a secret)
// and whether trying again may help. Codes: canceled, timeout,
// rate_limited, provider_auth, provider_error, provider_unreachable,
// stream_truncated.
func Describe(err error, modelName string) (code, message string, retryable bool) {
	if err == nil {
		return "", "", false
	}
	if errors.Is(err, context.Canceled) {
		return "canceled", "The request was canceled.", false
	}
	var pe *ProviderError
	if !errors.As(err, &pe) {
		pe = &ProviderError{Err: err}
	}
	retryable = pe.Retryable
	switch {
	case pe.StatusCode == http.StatusTooManyRequests || isRateLimit(pe):
		msg := fmt.Sprintf("The model provider is rate-limiting requests for model %s", modelName)
		if pe.Code == "insufficient_quota" {
			msg = fmt.Sprintf("The model provider refused model %s: the account's quota is exhausted", modelName)
		} else if pe.RetryAfter > 0 {
			msg += fmt.Sprintf("; try again in %s", pe.RetryAfter.Round(time.Second))
		} else {
			msg += "; try again shortly"
		}
		return "rate_limited", msg + ".", retryable
	case pe.StatusCode == http.StatusUnauthorized || pe.StatusCode == http.StatusForbidden:
		return "provider_auth", fmt.Sprintf(
			"The model provider rejected the credentials for model %s; check models.%s.api_key.", modelName, modelName), false
	case pe.StatusCode != 0:
		msg := fmt.Sprintf("The model provider returned HTTP %d (%s) for model %s", pe.StatusCode,
			http.StatusText(pe.StatusCode), modelName)
		if pe.Message != "" {
			msg += ": " + pe.Message
		}
		return "provider_error", strings.TrimSuffix(msg, ".") + ".", retryable
	case isTimeout(pe.Err):
		return "timeout", fmt.Sprintf("The model provider for model %s did not respond in time.", modelName), retryable
	case pe.Truncated:
		return "stream_truncated", "The model provider's stream broke off before the answer was complete.", retryable
	}
	if addr, why, ok := unreachable(pe.Err, pe.Host); ok {
		return "provider_unreachable", fmt.Sprintf("Could not reach the model provider for model %s at %s (%s).",
			modelName, addr, why), retryable
	}
	if pe.Message != "" {
		return "provider_error", fmt.Sprintf("The model provider reported an error for model %s: %s",
			modelName, strings.TrimSuffix(pe.Message, ".")) + ".", retryable
	}
	return "provider_error", fmt.Sprintf("The call to the model provider for model %s failed.", modelName), retryable
}

func isRateLimit(pe *ProviderError) bool {
	return pe.StatusCode == 0 && (strings.Contains(pe.Type, "rate_limit") || strings.Contains(pe.Code, "rate_limit"))
}

func isTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrHeaderTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// unreachable recognises connection failures (refused, DNS, no route) and
// returns the address tried and a short reason.
func unreachable(err error, host string) (addr, why string, ok bool) {
	if err == nil {
		return "", "", false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		name := dnsErr.Name
		if host != "" {
			name = host
		}
		return name, "host name not found", true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		if host == "" && opErr.Addr != nil {
			host = opErr.Addr.String()
		}
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			why = "connection refused"
		case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
			why = "no route to host"
		default:
			why = "connection failed"
		}
		return host, why, true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return host, "connection refused", true
	}
	return "", "", false
}
