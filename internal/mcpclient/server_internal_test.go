package mcpclient

import (
	"testing"
	"time"
)

func TestServerBoundsAndListsApplyPerTool(t *testing.T) {
	t.Parallel()
	s := Server{Name: "files", Tools: []string{"read", "write"}, RequireApproval: []string{"write"},
		ToolTimeouts: map[string]time.Duration{"Write": time.Minute}}.withDefaults()
	if s.Timeout != DefaultCallTimeout || s.ConnectTimeout != DefaultConnectTimeout || s.MaxResultChars != DefaultResultChars {
		t.Errorf("defaults not applied: %+v", s)
	}
	if !s.allows("read") || s.allows("delete") {
		t.Error("the allow-list is not applied")
	}
	if !(Server{}).allows("anything") {
		t.Error("an empty allow-list refuses a tool")
	}
	if s.needsApproval("read") || !s.needsApproval("write") || !(Server{RequireApproval: []string{"*"}}).needsApproval("read") {
		t.Error("require_approval is not applied")
	}
	if got := s.callTimeout("write"); got != time.Minute {
		t.Errorf("callTimeout(write) = %v; a tool timeout's name is matched without regard to case", got)
	}
	if got := s.callTimeout("read"); got != DefaultCallTimeout {
		t.Errorf("callTimeout(read) = %v, want the server's timeout", got)
	}
}
