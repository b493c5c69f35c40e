package handler

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/internal/history"
)

// tree is a session's messages as the tree they form, for the messages
// API: branches, siblings and the leaf a message stands for.
type tree struct {
	all      []history.Message // in creation order
	byID     map[string]history.Message
	children map[string][]string // by parent ID ("" = the roots), oldest first
}

func newTree(msgs []history.Message) *tree {
	t := &tree{all: msgs, byID: make(map[string]history.Message, len(msgs)), children: map[string][]string{}}
	for _, m := range msgs { // in creation order, so children are oldest first
		t.byID[m.ID] = m
		t.children[m.ParentID] = append(t.children[m.ParentID], m.ID)
	}
	return t
}

// leafOf is the leaf a message stands for: itself when nothing follows
// it, else the end of its newest line of replies — what a branch switcher
// showing this version means.
func (t *tree) leafOf(id string) string {
	for {
		kids := t.children[id]
		if len(kids) == 0 {
			return id
		}
		id = kids[len(kids)-1]
	}
}

// branch lists the messages from the root down to leaf.
func (t *tree) branch(leaf string) []history.Message {
	var out []history.Message
	for id := leaf; id != ""; id = t.byID[id].ParentID {
		m, ok := t.byID[id]
		if !ok {
			break
		}
		out = append(out, m)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// json shows m with its siblings.
func (t *tree) json(m history.Message) MessageJSON {
	out := messageJSON(m)
	out.SiblingIDs = append([]string(nil), t.children[m.ParentID]...)
	return out
}

// loadTree reads the session's messages, answering 500 itself on failure.
func (h *Handler) loadTree(c *gin.Context, sessionID string) (*tree, bool) {
	msgs, err := h.deps.History.ListMessages(c.Request.Context(), sessionID)
	if err != nil {
		h.internal(c, "list messages", err)
		return nil, false
	}
	return newTree(msgs), true
}

// messageNotFound answers 404 for a message the caller cannot see.
func messageNotFound(c *gin.Context, field, id string) {
	abort(c, http.StatusNotFound, "message_not_found", "No message with id "+strconv.Quote(id)+" in this session"+
		field+".")
}

// listMessages returns the session's current branch, root to leaf; with
// ?leaf= the branch of that message (continued by its newest replies);
// with ?all=true every message of every branch, in creation order.
func (h *Handler) listMessages(c *gin.Context) {
	s, ok := h.session(c)
	if !ok {
		return
	}
	t, ok := h.loadTree(c, s.ID)
	if !ok {
		return
	}
	var msgs []history.Message
	switch leaf, byLeaf := c.GetQuery("leaf"); {
	case c.Query("all") == "true":
		msgs = t.all
	case byLeaf:
		if _, ok := t.byID[leaf]; !ok {
			messageNotFound(c, " (query parameter \"leaf\")", leaf)
			return
		}
		msgs = t.branch(t.leafOf(leaf))
	case s.CurrentLeaf != "":
		msgs = t.branch(t.leafOf(s.CurrentLeaf))
	}
	out := make([]MessageJSON, len(msgs))
	for i, m := range msgs {
		out[i] = t.json(m)
	}
	if err := h.attachFeedback(c, out); err != nil {
		h.internal(c, "read feedback", err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"messages": out})
}

type patchSessionRequest struct {
	Title       *string `json:"title"`
	Mode        *string `json:"mode"`
	CurrentLeaf *string `json:"current_leaf"`
}

// patchSession renames a session, changes its mode or switches its
// current branch; every field is checked before any is saved.
func (h *Handler) patchSession(c *gin.Context) {
	s, ok := h.session(c)
	if !ok {
		return
	}
	var req patchSessionRequest
	if rerr := decodeJSON(c, h.cfg().Limits.MaxBodyBytes, &req, false); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	if req.Title == nil && req.Mode == nil && req.CurrentLeaf == nil {
		abort(c, http.StatusBadRequest, "nothing_to_change", `Send "title", "mode" or "current_leaf" to change.`)
		return
	}
	var title string
	if req.Title != nil {
		if title = strings.TrimSpace(*req.Title); title == "" {
			abort(c, http.StatusBadRequest, "empty_title", "The title is empty; send the new title in \"title\".")
			return
		}
		if !h.checkTitle(c, title) {
			return
		}
	}
	if req.Mode != nil && !h.knownMode(*req.Mode) {
		abort(c, http.StatusBadRequest, "unknown_mode", h.unknownModeMessage(*req.Mode))
		return
	}
	var leaf string
	if req.CurrentLeaf != nil {
		t, ok := h.loadTree(c, s.ID)
		if !ok {
			return
		}
		if _, ok := t.byID[*req.CurrentLeaf]; !ok {
			messageNotFound(c, ` ("current_leaf")`, *req.CurrentLeaf)
			return
		}
		leaf = t.leafOf(*req.CurrentLeaf)
	}

	ctx := c.Request.Context()
	var err error
	if req.Title != nil {
		err = h.deps.History.RenameSession(ctx, s.ID, title)
	}
	if err == nil && req.Mode != nil {
		err = h.deps.History.SetSessionMode(ctx, s.ID, *req.Mode)
	}
	if err == nil && leaf != "" {
		err = h.deps.History.SetCurrentLeaf(ctx, s.ID, leaf)
	}
	if err == nil {
		s, err = h.deps.History.GetSession(ctx, s.ID)
	}
	if errors.Is(err, history.ErrNotFound) { // deleted meanwhile
		abort(c, http.StatusNotFound, "session_not_found", "No session with id "+strconv.Quote(s.ID)+".")
		return
	}
	if err != nil {
		h.internal(c, "update session", err)
		return
	}
	c.JSON(http.StatusOK, sessionJSON(s))
}

// savedMessage is a finished message as the messages API shows it, with
// its siblings; ok is false when it is not in the history store (a
// stateless answer) or cannot be read.
func (h *Handler) savedMessage(c *gin.Context, id string) (MessageJSON, bool) {
	m, err := h.deps.History.GetMessage(c.Request.Context(), id)
	if err != nil {
		return MessageJSON{}, false
	}
	msgs, err := h.deps.History.ListMessages(c.Request.Context(), m.SessionID)
	if err != nil {
		return MessageJSON{}, false
	}
	return newTree(msgs).json(m), true
}
