package config

import (
	"strings"

	"github.com/spf13/viper"
)

// DefaultSystemPrompt is the chat_completion_stream system prompt used when
// config.yaml sets none.
const DefaultSystemPrompt = "You are a helpful assistant. Answer clearly and concisely. " +
	"If you do not know the answer, say so instead of guessing."

// DefaultRAGPrompt is the chat_completion_stream rag_prompt used when
// config.yaml sets none: the last user message of a retrieval mode, with
// {context} replaced by the numbered passages and {question} by the
// (rewritten) question.
const DefaultRAGPrompt = "Answer the question using the numbered context passages below. " +
	"After each statement taken from a passage, cite it with its number in square brackets, like [1] or [1][3]. " +
	"Cite only numbers that appear in the context. " +
	"If the context does not answer the question, say that the knowledge base does not cover it; " +
	"you may then answer from general knowledge, without citations, and say so. " +
	"Answer in the language of the question.\n\n" +
	"Context:\n{context}\n\nQuestion: {question}"

// DefaultRewritePrompt is the rewrite plugin's prompt used when config.yaml
// sets none; {history} is the recent conversation and {question} the
// follow-up to make standalone.
const DefaultRewritePrompt = "Rewrite the latest question of the conversation below as one standalone question " +
	"that can be understood without the conversation: replace pronouns and references with what they refer to. " +
	"Keep the language of the question. If it is already standalone, repeat it unchanged. " +
	"Reply with the question only.\n\n" +
	"Conversation:\n{history}\n\nLatest question: {question}"

// DefaultFallbackText is the merge plugin's answer when nothing relevant
// is found and fallback is fixed.
const DefaultFallbackText = "I could not find anything about this in the knowledge base. " +
	"Try asking with other words, or add a document that covers it."

// DefaultRefusal is sensitive_filter's answer to a question a refuse list
// matches, used when config.yaml sets none.
const DefaultRefusal = "Sorry, I can't help with that question."

// DefaultStopMessage is the message of the content_filtered error with
// which sensitive_filter ends an answer a stop list matches.
const DefaultStopMessage = "The answer was stopped because it contained content that is not allowed."

// DefaultAgentPrompt is agent_loop's system prompt used when config.yaml
// sets none.
const DefaultAgentPrompt = "You are a helpful assistant that can use tools. " +
	"Search the knowledge base with knowledge_search before answering questions it may cover, " +
	"and search again with other words when the passages do not answer. " +
	"Cite the passages you use by their number in square brackets, like [1] or [1][3]; cite only numbers you were given. " +
	"When nothing relevant is found, say so; you may then answer from general knowledge, without citations. " +
	"Answer in the language of the question."

// DefaultAgentReminder is agent_loop's reminder, added at the end of the
// prompt of every model call after tools ran ({question} is the user's
// question), so a long run of tool output does not make the model lose
// the task.
const DefaultAgentReminder = "Reminder: answer the question \"{question}\" with what the tools found. " +
	"Cite the passages you use by their number, like [1]. Call a tool again only if you still need information."

// DefaultResearchPlanPrompt is research_plan's prompt used when
// config.yaml sets none: {question} is the research request, {min} and
// {max} bound the sub-questions, {clarify} is the clarify instruction
// when a clarifying question may be asked.
const DefaultResearchPlanPrompt = "Plan the research of the request below: break it into {min} to {max} " +
	"sub-questions that can each be researched on its own and together answer it. " +
	"Reply with the sub-questions only, one per line, numbered 1., 2., 3. {clarify}\n\n" +
	"Request: {question}"

// DefaultResearchClarifyInstruction replaces {clarify} in research_plan's
// prompt when it may ask back.
const DefaultResearchClarifyInstruction = "If the request is too ambiguous to research, reply instead with one line: " +
	"CLARIFY: followed by one short question that would remove the ambiguity."

// DefaultResearchSubPrompt is the question research_run's sub-researchers
// get: {question} is their sub-question, {request} the whole request.
const DefaultResearchSubPrompt = "You research one sub-question of the request \"{request}\".\n" +
	"Sub-question: {question}\n" +
	"Search the knowledge base, then answer the sub-question in a few sentences, citing the passages you use."

// DefaultResearchReportPrompt is research_report's prompt used when
// config.yaml sets none.
const DefaultResearchReportPrompt = "Write a research report that answers the request below from the findings " +
	"of the sub-researchers. Cite sources by their number in square brackets, like [1] or [1][3]; " +
	"cite only numbers listed under Sources. Where a sub-question has no findings, say what is missing.\n\n" +
	"Request: {question}\n\nFindings:\n{findings}\n\nSources:\n{sources}"

// DefaultResearchMissingNote ends a research report when sub-researchers
// failed; {questions} lists their sub-questions and why.
const DefaultResearchMissingNote = "Not covered, because its research failed: {questions}."

