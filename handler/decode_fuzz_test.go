package handler

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// FuzzRequestDecoders feeds arbitrary bodies to every JSON request
// decoder: none may panic, and every rejection is a 4xx with a message.
func FuzzRequestDecoders(f *testing.F) {
	for _, seed := range []string{
		`{"title":"t","mode":"rag"}`, `{"content":"q","stream":false}`, `{"query":"x","top_k":3}`,
		`{"messages":[{"role":"user","content":"hi"}]}`, `{"title":`, `[]`, `null`, `{"content":"\u0000"}`,
		`{"stream":"yes"}`, `{} {}`, "\xff\xfe", `{"top_k":1e309}`,
	} {
		f.Add([]byte(seed))
	}
	gin.SetMode(gin.ReleaseMode)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, target := range []any{
			&createSessionRequest{}, &postMessageRequest{}, &addDocumentRequest{}, &searchRequest{},
		} {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest("POST", "/", bytes.NewReader(body))
			if rerr := decodeJSON(c, 1<<16, target, false); rerr != nil {
				if rerr.status < 400 || rerr.status > 499 || rerr.code == "" || rerr.message == "" {
					t.Fatalf("%T: rejection %+v", target, rerr)
				}
			}
		}
	})
}
