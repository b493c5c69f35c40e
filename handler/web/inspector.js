// The turn inspector's side panel: "Why this answer?" on every finished
// answer opens what each stage did for it — the rewritten question, the
// candidates with their keyword, vector and fused scores, what rerank kept
// and why, the numbered context, the prompt as sent, model and tool calls
// (GET /api/v1/messages/{id}/trace). It watches the message list, so the
// rest of the page needs no hook beyond loading this file.
(function (global) {
  'use strict';

  var C = global.Chatpipe;
  var panel = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function num(x, digits) {
    if (typeof x !== 'number') return '';
    if (x === 0) return '0';
    return Math.abs(x) < 0.001 ? x.toExponential(2) : x.toFixed(digits === undefined ? 3 : digits);
  }

  function table(head, rows) {
    var t = el('table', 'insp-table');
    var tr = el('tr');
    head.forEach(function (h) { tr.append(el('th', '', h)); });
    var thead = el('thead');
    thead.append(tr);
    var tbody = el('tbody');
    rows.forEach(function (r) {
      var row = el('tr');
      r.forEach(function (c) { row.append(el('td', '', c)); });
      tbody.append(row);
    });
    t.append(thead, tbody);
    return t;
  }

  function section(body, title, content) {
    var s = el('section', 'insp-section');
    s.dataset.section = title.toLowerCase().replace(/[^a-z]+/g, '-');
    s.append(el('h3', '', title));
    content.forEach(function (c) { s.append(c); });
    body.append(s);
  }

  function ensurePanel() {
    if (panel) return panel;
    panel = el('aside', 'inspector');
    panel.id = 'inspector';
    panel.setAttribute('aria-label', 'Why this answer?');
    panel.hidden = true;
    var head = el('div', 'insp-head');
    head.append(el('h2', '', 'Why this answer?'));
    var close = el('button', 'icon-btn insp-close', '×');
    close.type = 'button';
    close.setAttribute('aria-label', 'Close');
    close.addEventListener('click', function () { panel.hidden = true; });
    head.append(close);
    panel.body = el('div', 'insp-body');
    panel.append(head, panel.body);
    document.body.append(panel);
    document.addEventListener('keydown', function (e) { if (e.key === 'Escape') panel.hidden = true; });
    return panel;
  }

  function render(t) {
    var body = panel.body;
    body.textContent = '';
    var meta = [t.mode + ' mode', t.status];
    if (t.trace_id) meta.push('trace ' + t.trace_id);
    body.append(el('p', 'muted insp-meta', meta.join(' · ')));
    if (t.truncated) body.append(el('p', 'insp-note', 'Shortened: ' + (t.truncated_note || 'the record was too large.')));

    section(body, 'Stages', [table(['stage', 'plugin', 'status', 'ms', 'detail'], (t.stages || []).map(function (s) {
      return [s.name, s.plugin || '', s.status, s.elapsed_ms, s.detail || ''];
    }))]);
    if (t.rewrite) {
      section(body, 'Rewritten question', [el('p', '', t.rewrite.original), el('p', 'insp-arrow', '→ ' + t.rewrite.rewritten)]);
    }
    if (t.search) {
      var s = t.search;
      var note = 'Searched for “' + s.query + '”' + (s.method ? ' (' + s.method + ')' : '') + (s.degraded ? '; ' + s.degraded : '');
      section(body, 'Candidates', [el('p', 'muted', note), table(['#', 'document', 'keyword', 'vector', 'fused'],
        (s.candidates || []).map(function (c, i) {
          return [i + 1, (c.title || c.document_id) + (c.heading ? ' · ' + c.heading : ''),
            num(c.keyword_score) + (c.keyword_rank ? ' (#' + c.keyword_rank + ')' : ''),
            num(c.vector_score) + (c.vector_rank ? ' (#' + c.vector_rank + ')' : ''), num(c.fused_score, 4)];
        }))]);
    }
    if (t.rerank) {
      var kept = el('ol');
      (t.rerank.kept || []).forEach(function (k) { kept.append(el('li', '', (k.title || k.chunk_id) + ' — ' + num(k.score, 2))); });
      var parts = [el('p', '', t.rerank.reason || 'kept in order')];
      parts.push(kept);
      if (t.rerank.dropped && t.rerank.dropped.length) parts.push(el('p', 'muted', t.rerank.dropped.length + ' candidate(s) dropped'));
      section(body, 'Rerank', parts);
    }
    if (t.context && t.context.length) {
      section(body, 'Context', t.context.map(function (p) {
        var d = el('details');
        d.append(el('summary', '', '[' + p.index + '] ' + (p.title || p.chunk_id) + (p.heading ? ' · ' + p.heading : '')),
          el('p', 'passage', p.content));
        return d;
      }));
    }
    if (t.prompt && t.prompt.length) {
      section(body, 'Prompt', t.prompt.map(function (m) {
        var d = el('details');
        d.append(el('summary', '', m.role + (m.tool_call_id ? ' (' + m.tool_call_id + ')' : '')), el('pre', 'insp-pre', m.content || ''));
        return d;
      }));
    }
    section(body, 'Model calls', [table(['purpose', 'model', 'ms', 'first token', 'tokens in → out', 'status'],
      (t.model_calls || []).map(function (m) {
        return [m.purpose, m.model + (m.entry && m.entry !== m.model ? ' (' + m.entry + ')' : ''), m.duration_ms,
          m.ttft_ms ? m.ttft_ms + ' ms' : '', m.input_tokens + ' → ' + m.output_tokens + (m.usage_estimated ? ' (estimated)' : ''),
          m.status + (m.error ? ': ' + m.error : '')];
      }))]);
    if (t.tool_calls && t.tool_calls.length) {
      section(body, 'Tool calls', t.tool_calls.map(function (c) {
        var d = el('details');
        d.append(el('summary', '', c.name + ' — ' + (c.status || '')), el('pre', 'insp-pre', c.arguments || ''), el('pre', 'insp-pre', c.output || ''));
        return d;
      }));
    }
  }

  async function open(id) {
    ensurePanel();
    panel.hidden = false;
    panel.body.textContent = '';
    panel.body.append(el('p', 'muted', 'Loading…'));
    try {
      render(await C.api('GET', '/api/v1/messages/' + encodeURIComponent(id) + '/trace'));
    } catch (e) {
      panel.body.textContent = '';
      panel.body.append(el('p', 'insp-note', e.message || 'The record could not be loaded.'));
    }
  }

  // addButton gives a finished answer its "Why this answer?" button.
  function addButton(article) {
    var id = article.dataset.id;
    if (!id || article.dataset.status === 'streaming' || article.querySelector(':scope > .why')) return;
    var b = el('button', 'why', 'Why this answer?');
    b.type = 'button';
    b.addEventListener('click', function () { open(article.dataset.id); });
    article.append(b);
  }

  function scan(root) {
    root.querySelectorAll('article.msg.assistant[data-id]').forEach(addButton);
  }

  document.addEventListener('DOMContentLoaded', function () {
    var list = document.getElementById('messages');
    if (!list) return;
    scan(list);
    new MutationObserver(function () { scan(list); })
      .observe(list, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-status', 'data-id'] });
  });

  C.inspect = open;
})(window);