// builtinDefaults is the configuration chatpipe runs on with no config.yaml,
// written as the YAML would be. It is rebuilt on every call so that no two
// snapshots share a slice or map. config.yaml at the repository root must
// say the same thing (TestRepoConfigYAMLMatchesBuiltinDefaults).
func builtinDefaults() map[string]any {
	return map[string]any{
		"server": map[string]any{
			"addr":                "127.0.0.1:8080",
			"read_header_timeout": "10s",
			"write_timeout":       "30s",
			"shutdown_grace":      "20s",
			"body_read_timeout":   "30s",
			"trusted_proxies":     []any{},
			"pprof":               false,
		},
		"log": map[string]any{
			"level":  "info",
			"format": "json",
		},
		"limits": map[string]any{
			"max_body_bytes":         1 << 20,
			"max_question_chars":     8000,
			"max_title_chars":        200,
			"max_concurrent_streams": 0,
			"rate_per_second":        0.0,
			"rate_burst":             20,
			"failed_auth_per_minute": 20,
		},
		"stream": map[string]any{
			"heartbeat":             "15s",
			"max_events":            20000,
			"max_bytes":             8 << 20,
			"retention":             "10m",
			"max_duration":          "10m",
			"memory_max_bytes":      0,
			"partial_save_deltas":   32,
			"partial_save_interval": "1s",
		},
		"stream_store": "memory",
		"storage": map[string]any{
			"driver": "sqlite",
			"sqlite": map[string]any{"path": "./data/chatpipe.db"},
		},
		"knowledge": map[string]any{
			"sample_docs":      true,
			"max_upload_bytes": 2 << 20,
			"max_file_bytes":   50 << 20,
			"chunking": map[string]any{
				"target_tokens":  300,
				"overlap_tokens": 40,
			},
			"embedding": map[string]any{
				"provider":   "",
				"base_url":   "",
				"model":      "",
				"api_key":    "",
				"dimensions": 0,
				"batch_size": 32,
				"timeout":    "30s",
			},
			"search": map[string]any{
				"top_k":            20,
				"keyword_weight":   1.0,
				"vector_weight":    0.04,
				"rrf_k":            5,
				"lead_weight":      0.0,
				"name_weight":      2.0,
				"synonym_weight":   0.5,
				"builtin_synonyms": true,
				"synonyms_file":    "",
			},
			"ingest": map[string]any{
				"workers":          2,
				"queue":            16,
				"background_bytes": 256 << 10,
				"stale_after":      "1m",
				"max_attempts":     3,
			},
		},
		"cors": map[string]any{
			"allowed_origins": []any{},
			"max_age":         "10m",
		},
		"metrics": map[string]any{
			"enabled": true,
			"path":    "/metrics",
		},
		"telemetry": map[string]any{
			"traces": map[string]any{
				"enabled":        false,
				"protocol":       "",
				"endpoint":       "",
				"headers":        map[string]any{},
				"sampling_ratio": 1.0,
				"service_name":   "chatpipe",
				"timeout":        "10s",
			},
			"capture_content": false,
			"inspector": map[string]any{
				"enabled":        true,
				"max_bytes":      256 << 10,
				"retention":      "720h",
				"disabled_modes": []any{},
			},
		},
		"redis": map[string]any{
			"addr":         "127.0.0.1:6379",
			"password":     "",
			"db":           0,
			"key_prefix":   "chatpipe:",
			"live_ttl":     "30m",
			"finished_ttl": "10m",
			"lease_ttl":    "10s",
			"queue_size":   4096,
		},
		"postgres": map[string]any{
			"dsn":            "",
			"max_conns":      16,
			"pgvector":       "auto",
			"hnsw_ef_search": 100,
		},
		"auth": map[string]any{
			"keys":       []any{},
			"allow_open": false,
		},
		"mcp": map[string]any{
			"server": map[string]any{
				"enabled":          true,
				"read_only":        false,
				"max_result_chars": 20000,
			},
			"servers": []any{},
		},
		"titles": map[string]any{
			"enabled":   true,
			"model":     "",
			"prompt":    DefaultTitlePrompt,
			"max_chars": 60,
			"timeout":   "20s",
		},
		"background": map[string]any{
			"max_jobs":    16,
			"stream_wait": "3s",
		},
		"models": map[string]any{
			"default": map[string]any{
				"provider":    "demo",
				"chunk_delay": "30ms",
			},
		},
		"default_mode": "rag",
		"pipelines": map[string]any{
			"rag":      []any{"load_history", "rewrite", "search", "rerank", "merge", "chat_completion_stream"},
			"chat":     []any{"load_history", "chat_completion_stream"},
			"agent":    []any{"load_history", "agent_loop"},
			"research": []any{"load_history", "research_plan", "research_run", "research_report"},
		},
		"plugins": map[string]any{
			"load_history": map[string]any{
				"max_rounds": 5,
				"max_tokens": 3000,
				"tool_calls": false,
				"compaction": map[string]any{
					"enabled":       true,
					"model":         "",
					"budget_tokens": 0,
					"keep_rounds":   2,
					"timeout":       "60s",
					"prompt":        DefaultCompactionPrompt,
				},
			},
			"rewrite": map[string]any{
				"model":       "default",
				"max_history": 6,
				"timeout":     "10s",
				"prompt":      DefaultRewritePrompt,
			},
			"search": map[string]any{
				"top_k":          0,
				"keyword_weight": 0.0,
				"vector_weight":  0.0,
				"rrf_k":          0,
			},
			"rerank": map[string]any{
				"reranker":        "score",
				"top_k":           6,
				"threshold":       0.2,
				"min_keep":        2,
				"lambda":          1.0,
				"timeout":         "10s",
				"remote_base_url": "",
				"remote_model":    "",
				"remote_api_key":  "",
				"llm_model":       "default",
			},
			"merge": map[string]any{
				"max_context_tokens": 2500,
				"fallback":           "model",
				"fallback_text":      DefaultFallbackText,
			},
			"chat_completion_stream": map[string]any{
				"model":         "default",
				"think_tags":    true,
				"system_prompt": DefaultSystemPrompt,
				"rag_prompt":    DefaultRAGPrompt,
			},
			"sensitive_filter": map[string]any{
				"lists":        []any{},
				"refusal":      DefaultRefusal,
				"stop_message": DefaultStopMessage,
				"max_hold":     64,
			},
			"response_cache": map[string]any{
				"ttl":             "1h",
				"max_entry_bytes": 256 << 10,
				"max_bytes":       64 << 20,
				"follow_ups":      false,
			},
			"agent_loop": map[string]any{
				"model":            "default",
				"think_tags":       true,
				"system_prompt":    DefaultAgentPrompt,
				"max_cycles":       6,
				"force_tool":       "",
				"tool_timeout":     "30s",
				"approval_timeout": "5m",
				"max_result_chars": 20000,
				"max_tool_context": 60000,
				"reminder":         DefaultAgentReminder,
				"text_tool_calls":  true,
				"tools":            []any{"knowledge_search", "fetch_document"},
			},
			"research_plan": map[string]any{
				"model":                "default",
				"think_tags":           true,
				"prompt":               DefaultResearchPlanPrompt,
				"min_questions":        3,
				"max_questions":        6,
				"clarify":              false,
				"clarify_instruction":  DefaultResearchClarifyInstruction,
				"clarification_prefix": "Before I research this: ",
			},
			"research_run": map[string]any{
				"width":      3,
				"max_tokens": 4000,
				"timeout":    "2m",
				"prompt":     DefaultResearchSubPrompt,
				"agent":      map[string]any{"max_cycles": 4},
			},
			"research_report": map[string]any{
				"model":               "default",
				"think_tags":          true,
				"system_prompt":       DefaultSystemPrompt,
				"prompt":              DefaultResearchReportPrompt,
				"max_findings_tokens": 3000,
				"missing_note":        DefaultResearchMissingNote,
			},
		},
	}
}

// replacedSections are the map-keyed sections a config file replaces as a
// whole: a file that lists its own models does not silently keep the
// built-in demo model, and a file that lists its own modes does not keep
// the built-in chat mode. Every other section, plugins included, merges key
// by key with the defaults.
var replacedSections = []string{"models", "pipelines"}

// setDefaults registers every built-in default with v, leaving out the
// replaced sections that file (the parsed config file, nil for none)
// defines itself. Registering each leaf is what lets CHATPIPE_* variables
// reach Unmarshal for keys the file does not mention.
func setDefaults(v *viper.Viper, defaults, file map[string]any) {
	for _, section := range replacedSections {
		if _, ok := lookupFold(file, section); ok {
			delete(defaults, section)
		}
	}
	for key, val := range flatten(defaults, "") {
		v.SetDefault(key, val)
	}
}

// flatten turns nested maps into dotted keys; lists and scalars are leaves.
func flatten(m map[string]any, prefix string) map[string]any {
	out := map[string]any{}
	for k, val := range m {
		key := strings.ToLower(prefix + k)
		if sub, ok := val.(map[string]any); ok && len(sub) > 0 {
			for sk, sv := range flatten(sub, key+".") {
				out[sk] = sv
			}
			continue
		}
		out[key] = val
	}
	return out
}

// lookupFold finds key in m ignoring case, as viper does.
func lookupFold(m map[string]any, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// lookupPath follows a dotted key through nested maps, ignoring case.
func lookupPath(m map[string]any, key string) (any, bool) {
	parts := strings.Split(key, ".")
	var cur any = m
	for _, p := range parts {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = lookupFold(mm, p); !ok {
			return nil, false
		}
	}
	return cur, true
}
